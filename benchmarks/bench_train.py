"""Training throughput: real (non-pad) tokens/s and peak memory for SmolLM2-135M LoRA.

    python benchmarks/bench_train.py [--steps 6] [--examples 160] [--setups toolkit-bf16,toolkit-bf16-top15]
    python benchmarks/bench_train.py --setups toolkit-bf16 --batch 4 --max-length 768 --profile

`--profile` adds, per setup, where one more step's time goes (torch.profiler, self time by kind of op:
the frozen weights' matmuls, LoRA's, the LM head's, attention, casts and copies, the rest) with each
matmul kind's GFLOP/s beside the machine's measured rate.

Same model, same data (the default dataset's first examples, rendered in the generic format), same
LoRA (r=16 on all linear layers), batch 8, fp32 unless named bf16, measured in this run, each setup
in its own process (peak RSS is per process):
  trl       TRL's SFTTrainer with its defaults (gradient checkpointing on), fed the rendered text
  trainer   plain transformers Trainer, assistant-only labels, length-grouped batches
  toolkit   this toolkit's trainer: the above plus the LM head only on labelled positions and no
            attention mask for right-padded rows (the causal mask alone gives the same logits)
  toolkit-bf16  the same with bf16 autocast (fp32 weights, bf16 matmuls): smollm2_cpu_lora's setting
  toolkit-bf16-top15  the same with LoRA on the top 15 of 30 layers (lora.top_layers=15): backward
            stops below them
Reported: tokens/s after one warm-up step, the ratio to TRL, padding waste, peak RSS, and the
fraction of this machine's ceiling = measured matmul FLOP/s / (4 x parameters per token), against
the fp32 ceiling (the issue's definition) and against the ceiling of the row's own matmul precision.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

from machine import matmul_flops   # benchmarks/machine.py (this folder is on sys.path when run as a script)

SETUPS = ("trl", "trainer", "toolkit", "toolkit-bf16", "toolkit-bf16-top15")


def worker(setup: str, steps: int, examples: int, batch: int = 8, max_length: int = 1024,
           profile: bool = False) -> dict:
    from transformers import TrainerCallback, TrainingArguments

    from toolcore.formats import get_format
    from toolcore.hub import load_causal_lm, load_tokenizer
    from train.config import DataConfig, FamilyConfig, LoraSettings, TrainConfig
    from train.data import Collator, tokenize_split
    from train.run import add_lora, lora_config
    from train.tokens import add_tool_tokens

    fmt = get_format("generic")
    tok = load_tokenizer("smollm2")
    model = load_causal_lm("smollm2")
    new_ids = add_tool_tokens(model, tok, fmt)
    top = 15 if setup.endswith("-top15") else None
    cfg = TrainConfig(family=FamilyConfig(), lora=LoraSettings(r=16, alpha=32, top_layers=top))
    ds, _ = tokenize_split(DataConfig(max_length=max_length), "train", tok, fmt, examples)
    timing = {"t0": None, "tokens": 0, "padded": 0}

    class Clock(TrainerCallback):
        # starts when the warm-up step ends
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == 1:
                timing["t0"] = time.perf_counter()

    def counted(trainer):
        """Count each batch where a timed step takes it, not where it is collated: the data loader
        collates one batch ahead (accelerate looks ahead for the epoch's end), so counting in the
        collator credited the timed window with a batch it never trained on and missed the first one
        it did (with two batches an epoch, none at all)."""
        step = trainer.training_step

        def training_step(model, inputs, *args, **kwargs):
            if timing["t0"] is not None:
                timing["tokens"] += int(inputs["attention_mask"].sum())
                timing["padded"] += inputs["attention_mask"].numel()
            return step(model, inputs, *args, **kwargs)
        trainer.training_step = training_step
        return trainer

    if setup == "trl":
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer

        text = Dataset.from_dict({"text": [tok.decode(r["input_ids"]) for r in ds]})
        args = SFTConfig(output_dir="/tmp/bench_trl", per_device_train_batch_size=batch, max_steps=steps + 1,
                         learning_rate=2e-3, report_to=[], use_cpu=True, logging_steps=1000, save_strategy="no",
                         max_length=1024, dataset_text_field="text")
        # plain LoRA for TRL: its fused LM head cannot take peft's trainable-token wrapper on a tied
        # head (AttributeError: 'TrainableTokensWrapper' object has no attribute 'bias'); the 4 added
        # rows staying frozen changes its compute by nothing measurable
        trainer = counted(SFTTrainer(model=model, args=args, train_dataset=text, processing_class=tok,
                                     peft_config=lora_config(cfg, model, []), callbacks=[Clock()]))
    else:
        from train.trainer import ToolTrainer

        model = add_lora(cfg, model, new_ids)
        args = TrainingArguments(output_dir="/tmp/bench_tk", per_device_train_batch_size=batch, max_steps=steps + 1,
                                 learning_rate=2e-3, report_to=[], use_cpu=True, logging_steps=1000,
                                 save_strategy="no", train_sampling_strategy="group_by_length",
                                 length_column_name="length", remove_unused_columns=False,
                                 bf16=setup.startswith("toolkit-bf16"))
        trainer = counted(ToolTrainer(model=model, args=args, train_dataset=ds, processing_class=tok, fmt=fmt,
                                      data_collator=Collator(tok.pad_token_id),
                                      labeled_lm_head=setup.startswith("toolkit"),
                                      unmasked_right_padding=setup.startswith("toolkit"), callbacks=[Clock()]))
    trainer.train()
    seconds = time.perf_counter() - timing["t0"]
    breakdown = step_breakdown(trainer, model.config.vocab_size, cfg.lora.r) if profile else None
    return {"breakdown": breakdown, "setup": setup, "tokens_per_s": timing["tokens"] / seconds, "padding": 1 - timing["tokens"] / timing["padded"],
            "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, "steps": steps,
            "seconds": seconds, "params": sum(p.numel() for p in model.parameters())}


def step_breakdown(trainer, vocab: int, rank: int) -> dict:
    """One more training step under torch.profiler: self seconds by kind of op, and the matmuls' FLOPs."""
    from torch.profiler import ProfilerActivity, profile

    inputs = next(iter(trainer.get_train_dataloader()))
    trainer.training_step(trainer.model, inputs)
    t0 = time.perf_counter()
    trainer.training_step(trainer.model, inputs)
    plain = time.perf_counter() - t0
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        trainer.training_step(trainer.model, inputs)
    kinds: dict[str, dict] = {}
    for e in prof.key_averages(group_by_input_shape=True):
        name, shapes, flops = e.key, e.input_shapes, 0.0
        if name in ("aten::mm", "aten::addmm", "aten::bmm") and len(shapes) >= 2 and shapes[-2] and shapes[-1]:
            a, b = shapes[-2], shapes[-1]
            dims = set(a) | set(b)
            kind = "LM head matmuls" if vocab in dims else (
                "LoRA matmuls" if rank in dims else "frozen weights' matmuls")
            flops = 2.0 * e.count * (a[0] * a[1] * b[-1] if len(a) == 2 else a[0] * a[1] * a[2] * b[-1])
        elif "attention" in name:
            kind = "attention"
        elif name in ("aten::copy_", "aten::_to_copy", "aten::to"):
            kind = "casts and copies"
        else:
            kind = "the rest (norms, activations, indexing, loss)"
        k = kinds.setdefault(kind, {"seconds": 0.0, "flops": 0.0, "ops": {}})
        k["seconds"] += e.self_cpu_time_total / 1e6
        k["flops"] += flops
        k["ops"][name] = k["ops"].get(name, 0.0) + e.self_cpu_time_total / 1e6
    return {"seconds": plain, "tokens": int(inputs["attention_mask"].sum()), "labelled": int((inputs["labels"] != -100).sum()),
            "kinds": kinds}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--examples", type=int, default=160)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--max-length", type=int, default=1024)
    ap.add_argument("--profile", action="store_true", help="where one more step's time goes, per setup")
    ap.add_argument("--worker", choices=SETUPS)
    ap.add_argument("--setups", default=",".join(SETUPS), help="comma-separated subset of " + ", ".join(SETUPS))
    args = ap.parse_args()
    if args.worker:
        print("RESULT " + json.dumps(worker(args.worker, args.steps, args.examples, args.batch, args.max_length,
                                            args.profile)))
        return
    from rich.console import Console
    from rich.table import Table

    results = {}
    for setup in args.setups.split(","):
        if setup not in SETUPS:
            raise SystemExit(f"--setups: unknown setup {setup!r}; choose from {', '.join(SETUPS)}")
        out = subprocess.run([sys.executable, __file__, "--worker", setup, "--steps", str(args.steps),
                              "--examples", str(args.examples), "--batch", str(args.batch), "--max-length",
                              str(args.max_length)] + (["--profile"] if args.profile else []),
                             capture_output=True, text=True)
        line = next((l for l in out.stdout.splitlines() if l.startswith("RESULT ")), None)
        if line is None:
            print(out.stderr[-3000:])
            continue
        results[setup] = json.loads(line[7:])
    flops = {"fp32": matmul_flops("float32"), "bf16": matmul_flops("bfloat16")}
    params = next(iter(results.values()))["params"]
    ceiling = {k: f / (4 * params) for k, f in flops.items()}
    t = Table(title=f"SmolLM2-135M LoRA r=16, batch {args.batch}, {args.steps} timed steps; ceiling = matmul FLOP/s / (4 x "
                    f"{params / 1e6:.1f}M): fp32 {ceiling['fp32']:.0f} tokens/s ({flops['fp32'] / 1e9:.0f} GFLOP/s), "
                    f"bf16 {ceiling['bf16']:.0f} tokens/s ({flops['bf16'] / 1e9:.0f} GFLOP/s)")
    for col in ("setup", "matmuls", "real tokens/s", "vs TRL", "of fp32 ceiling", "of own ceiling", "padding",
                "peak RSS GB"):
        t.add_column(col, justify="right")
    base = results.get("trl", {}).get("tokens_per_s")
    for s, r in results.items():
        prec = "bf16" if "bf16" in s else "fp32"
        t.add_row(s, prec, f"{r['tokens_per_s']:.0f}", f"{r['tokens_per_s'] / base:.2f}x" if base else "-",
                  f"{r['tokens_per_s'] / ceiling['fp32']:.0%}", f"{r['tokens_per_s'] / ceiling[prec]:.0%}",
                  f"{r['padding']:.0%}", f"{r['peak_rss_gb']:.2f}")
    Console().print(t)
    for s, r in results.items():
        if not r.get("breakdown"):
            continue
        b = r["breakdown"]
        total = sum(k["seconds"] for k in b["kinds"].values())
        rate = flops["bf16" if "bf16" in s else "fp32"]
        p = Table(title=f"{s}: one step of {b['tokens']} tokens ({b['labelled']} labelled), {b['seconds']:.2f} s "
                        f"(unprofiled), {total:.2f} s of op time under the profiler; "
                        f"this machine's matmul rate {rate / 1e9:.0f} GFLOP/s")
        for col in ("kind of op", "seconds", "share", "GFLOP/s", "of the matmul rate", "largest ops"):
            p.add_column(col, justify="right")
        for kind, k in sorted(b["kinds"].items(), key=lambda kv: -kv[1]["seconds"]):
            g = k["flops"] / k["seconds"] if k["flops"] else None
            top = sorted(k["ops"].items(), key=lambda kv: -kv[1])[:3]
            p.add_row(kind, f"{k['seconds']:.3f}", f"{k['seconds'] / total:.0%}", f"{g / 1e9:.0f}" if g else "-",
                      f"{g / rate:.0%}" if g else "-", ", ".join(f"{n.removeprefix('aten::')} {v:.2f}" for n, v in top))
        Console().print(p)


if __name__ == "__main__":
    main()
