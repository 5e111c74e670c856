"""One training run: model + tool tokens + LoRA (or every weight) -> Trainer -> adapter (or model) folder.

Output folder (one config per folder, never a mix):
  run.json          the config fingerprint (every key that changes the result, and the dataset's
                    manifest hash) and its hash; written atomically before the first checkpoint
  adapter/          the LoRA adapter (safetensors; the kept checkpoint) and its tokenizer
  model/            with training.method=full instead of adapter/: the whole fine-tuned model, its
                    tokenizer and its format's chat template (loads with model.path=<run>/model)
  checkpoints/      Trainer checkpoints (resumed from automatically, only when run.json matches)
  config.yaml       the exact resolved config (written at the start and again at the end)
  metrics.json      losses, F1 history, tokens/s, adapter size, dataset manifest hash, new tool tokens

A folder never holds runs of two configs: see run_folder.py.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from toolcore.chat_template import attach_chat_template
from toolcore.errors import ToolkitError
from toolcore.extras import wandb_mode
from toolcore.files import folder_written_atomically, write_text_atomic
from toolcore.formats import get_format
from toolcore.hub import load_causal_lm, load_tokenizer, resolve_dtype_name, resolve_model_path
from runtime.precision import bf16_autocast_allowed
from toolcore.run_record import write_family_record

from .config import TrainConfig
from .budget import CALIBRATION_BATCHES, BudgetGuard, check_budget, seconds_per_token, steps_within
from .data import Collator, data_hash, eval_cases, tokenize_split
from .run_folder import claim_run_folder, job_output_dir, latest_checkpoint, write_config
from .tokens import add_tool_tokens, rows_apart


def embedding_module_name(model: Any) -> str:
    emb = model.get_input_embeddings()
    return next(name.rsplit(".", 1)[-1] for name, m in model.named_modules() if m is emb)


def lora_config(cfg: TrainConfig, model: Any, new_ids: list[int]):
    from peft import LoraConfig

    top = top_layer_indices(cfg, model)
    targets = cfg.family.lora_targets
    if top and targets == "all-linear":        # peft takes layers_to_transform with named modules only
        targets = sorted({name.rsplit(".", 1)[-1] for name, m in model.get_decoder().layers[0].named_modules()
                          if type(m).__name__ == "Linear"})
    return LoraConfig(r=cfg.lora.r, lora_alpha=cfg.lora.alpha, lora_dropout=cfg.lora.dropout,
                      target_modules=targets, task_type="CAUSAL_LM",
                      layers_to_transform=top, layers_pattern="layers" if top else None,
                      trainable_token_indices={embedding_module_name(model): new_ids} if new_ids else None)


def add_lora(cfg: TrainConfig, model: Any, new_ids: list[int]) -> Any:
    """`model` with LoRA as `cfg.lora` says; with `lora.top_layers`, the backward pass stops below them."""
    import torch
    from peft import get_peft_model

    top = top_layer_indices(cfg, model)
    model = get_peft_model(model, lora_config(cfg, model, new_ids))
    rows_apart(model)
    if next(p for p in model.parameters() if not p.requires_grad).dtype == torch.float32:
        # peft casts each LoRA input to the adapter's float32 first; under bf16 autocast a bf16 input (the
        # MLP's down projection) was cast up and straight back down in every layer. With float32 weights
        # outside autocast every input is float32 already, so the cast only ever cost time
        for m in model.modules():
            if hasattr(m, "cast_input_dtype_enabled"):
                m.cast_input_dtype_enabled = False
    if top:
        stop_gradient_below(model, top[0])
    return model


def top_layer_indices(cfg: TrainConfig, model: Any) -> list[int] | None:
    """The decoder layers `lora.top_layers` names (None: all of them)."""
    if cfg.lora.top_layers is None:
        return None
    n = model.config.num_hidden_layers
    if cfg.lora.top_layers > n:
        raise ToolkitError(f"lora.top_layers={cfg.lora.top_layers} but {cfg.family.path} has {n} decoder layers",
                           field="lora.top_layers", fix=f"a value from 1 to {n}, or null for all")
    return list(range(n - cfg.lora.top_layers, n))


def stop_gradient_below(model: Any, first: int) -> None:
    """Nothing below decoder layer `first` trains: its input is detached, so backward stops there."""
    layer = model.get_decoder().layers[first]

    def detach(module, args, kwargs):
        if args:
            return (args[0].detach(), *args[1:]), kwargs
        return args, {**kwargs, "hidden_states": kwargs["hidden_states"].detach()}

    layer.register_forward_pre_hook(detach, with_kwargs=True)


def prepare_run(cfg: TrainConfig) -> tuple[Path, str]:
    """What every training path does first: threads, seed, output folder (a multirun job's own one:
    cfg.output_dir is updated), the run folder check and its run.json, W&B settings, the dataset's
    manifest hash. Returns (output folder, manifest hash)."""
    import torch
    from transformers import set_seed

    cfg.wandb_mode = wandb_mode(cfg.wandb_mode, "training")   # logging only: not part of the run's fingerprint
    if cfg.training.threads:
        torch.set_num_threads(cfg.training.threads)
    # before the model exists: LoRA's A matrices are drawn from the global RNG when peft wraps the
    # model, which the Trainer would only seed later - same seed, same starting adapter
    set_seed(cfg.training.seed)
    cfg.output_dir = job_output_dir(cfg)
    out = Path(cfg.output_dir)
    dataset_hash = data_hash(cfg.data)
    out.mkdir(parents=True, exist_ok=True)
    claim_run_folder(out, cfg, dataset_hash)
    os.environ.setdefault("WANDB_MODE", cfg.wandb_mode)
    os.environ.setdefault("WANDB_PROJECT", cfg.wandb_project)
    os.environ.setdefault("WANDB_DIR", str(out))
    return out, dataset_hash


def train(cfg: TrainConfig, *, extra_callbacks: list | None = None) -> dict[str, Any]:
    if cfg.family.kind == "lfm2_audio":   # speech in, calls + spoken answers out: liquid-audio's model
        from .lfm2_audio.run import train as train_audio
        return train_audio(cfg, extra_callbacks=extra_callbacks)
    if cfg.family.kind == "ovis":         # images in, Crop calls with the crop fed back: train/ovis/
        from .ovis.run import train as train_ovis
        return train_ovis(cfg, extra_callbacks=extra_callbacks)

    import torch
    from transformers import TrainingArguments

    from .trainer import ToolTrainer

    out, dataset_hash = prepare_run(cfg)

    fmt = get_format(cfg.family.format)
    tok = load_tokenizer(cfg.family.path, trust_remote_code=cfg.family.trust_remote_code)
    cuda = torch.cuda.is_available()
    dtype = resolve_dtype_name(cfg.family.dtype, "cuda" if cuda else "cpu")   # auto: bf16 on GPUs, fp32 on CPUs
    model = load_causal_lm(cfg.family.path, dtype=dtype, trust_remote_code=cfg.family.trust_remote_code)
    if cfg.data.pack_requests and str(getattr(model.config, "model_type", "")).startswith("lfm2"):
        raise ToolkitError("LFM2's short convolutions read the tokens before a position whatever the attention mask "
                           "says, so packed requests would see each other", field="data.pack_requests",
                           fix="leave data.pack_requests off for LFM2 models")
    if cfg.data.pack_requests and getattr(model.config, "_attn_implementation", "sdpa") not in ("sdpa", "eager"):
        raise ToolkitError(f"packed rows need a 4D attention mask, which {model.config._attn_implementation} does not take",
                           field="data.pack_requests", fix="use the sdpa attention (the default), or leave packing off")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    new_ids = add_tool_tokens(model, tok, fmt, cfg.family.new_token_init)
    full = cfg.training.method == "full"
    model = model.train() if full else add_lora(cfg, model, new_ids)   # full: every weight already trains
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)

    train_ds, dropped = tokenize_split(cfg.data, "train", tok, fmt, cfg.data.train_examples)
    cases = eval_cases(cfg.data) if cfg.training.eval_every or cfg.data.eval_cases else []
    t = cfg.training
    evaluating = t.eval_every > 0 and bool(cases)
    args = TrainingArguments(
        output_dir=str(out / "checkpoints"), per_device_train_batch_size=t.batch_size,
        gradient_accumulation_steps=t.grad_accum, learning_rate=t.learning_rate, num_train_epochs=t.epochs,
        max_steps=t.max_steps, lr_scheduler_type=t.lr_scheduler, warmup_steps=t.warmup_ratio,
        weight_decay=t.weight_decay, logging_steps=t.logging_steps, seed=t.seed, data_seed=t.seed,
        eval_strategy="steps" if evaluating else "no", eval_steps=t.eval_every or None,
        save_strategy="steps", save_steps=t.eval_every or 500, save_total_limit=t.save_total_limit,
        load_best_model_at_end=evaluating and t.keep_checkpoint == "best", metric_for_best_model="f1" if evaluating else None,
        greater_is_better=True, report_to=[] if cfg.wandb_mode == "disabled" else ["wandb"],
        train_sampling_strategy="group_by_length" if t.group_by_length else "random", length_column_name="length",
        remove_unused_columns=False, use_cpu=not cuda,
        ddp_backend="gloo" if not cuda and int(os.environ.get("WORLD_SIZE", "1")) > 1 else None,
        ddp_find_unused_parameters=False, activation_checkpointing=t.gradient_checkpointing,
        bf16=bf16_autocast_allowed(t.bf16_autocast, "cuda" if cuda else "cpu", "training") or (dtype == "bfloat16" and cuda),
        dataloader_num_workers=0, save_only_model=False,
    )
    trainer = ToolTrainer(model=model, args=args, train_dataset=train_ds, eval_dataset=train_ds.select(range(1)),
                          data_collator=Collator(tok.pad_token_id, t.pad_to_multiple_of), processing_class=tok, fmt=fmt, f1_cases=cases,
                          eval_max_new_tokens=t.eval_max_new_tokens, labeled_lm_head=t.labeled_lm_head,
                          decision_weight=t.decision_weight, ddp_sync=t.ddp_sync, callbacks=extra_callbacks or [])
    budget = fit_budget(trainer, train_ds, cfg, out, evaluating) if t.time_budget_minutes else {}
    train_rows = len(trainer.train_dataset)
    seconds, run_facts = fit(trainer, cfg, out, evaluating)

    if t.dump_rank_weights:
        from safetensors.torch import save_file

        rank = int(os.environ.get("RANK", "0"))
        lora = {k: v.detach().contiguous() for k, v in trainer.model.named_parameters() if v.requires_grad}
        save_file({k.removeprefix("module."): v for k, v in lora.items()}, str(out / f"rank{rank}.safetensors"))
    metrics: dict[str, Any] = {}
    if trainer.is_world_process_zero():
        size = save_weights(trainer.model, tok, fmt, cfg, out)
        metrics = {
            "base_model": cfg.family.path, "base_model_folder": resolve_model_path(cfg.family.path),
            "format": fmt.name, "dataset": cfg.data.path, "dataset_manifest_sha256_16": dataset_hash,
            "new_tool_tokens": {tok.convert_ids_to_tokens(i): i for i in new_ids},
            "new_token_init": cfg.family.new_token_init, "trainable_parameters": trainable,
            "method": cfg.training.method, ("model_bytes" if full else "adapter_bytes"): size,
            "train_examples": train_rows, "dropped_too_long": dropped,
            "real_tokens_per_second": round(trainer.real_tokens / seconds, 1) if seconds else None,
            **({"time_budget": budget} if budget else {}), **run_facts,
        }
        write_run_files(out, cfg, metrics)
    return metrics


def save_weights(model: Any, tok: Any, fmt: Any, cfg: TrainConfig, out: Path) -> int:
    """The kept weights with their tokenizer, the format's chat template and the family record: LoRA
    in adapter/, or (training.method=full) the whole model in model/. Written to a temporary folder
    first, so a crash never leaves a folder that looks complete. Returns the weight files' bytes."""
    full = cfg.training.method == "full"
    final = out / ("model" if full else "adapter")
    with folder_written_atomically(final) as tmp:
        if full:
            model.save_pretrained(str(tmp))
        else:
            model.save_pretrained(str(tmp), save_embedding_layers=False)   # new rows travel as a small delta
        # chat_template.jinja renders the format's text, so other servers (vLLM, llama.cpp, Ollama) feed
        # the model what it was trained on (toolcore/chat_template.py)
        attach_chat_template(tok, fmt)
        tok.save_pretrained(str(tmp))
        # eval/serve read base model + format from it; a whole model is its own base, so its record names
        # no path (the folder may move)
        write_family_record(tmp, asdict(cfg.family), whole_model=full)
    return sum(p.stat().st_size for p in final.glob("model*.safetensors" if full else "adapter_model.*"))


def fit_budget(trainer: Any, train_ds: Any, cfg: TrainConfig, out: Path, evaluating: bool) -> dict[str, Any]:
    """Size the run to `training.time_budget_minutes` (train/budget.py): the trainer's max_steps, its
    training rows (the first ones, one pass) and, when validating, two validation passes. The choice is
    written to the run folder first, so a resumed run trains to the same schedule."""
    t = cfg.training
    check_budget(t.time_budget_minutes, int(os.environ.get("WORLD_SIZE", "1")))
    # a seeded shuffle first: tokenize_split keeps the split's order, in which a prefix of the rows that
    # follow data.category_weights has the generated mix, not the weighted one
    train_ds = train_ds.shuffle(seed=t.seed)
    record = out / "time_budget.json"
    rows_per_step = t.batch_size * t.grad_accum
    if cfg.resume and record.exists():
        budget = json.loads(record.read_text())
    else:
        ceiling = len(train_ds) // rows_per_step
        print(f"time budget: timing {CALIBRATION_BATCHES} forward/backward passes of batch {t.batch_size} on this machine "
              f"({'bf16 autocast' if trainer.args.bf16 else 'fp32'})", flush=True)
        per_token = seconds_per_token(trainer, train_ds, t.batch_size, bf16=trainer.args.bf16, seed=t.seed)
        steps = steps_within(train_ds["length"], per_token, t.time_budget_minutes, rows_per_step,
                             min(t.max_steps, ceiling) if t.max_steps > 0 else ceiling)
        budget = {"minutes": t.time_budget_minutes, "seconds_per_1k_tokens": round(per_token * 1000, 4),
                  "steps": steps, "ceiling": ceiling}
        write_text_atomic(record, json.dumps(budget, indent=2))
    steps = budget["steps"]
    trainer.train_dataset = train_ds.select(range(steps * rows_per_step))
    trainer.args.max_steps = steps
    if evaluating:       # halfway and at the end; checkpoints with them (keep_checkpoint picks what adapter/ holds)
        trainer.args.eval_steps = trainer.args.save_steps = max(1, -(-steps // 2))
    # the guard reads the machine's speed per token (the tokens the trainer has counted), not per step
    planned_tokens = sum(trainer.train_dataset["length"])
    trainer.add_callback(BudgetGuard(t.time_budget_minutes, evaluating, work=lambda: trainer.real_tokens,
                                     work_per_step=planned_tokens / steps))
    print(f"time budget: {t.time_budget_minutes} min at {budget['seconds_per_1k_tokens']} s per 1k tokens "
          f"-> {steps} steps ({steps * rows_per_step} examples)", flush=True)
    return budget


def fit(trainer: Any, cfg: TrainConfig, out: Path, evaluating: bool) -> tuple[float, dict[str, Any]]:
    """Train (resuming from the newest checkpoint when `cfg.resume`); the final scores are the ones
    logged at the kept checkpoint (one more pass only when none were logged there). Returns the
    training seconds and the facts every training path records in metrics.json."""
    resume = latest_checkpoint(out / "checkpoints") if cfg.resume else None
    t0 = time.perf_counter()
    result = trainer.train(resume_from_checkpoint=resume)
    seconds = time.perf_counter() - t0
    keep = cfg.training.keep_checkpoint
    final = (kept_model_scores(trainer.state, keep) or trainer.evaluate()) if evaluating else {}
    return seconds, {
        "steps": trainer.state.global_step, "train_seconds": round(seconds, 1),
        "train_loss": round(result.training_loss, 4), "resumed_from": resume,
        "loss_history": [h for h in trainer.state.log_history if "loss" in h],
        "f1_history": trainer.f1_history, "final": final, "best_checkpoint": trainer.state.best_model_checkpoint,
        "kept": keep,
    }


def kept_model_scores(state: Any, keep: str = "best") -> dict[str, Any]:
    """The validation scores logged at the weights kept (`keep`: the best checkpoint, loaded at the end,
    or the last step), so the kept model is not scored a second time (a generation pass: 85 s in the
    CPU demo); empty where that step logged none."""
    if keep == "last":
        step = state.global_step
    elif not state.best_model_checkpoint:
        return {}
    else:
        step = int(Path(state.best_model_checkpoint).name.rsplit("-", 1)[1])
    for entry in state.log_history:
        if entry.get("step") == step and any(k.endswith("_f1") for k in entry):
            return {k: v for k, v in entry.items() if k.startswith("eval_")}
    return {}


def write_run_files(out: Path, cfg: TrainConfig, metrics: dict[str, Any]) -> None:
    """The exact resolved config and the metrics (with the run's config hash), beside the adapter."""
    record = out / "run.json"
    if record.exists():
        metrics["config_sha256_16"] = json.loads(record.read_text()).get("config_sha256_16")
    write_config(out, cfg)
    write_text_atomic(out / "metrics.json", json.dumps(metrics, indent=2))
