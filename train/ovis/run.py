"""One Ovis LoRA run (family.kind=ovis): Ovis2.5 (`AIDC-AI/Ovis2.5-2B` / `-9B`, remote code, loaded only
with family.trust_remote_code=true) or a native Ovis2 checkpoint (the tiny one in the tests), on a vision
dataset (python -m data_gen.vision -> data/vision).

  LoRA     family.lora_targets: anchored regexes over the LLM's layers (native Ovis2's
           `model.language_model.layers.N.` and Ovis2.5's `llm.model.layers.N.`); family.vision_lora_targets
           adds the vision tower's layers (empty: frozen); family.train_visual_embeddings trains the visual
           embedding table in full (peft modules_to_save).
  loss     the model's own causal LM loss over labels that cover assistant text only (train/ovis/data.py).
Output folder as for the text families: adapter/ (+ tokenizer), checkpoints/, config.yaml, metrics.json.
"""

from __future__ import annotations

import os
from typing import Any

from runtime.precision import bf16_autocast_allowed
from toolcore.errors import ToolkitError
from toolcore.files import folder_written_atomically
from toolcore.hub import resolve_model_path

from ..config import TrainConfig
from ..run import fit, prepare_run, write_run_files
from .data import OvisCollator

VTE_NAMES = ("visual_embeddings_table", "vte")


def lora_config(cfg: TrainConfig, model: Any):
    from peft import LoraConfig

    targets = cfg.family.lora_targets
    if cfg.family.vision_lora_targets:
        targets = f"(?:{targets})|(?:{cfg.family.vision_lora_targets})"
    save = [n.rsplit(".", 1)[-1] for n, _ in model.named_modules() if n.rsplit(".", 1)[-1] in VTE_NAMES] \
        if cfg.family.train_visual_embeddings else None
    return LoraConfig(r=cfg.lora.r, lora_alpha=cfg.lora.alpha, lora_dropout=cfg.lora.dropout,
                      target_modules=targets, modules_to_save=sorted(set(save)) if save else None)


def load_vision_split(path: str, split: str, limit: int | None, seed: int):
    from toolcore.suites import load_split

    ds = load_split(path, split, field="data.path")
    if "crops" not in ds.column_names:
        raise ToolkitError("not a vision dataset (no crops column)", file=path, field="data.path",
                           fix="build one with python -m data_gen.vision (make data)")
    ds = ds.shuffle(seed=seed)
    return ds.select(range(min(limit, len(ds)))) if limit else ds


def train(cfg: TrainConfig, *, extra_callbacks: list | None = None) -> dict[str, Any]:
    import torch
    from peft import get_peft_model
    from transformers import Trainer, TrainingArguments, set_seed

    from runtime.ovis.adapter import adapter_for, load_ovis

    t = cfg.training
    out, data_hash = prepare_run(cfg)
    model, tok = load_ovis(resolve_model_path(cfg.family.path), dtype=cfg.family.dtype,
                           trust_remote_code=cfg.family.trust_remote_code)
    adapter = adapter_for(model, tok)
    train_ds = load_vision_split(cfg.data.path, "train", cfg.data.train_examples, cfg.data.shuffle_seed)
    set_seed(t.seed)       # LoRA's A matrices come from the global RNG
    model = get_peft_model(model, lora_config(cfg, model))
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    if not names:
        raise ToolkitError("LoRA matched no module", field="family.lora_targets",
                           fix=r"anchor the regex on the LLM layers, e.g. .*language_model\.layers\.\d+\.self_attn\.q_proj")
    cuda = torch.cuda.is_available()
    collator = OvisCollator(tok, adapter, cfg.data.max_length, describe_trained=cfg.family.describe_trained)
    args = TrainingArguments(
        output_dir=str(out / "checkpoints"), per_device_train_batch_size=t.batch_size,
        gradient_accumulation_steps=t.grad_accum, learning_rate=t.learning_rate, num_train_epochs=t.epochs,
        max_steps=t.max_steps, lr_scheduler_type=t.lr_scheduler, warmup_steps=t.warmup_ratio,
        weight_decay=t.weight_decay, logging_steps=t.logging_steps, seed=t.seed, data_seed=t.seed,
        eval_strategy="no", save_strategy="steps", save_steps=t.eval_every or 500,
        save_total_limit=t.save_total_limit, report_to=[] if cfg.wandb_mode == "disabled" else ["wandb"],
        remove_unused_columns=False, use_cpu=not cuda,
        ddp_backend="gloo" if not cuda and int(os.environ.get("WORLD_SIZE", "1")) > 1 else None,
        ddp_find_unused_parameters=False, activation_checkpointing=t.gradient_checkpointing,
        bf16=bf16_autocast_allowed(t.bf16_autocast, "cuda" if cuda else "cpu", "training")
        or (cfg.family.dtype in ("bfloat16", "auto") and cuda), dataloader_num_workers=0,
    )
    trainer = Trainer(model=model, args=args, train_dataset=train_ds, data_collator=collator,
                      callbacks=extra_callbacks or [])
    trainer.f1_history = []   # fit() records it; ovis runs are scored by the crop loop in python -m eval
    seconds, facts = fit(trainer, cfg, out, evaluating=False)
    metrics: dict[str, Any] = {}
    if trainer.is_world_process_zero():
        adapter_dir = out / "adapter"
        with folder_written_atomically(adapter_dir) as tmp:   # a crash never leaves an adapter that looks complete
            trainer.model.save_pretrained(str(tmp))
            tok.save_pretrained(str(tmp))
        metrics = {"family": cfg.family.name, "base_model": cfg.family.path, "dataset": cfg.data.path,
                   "dataset_manifest_sha256_16": data_hash, "adapter_kind": adapter.kind,
                   "lora_modules": len({n.split(".lora_")[0] for n in names if ".lora_" in n}),
                   "trainable_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
                   "adapter_bytes": sum(p.stat().st_size for p in adapter_dir.glob("adapter_model.*")),
                   "train_examples": len(train_ds), "dropped_too_long": collator.dropped, **facts}
        write_run_files(out, cfg, metrics)
    return metrics
