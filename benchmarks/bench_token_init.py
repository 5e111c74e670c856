"""How to initialise the rows of the tool tokens a tokenizer lacks: `mean` (of all embedding rows)
against `description` (mean of the rows of the marker's own words: "tool call start").

    python benchmarks/bench_token_init.py [--steps 24] [--examples 400] [--held-out 96]

SmolLM2-135M has no tool tokens, so the generic format adds four. For each init the same LoRA run
(same seed, same batches, r=16 on all linear layers, batch 8, bf16 autocast as in smollm2_cpu_lora)
trains for a few steps; before and after, held-out validation conversations are scored with the
cross-entropy on the positions whose target is a new token (where the model must open or close a
call) and on all other labelled positions. The head is tied, so a new row is both what the model
reads after a call and the logit it must raise to start one.
"""

from __future__ import annotations

import argparse
import time


def held_out_losses(model, batches, new_ids) -> dict[str, float]:
    import torch

    from toolcore.tokenize import IGNORE

    new = torch.tensor(new_ids)
    sums = {"new": 0.0, "other": 0.0}
    counts = {"new": 0, "other": 0}
    model.eval()
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        for b in batches:
            logits = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits[:, :-1].float()
            target = b["labels"][:, 1:]
            labelled = target != IGNORE
            ce = torch.nn.functional.cross_entropy(logits[labelled], target[labelled], reduction="none")
            is_new = torch.isin(target[labelled], new)
            for key, sel in (("new", is_new), ("other", ~is_new)):
                sums[key] += float(ce[sel].sum())
                counts[key] += int(sel.sum())
    model.train()
    return {k: sums[k] / max(counts[k], 1) for k in sums}


def run(init: str, steps: int, examples: int, held_out: int) -> dict:
    import torch
    from peft import get_peft_model
    from transformers import TrainingArguments

    from toolcore.formats import get_format
    from toolcore.hub import load_causal_lm, load_tokenizer
    from train.config import DataConfig, FamilyConfig, LoraSettings, TrainConfig
    from train.data import Collator, tokenize_split
    from train.run import lora_config
    from train.tokens import add_tool_tokens
    from train.trainer import ToolTrainer

    torch.manual_seed(0)
    fmt = get_format("generic")
    tok = load_tokenizer("smollm2")
    model = load_causal_lm("smollm2")
    new_ids = add_tool_tokens(model, tok, fmt, init)
    cfg = TrainConfig(family=FamilyConfig(new_token_init=init), lora=LoraSettings(r=16, alpha=32))
    model = get_peft_model(model, lora_config(cfg, model, new_ids))
    train_ds, _ = tokenize_split(DataConfig(), "train", tok, fmt, examples)
    val_ds, _ = tokenize_split(DataConfig(), "validation", tok, fmt, held_out)
    collate = Collator(tok.pad_token_id)
    val = sorted(val_ds, key=lambda r: r["length"])
    batches = [collate(val[i:i + 8]) for i in range(0, len(val), 8)]
    before = held_out_losses(model, batches, new_ids)
    args = TrainingArguments(output_dir=f"/tmp/bench_init_{init}", per_device_train_batch_size=8, max_steps=steps,
                             learning_rate=2e-3, warmup_steps=0.05, lr_scheduler_type="cosine", report_to=[],
                             use_cpu=True, logging_steps=steps, save_strategy="no", bf16=True, seed=0, data_seed=0,
                             train_sampling_strategy="group_by_length", length_column_name="length",
                             remove_unused_columns=False, disable_tqdm=True)
    t0 = time.perf_counter()
    ToolTrainer(model=model, args=args, train_dataset=train_ds, processing_class=tok, fmt=fmt,
                data_collator=collate).train()
    seconds = time.perf_counter() - t0
    after = held_out_losses(model, batches, new_ids)
    return {"init": init, "before": before, "after": after, "seconds": seconds}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--examples", type=int, default=400)
    ap.add_argument("--held-out", type=int, default=96)
    args = ap.parse_args()
    from rich.console import Console
    from rich.table import Table

    results = [run(init, args.steps, args.examples, args.held_out) for init in ("mean", "description")]
    t = Table(title=f"New tool-token rows: held-out cross-entropy before / after {args.steps} LoRA steps "
                    f"(SmolLM2-135M, {args.held_out} validation conversations)")
    for col in ("init", "new-token CE before", "new-token CE after", "other labelled CE before",
                "other labelled CE after", "train s"):
        t.add_column(col, justify="right")
    for r in results:
        t.add_row(r["init"], f"{r['before']['new']:.3f}", f"{r['after']['new']:.3f}", f"{r['before']['other']:.3f}",
                  f"{r['after']['other']:.3f}", f"{r['seconds']:.0f}")
    Console().print(t)


if __name__ == "__main__":
    main()
