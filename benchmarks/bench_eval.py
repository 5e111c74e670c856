"""Batched tool-loop engine vs plain sequential `model.generate`, on the hackathon 30 with SmolLM2-135M.

    python benchmarks/bench_eval.py [--max-new-tokens 96] [--batch-size 16]

Both decode greedily from the same prompt ids and stop at end-of-turn or the token limit; printed,
all measured in this run: cases/s for each and their ratio, whether the outputs agree, where the
engine's time goes (prefill / decode / tool continuations / tool execution), and the achieved
FLOP/s as a fraction of this machine's measured fp32 matmul FLOP/s (2 x parameters per token).
"""

from __future__ import annotations

import argparse
import time

import torch
from rich.console import Console
from rich.table import Table

from runtime.engine import GenerationConfig, ToolLoopEngine
from runtime.models.hf import load_model_and_tokenizer
from toolcore.formats import get_format
from toolcore.suites import load_suite
from toolcore.tokenize import encode_prompt

from machine import matmul_flops   # benchmarks/machine.py (this folder is on sys.path when run as a script)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--cases", type=int, default=30)
    args = ap.parse_args()
    console = Console()
    model, tok = load_model_and_tokenizer("smollm2")
    fmt = get_format("generic")
    cases = load_suite("hackathon30")[: args.cases]
    convs = [c.conversation for c in cases]
    params = sum(p.numel() for p in model.parameters())

    # baseline: one case at a time through transformers' own generate
    eos = [tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>")]
    t0 = time.perf_counter()
    seq_texts, seq_tokens, prompt_tokens = [], 0, 0
    with torch.inference_mode():
        for conv in convs:
            ids = torch.tensor([encode_prompt(tok, fmt, conv)])
            prompt_tokens += ids.shape[1]
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=args.max_new_tokens,
                                 do_sample=False, eos_token_id=eos, pad_token_id=tok.pad_token_id)
            new = out[0, ids.shape[1]:].tolist()
            seq_tokens += len(new)
            seq_texts.append(tok.decode(new, skip_special_tokens=False))
    seq_s = time.perf_counter() - t0

    engine = ToolLoopEngine(model, tok, fmt, GenerationConfig(max_new_tokens=args.max_new_tokens,
                                                                batch_size=args.batch_size))
    t0 = time.perf_counter()
    outs = engine.run(convs)
    eng_s = time.perf_counter() - t0
    eng_tokens = sum(o.new_tokens for o in outs)
    same = sum(a == b.text for a, b in zip(seq_texts, outs))
    peak = matmul_flops(reps=30)
    achieved = 2 * params * (prompt_tokens + eng_tokens) / eng_s

    t = Table(title=f"SmolLM2-135M on {len(convs)} hackathon cases, max_new_tokens={args.max_new_tokens}, "
                    f"{torch.get_num_threads()} threads")
    t.add_column("measure")
    t.add_column("sequential generate", justify="right")
    t.add_column(f"engine, batch {args.batch_size}", justify="right")
    t.add_row("seconds", f"{seq_s:.1f}", f"{eng_s:.1f}")
    t.add_row("cases / s", f"{len(convs) / seq_s:.3f}", f"{len(convs) / eng_s:.3f}")
    t.add_row("speed-up", "1.00x", f"{seq_s / eng_s:.2f}x")
    t.add_row("new tokens", str(seq_tokens), str(eng_tokens))
    t.add_row("identical outputs", "", f"{same}/{len(convs)}")
    t.add_row("fraction of matmul peak", f"{2 * params * (prompt_tokens + seq_tokens) / seq_s / peak:.1%}",
              f"{achieved / peak:.1%}")
    console.print(t)
    timing = engine.timing.as_dict()
    total = sum(v for k, v in timing.items() if k.endswith("_s"))
    w = Table(title="where the engine's time goes")
    w.add_column("phase")
    w.add_column("seconds", justify="right")
    w.add_column("share", justify="right")
    for k in ("prefill_s", "decode_s", "continuation_s", "tools_s"):
        w.add_row(k.removesuffix("_s"), f"{timing[k]:.2f}", f"{timing[k] / max(total, 1e-9):.0%}")
    console.print(w)
    console.print(f"[dim]matmul peak (1024x576x1536 fp32): {peak / 1e9:.1f} GFLOP/s; prompt tokens {prompt_tokens}; "
                  f"decode steps {timing['steps']}[/dim]")
    for a, b in zip(seq_texts, outs):
        if a != b.text:
            console.print(f"[yellow]differs[/yellow] sequential={a[:80]!r}\n        engine={b.text[:80]!r}")
            break


if __name__ == "__main__":
    main()
