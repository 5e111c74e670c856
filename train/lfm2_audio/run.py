"""One LFM2-Audio LoRA run (family.kind=lfm2_audio): liquid_audio's model, processor, mapper and collator
under transformers' Trainer.

  loss       text_loss_weight * text_loss + audio_loss_weight * audio_loss (liquid_audio's per-modality
             means over the supervised assistant positions: text tokens, and the audio frames of spoken
             answers, weighted over the 8 codebooks as the model does)
  LoRA       on the LFM2 backbone only: family.lora_targets is a regex anchored to `lfm.layers.N.` (the
             depthformer has q/out projections of its own and stays frozen, as do the conformer
             encoder, the audio adapter and the audio embeddings)
  tool rows  peft trainable_token_indices on `lfm.embed_tokens` for LFM2's six tool markers (single
             tokens already: nothing is added). The text head is the embedding matrix itself
             (liquid_audio computes `linear(h, lfm.embed_tokens.weight)`), and peft's wrapper returns
             the merged rows for `.weight`, so the trained rows reach the output side too.

Output folder (as for the text families): adapter/ (the best or last adapter + tokenizer),
checkpoints/ (Trainer checkpoints; resumed from the newest), config.yaml, metrics.json, and
preprocessed/ (mapper output cached per split: mel features and Mimi codes are computed once).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from statistics import mean
from typing import Any, Sequence

from toolcore.errors import ToolkitError
from toolcore.files import folder_written_atomically
from toolcore.run_record import write_family_record
from toolcore.formats import get_format

from ..config import TrainConfig
from ..run import fit, prepare_run, write_run_files
from ..tokens import rows_apart
from runtime.lfm2_audio import load_model, load_processor, resolve_dtype
from runtime.precision import bf16_autocast_allowed
from runtime.lfm2_audio.chat import checkpoint_config, make_mapper

from .data import AudioCollator, model_input, preprocess_split, speech_cases

BACKBONE_EMBEDDING = "lfm.embed_tokens"


def tool_token_ids(tokenizer: Any, fmt: Any) -> list[int]:
    """LFM2's tool markers as token ids; each must already be one token (LFM2's tokenizer has them)."""
    ids = []
    for t in fmt.tool_tokens:
        enc = tokenizer.encode(t, add_special_tokens=False)
        if len(enc) != 1:
            raise ToolkitError(f"the tokenizer splits {t!r} into {len(enc)} tokens", field="family.path",
                               fix="use an LFM2-Audio checkpoint (its tokenizer has the tool markers as single tokens)")
        ids.append(enc[0])
    return ids


def lora_config(cfg: TrainConfig, token_ids: list[int]):
    from peft import LoraConfig

    # no task_type: LFM2AudioModel is a plain nn.Module whose forward takes one batch object
    return LoraConfig(r=cfg.lora.r, lora_alpha=cfg.lora.alpha, lora_dropout=cfg.lora.dropout,
                      target_modules=cfg.family.lora_targets,
                      trainable_token_indices={BACKBONE_EMBEDDING: token_ids} if token_ids else None)


def _trainer_class():
    import torch
    from transformers import Trainer

    from ..sampler import ShuffledLengthGrouping

    class AudioTrainer(ShuffledLengthGrouping, Trainer):
        """transformers' Trainer with LFM2-Audio's loss, per-modality loss logging, and an evaluation
        that reports validation losses and, on spoken validation cases, the call F1 of the live tool
        loop (the eval model's own loop; answers stop before their audio: calls need no speech)."""

        def __init__(self, *args: Any, text_weight: float = 1.0, audio_weight: float = 1.0,
                     val_dataset: Any = None, f1_cases: Sequence[Any] = (), fmt: Any = None, processor: Any = None,
                     eval_max_new_tokens: int = 64, **kwargs: Any):
            super().__init__(*args, **kwargs)
            self.text_weight, self.audio_weight = text_weight, audio_weight
            self.val_dataset, self.f1_cases, self.fmt, self.proc = val_dataset, list(f1_cases), fmt, processor
            self.eval_max_new_tokens = eval_max_new_tokens
            # the loss is a mean per micro-batch: let the Trainer divide by the accumulation steps
            self.model_accepts_loss_kwargs = False
            self.positions = 0
            self._parts: dict[str, list[Any]] = {"text_loss": [], "audio_loss": []}
            self.f1_history: list[dict[str, float]] = []

        def weighted(self, out: Any):
            return self.text_weight * out.text_loss + self.audio_weight * out.audio_loss

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            # the Trainer has just called model.train(): the frozen parts go back to eval mode, else the
            # conformer's batch norms would normalise with the batch's statistics and overwrite the
            # checkpoint's running statistics (buffers the adapter does not save)
            frozen_to_eval(model)
            batch = model_input(inputs)
            # real positions: text tokens, audio-in embeddings and audio-out frames, not the <|pad|> (id 0)
            self.positions += int(batch.modality_flag.numel()) - int((batch.text == 0).sum())
            out = model(batch)
            # kept as tensors (no device sync per step); averaged when the Trainer logs
            self._parts["text_loss"].append(out.text_loss.detach())
            self._parts["audio_loss"].append(out.audio_loss.detach())
            loss = self.weighted(out)
            return (loss, out) if return_outputs else loss

        def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
            if "loss" in logs:
                for k, v in self._parts.items():
                    if v:
                        logs[k] = round(float(torch.stack(v).float().mean()), 4)
                    v.clear()
            super().log(logs, start_time)

        def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval") -> dict[str, float]:
            metrics: dict[str, float] = {}
            model = self.model
            was_training = model.training
            model.eval()
            t0 = time.perf_counter()
            if self.val_dataset is not None and len(self.val_dataset):
                parts: dict[str, list[float]] = {"loss": [], "text_loss": [], "audio_loss": []}
                loader = self.get_eval_dataloader(self.val_dataset)
                with torch.no_grad():
                    for inputs in loader:
                        out = model(model_input(self._prepare_inputs(inputs)))
                        parts["loss"].append(float(self.weighted(out)))
                        parts["text_loss"].append(float(out.text_loss))
                        parts["audio_loss"].append(float(out.audio_loss))
                metrics |= {f"{metric_key_prefix}_{k}": round(mean(v), 4) for k, v in parts.items()}
            if self.f1_cases:
                from runtime.models.lfm2_audio import ToolLoop
                from toolcore.metric import call_f1

                # each case prompted as its training row was; answers stop before their audio
                loop = ToolLoop(_unwrap(model), self.proc, self.fmt, speak=None, audio=False,
                                max_new_tokens=self.eval_max_new_tokens)
                outs = [loop.run(c.conversation) for c in self.f1_cases]
                key = f"{metric_key_prefix}_f1"
                metrics[key] = round(mean(call_f1(c.expected_calls, o.calls) for c, o in zip(self.f1_cases, outs)), 4)
                self.f1_history.append({"step": self.state.global_step, key: metrics[key]})
            metrics[f"{metric_key_prefix}_seconds"] = round(time.perf_counter() - t0, 1)
            model.train(was_training)
            self.log(metrics)
            self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
            return metrics

    return AudioTrainer


FROZEN = ("conformer", "audio_adapter", "depthformer")


def frozen_to_eval(model: Any) -> None:
    base = _unwrap(model)
    base = base.get_base_model() if hasattr(base, "get_base_model") else base
    for name in FROZEN:
        getattr(base, name).eval()


def _unwrap(model: Any) -> Any:
    while hasattr(model, "module"):
        model = model.module
    return model


def train(cfg: TrainConfig, *, extra_callbacks: list | None = None) -> dict[str, Any]:
    import torch
    from peft import get_peft_model
    from transformers import TrainingArguments, set_seed

    t = cfg.training
    out, data_hash = prepare_run(cfg)
    cuda = torch.cuda.is_available()
    # weights are loaded on the CPU and the Trainer moves them: one code path for CPU, GPU and DDP
    dtype = resolve_dtype(cfg.family.dtype, "cuda" if cuda else "cpu")

    fmt = get_format(cfg.family.format)
    # mel features and Mimi codes are computed once, on the GPU when there is one
    proc = load_processor(cfg.family.path, device=f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}" if cuda else "cpu")
    config = checkpoint_config(cfg.family.path)
    mapper = make_mapper(proc, config)
    cache = out / "preprocessed"
    train_ds, dropped = preprocess_split(cfg.data, "train", fmt, proc, mapper, cache, limit=cfg.data.train_examples)
    if not len(train_ds):
        raise ToolkitError(f"no training rows left ({dropped} longer than data.max_length={cfg.data.max_length})",
                           field="data.max_length",
                           fix="raise data.max_length (speech rows are long: audio frames count as positions)")
    val_ds = None
    f1_cases: list[Any] = []
    evaluating = t.eval_every > 0
    if evaluating:
        val_ds, _ = preprocess_split(cfg.data, "validation", fmt, proc, mapper, cache,
                                     limit=max(cfg.data.eval_cases, 1))
        f1_cases = speech_cases(cfg.data.path, "validation", cfg.data.eval_cases, cfg.data.shuffle_seed) \
            if cfg.data.eval_cases else []
    # the Mimi codec is only needed to encode reply audio (now cached): free its memory for training
    proc._mimi = None
    if cuda:
        torch.cuda.empty_cache()

    model = load_model(cfg.family.path, device="cpu", dtype=dtype)
    token_ids = tool_token_ids(proc.text, fmt)
    # peft draws LoRA's A matrices from the global RNG: seed right here, so that whether the mapper
    # ran or its output came from the cache (a resumed run) does not change the starting adapter
    set_seed(t.seed)
    model = get_peft_model(model, lora_config(cfg, token_ids))
    rows_apart(model)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    targets = sorted({n.split(".lora_")[0] for n, _ in model.named_parameters() if ".lora_" in n})
    if not targets or any(not n.startswith("base_model.model.lfm.layers.") for n in targets):
        raise ToolkitError(f"LoRA targets must be LFM2 backbone layers, got {targets[:3]}...",
                           field="family.lora_targets",
                           fix=r"anchor the regex: lfm\.layers\.\d+\.(self_attn\...|conv\...|feed_forward\...)")
    if t.gradient_checkpointing:
        # the Trainer's switch needs a PreTrainedModel; the LFM2 backbone is one
        lfm = _unwrap(model).get_base_model().lfm
        enable = getattr(lfm, "activation_checkpointing_enable", None) or lfm.gradient_checkpointing_enable
        enable({"use_reentrant": False})

    metric = "f1" if f1_cases else "loss"
    args = TrainingArguments(
        output_dir=str(out / "checkpoints"), per_device_train_batch_size=t.batch_size,
        per_device_eval_batch_size=t.batch_size, gradient_accumulation_steps=t.grad_accum,
        learning_rate=t.learning_rate, num_train_epochs=t.epochs, max_steps=t.max_steps,
        lr_scheduler_type=t.lr_scheduler, warmup_steps=t.warmup_ratio, weight_decay=t.weight_decay,
        logging_steps=t.logging_steps, seed=t.seed, data_seed=t.seed,
        eval_strategy="steps" if evaluating else "no", eval_steps=t.eval_every or None,
        save_strategy="steps", save_steps=t.eval_every or 500, save_total_limit=t.save_total_limit,
        load_best_model_at_end=evaluating and t.keep_checkpoint == "best", metric_for_best_model=metric if evaluating else None,
        greater_is_better=metric == "f1", report_to=[] if cfg.wandb_mode == "disabled" else ["wandb"],
        train_sampling_strategy="group_by_length" if t.group_by_length else "random", length_column_name="length",
        remove_unused_columns=False, use_cpu=not cuda,
        ddp_backend="gloo" if not cuda and int(os.environ.get("WORLD_SIZE", "1")) > 1 else None,
        ddp_find_unused_parameters=False, bf16=bf16_autocast_allowed(t.bf16_autocast, "cuda" if cuda else "cpu", "training") or (dtype == torch.bfloat16 and cuda),
        dataloader_num_workers=0, save_only_model=False,
    )
    trainer = _trainer_class()(
        model=model, args=args, train_dataset=train_ds,
        eval_dataset=val_ds if val_ds is not None else train_ds.select(range(1)),
        data_collator=AudioCollator(), processing_class=proc.text, text_weight=t.text_loss_weight,
        audio_weight=t.audio_loss_weight, val_dataset=val_ds, f1_cases=f1_cases, fmt=fmt, processor=proc,
        eval_max_new_tokens=t.eval_max_new_tokens, callbacks=extra_callbacks or [])
    seconds, run_facts = fit(trainer, cfg, out, evaluating)

    metrics: dict[str, Any] = {}
    if trainer.is_world_process_zero():
        adapter = out / "adapter"
        peft_model = _unwrap(trainer.model)
        # a plain nn.Module has no name_or_path for peft to record: name the base for whoever loads it
        peft_model.peft_config["default"].base_model_name_or_path = cfg.family.path
        with folder_written_atomically(adapter) as tmp:   # a crash never leaves an adapter that looks complete
            peft_model.save_pretrained(str(tmp), save_embedding_layers=False)
            proc.text.save_pretrained(str(tmp))
            write_family_record(tmp, asdict(cfg.family))   # eval/serve read base model + format from it
        size = sum(p.stat().st_size for p in adapter.glob("adapter_model.*"))
        metrics = {
            "family": "lfm2_audio", "base_model": cfg.family.path, "format": fmt.name, "dataset": cfg.data.path,
            "dataset_manifest_sha256_16": data_hash,
            "tool_token_rows": {proc.text.convert_ids_to_tokens(i): i for i in token_ids},
            "lora_modules": len(targets), "trainable_parameters": trainable, "adapter_bytes": size,
            "train_examples": len(train_ds), "dropped_too_long": dropped,
            "spoken_train_examples": int(sum(train_ds["speak"])),
            "text_loss_weight": t.text_loss_weight, "audio_loss_weight": t.audio_loss_weight,
            # positions of the packed sequences (text tokens + audio-in embeddings + audio-out frames),
            # padding left out: the speech counterpart of the text trainer's real tokens/s
            "real_tokens_per_second": round(trainer.positions / seconds, 1) if seconds else None,
            **run_facts,
        }
        write_run_files(out, cfg, metrics)
    return metrics
