"""Requests learned per CPU minute with and without `data.pack_requests` (one copy of the tools per
conversation of several requests, each request seeing the tools and itself).

    python benchmarks/bench_packing.py [--steps 24] [--data data/bench-packing]

SmolLM2-135M, the CPU recipe's LoRA (r=16, all linear layers), batch 4, the same shuffled rows of a
dataset made with data_gen's defaults (one to three requests a conversation), bf16 autocast where the
CPU has native bf16, as `smollm2_cpu_lora`. Timed steps exclude the first two (warm-up). Printed per
setup: tokens per row, seconds per step, real tokens/s, requests per minute (rows x their requests),
and the ratio to the unpacked run. Run it on an idle machine: two cores shared make the times noise.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--data", default="data/bench-packing")
    ap.add_argument("--out", default="runs/bench-packing")
    args = ap.parse_args()

    from transformers import TrainerCallback

    from data_gen.config import DataGenConfig
    from data_gen.generate import generate
    from runtime.precision import bf16_autocast_allowed
    from toolcore.formats import get_format
    from toolcore.hub import SMOLLM2, load_tokenizer
    from train.config import DataConfig, FamilyConfig, LoraSettings, TrainConfig, TrainingConfig
    from train.data import tokenize_split
    from train.run import train

    if not (Path(args.data) / "dataset_dict.json").exists():
        generate(DataGenConfig(output_dir=args.data, num_conversations=3000, shard_size=1000), progress=False)

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self.t0 = 0.0

        def on_step_begin(self, *a, **k):
            self.t0 = time.perf_counter()

        def on_step_end(self, *a, **k):
            self.times.append(time.perf_counter() - self.t0)

    bf16 = bf16_autocast_allowed(True, "cpu", "benchmark")
    tok = load_tokenizer(SMOLLM2)
    rows = {}
    for pack in (False, True):
        timer = StepTimer()
        n = args.steps * 4
        cfg = TrainConfig(family=FamilyConfig(name="smollm2", path=SMOLLM2, format="generic"),
                          lora=LoraSettings(r=16, alpha=32),
                          data=DataConfig(path=args.data, train_examples=n, eval_cases=0, max_length=768, pack_requests=pack),
                          training=TrainingConfig(max_steps=args.steps, batch_size=4, learning_rate=2e-3, eval_every=0,
                                                  logging_steps=args.steps, seed=0, bf16_autocast=bf16),
                          output_dir=f"{args.out}/{'packed' if pack else 'separate'}", wandb_mode="disabled")
        m = train(cfg, extra_callbacks=[timer])
        # the rows it trained on, packed, for their token and request counts (the same rows either way)
        packed, _ = tokenize_split(dataclasses.replace(cfg.data, pack_requests=True), "train", tok,
                                   get_format("generic"), n)
        per_step = statistics.mean(timer.times[2:])
        requests = statistics.mean(max(b) for b in packed["branch"])
        rows[pack] = {"tokens_per_row": round(statistics.mean(packed["length"]), 1), "seconds_per_step": round(per_step, 2),
                      "real_tokens_per_second": m.get("real_tokens_per_second"),
                      "requests_per_minute": round(60 * 4 * requests / per_step, 1)}
    base = rows[False]["requests_per_minute"]
    print(f"bf16 autocast: {bf16}; {args.steps} steps of batch 4 (first 2 untimed)")
    print("| setup | tokens per row | s/step | real tokens/s | requests per minute | vs separate |")
    print("| --- | --- | --- | --- | --- | --- |")
    for pack, r in rows.items():
        print(f"| {'packed' if pack else 'separate'} | {r['tokens_per_row']} | {r['seconds_per_step']} | "
              f"{r['real_tokens_per_second']} | {r['requests_per_minute']} | {r['requests_per_minute'] / base:.2f}x |")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "bench.json").write_text(json.dumps({str(k): v for k, v in rows.items()}, indent=2))


if __name__ == "__main__":
    main()
