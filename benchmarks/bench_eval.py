"""The batched tool-loop engine against transformers' own batched `generate`, on the hackathon 30 with
SmolLM2-135M.

    python benchmarks/bench_eval.py [--max-new-tokens 96] [--batch-size 16] [--rounds 2] [--sequential] [--autocast]

The baseline is the strongest plain one: `model.generate` on batches of the same size, prompts sorted
by length and left-padded, greedy, the same token limit and the same stop tokens (end of turn, eos).
The two run interleaved (generate, engine, generate, engine...; a fresh engine each round, so its
prefix store starts empty) because the machine may be shared: the ratio of each pair is printed,
and the figures quoted are the medians. Outputs are compared token id by token id per case.
`--sequential` adds one-at-a-time `generate` (slow); `--autocast` adds the engine under bf16 autocast
and how many cases it decodes exactly as fp32 does. Also printed: where the engine's time goes, how
many prompt tokens the prefix store served, the load average (other processes on the machine) and
the achieved FLOP/s as a fraction of this machine's fp32 matmul FLOP/s (2 x parameters per token).
"""

from __future__ import annotations

import argparse
import os
import statistics
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


def generate_batched(model, prompts: list[list[int]], eos: list[int], pad: int, max_new: int,
                     batch_size: int) -> list[list[int]]:
    """transformers' batched greedy `generate`: length-sorted, left-padded batches; per case the new ids
    up to and including the first stop token."""
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    outs: list[list[int]] = [[] for _ in prompts]
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        width = max(len(prompts[i]) for i in idx)
        ids = torch.full((len(idx), width), pad, dtype=torch.long)
        mask = torch.zeros((len(idx), width), dtype=torch.long)
        for k, i in enumerate(idx):
            ids[k, width - len(prompts[i]):] = torch.tensor(prompts[i])
            mask[k, width - len(prompts[i]):] = 1
        out = model.generate(ids, attention_mask=mask, max_new_tokens=max_new, do_sample=False, eos_token_id=eos,
                             pad_token_id=pad)
        for k, i in enumerate(idx):
            outs[i] = _until_stop(out[k, width:].tolist(), eos)
    return outs


def _until_stop(new: list[int], eos: list[int]) -> list[int]:
    for n, t in enumerate(new):
        if t in eos:
            return new[:n + 1]
    return new


def _common(a: list[int], b: list[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2, help="interleaved generate/engine pairs")
    ap.add_argument("--sequential", action="store_true", help="also one-at-a-time generate (slow)")
    ap.add_argument("--autocast", action="store_true", help="also the engine under bf16 autocast (prefill)")
    ap.add_argument("--free", action="store_true", help="the engine without schema-constrained calls (generate has "
                    "none: where the base model starts a call, the constrained engine writes a valid one instead)")
    args = ap.parse_args()
    console = Console()
    load0 = os.getloadavg()
    model, tok = load_model_and_tokenizer("smollm2")
    fmt = get_format("generic")
    cases = load_suite("hackathon30")[: args.cases]
    convs = [c.conversation for c in cases]
    prompts = [encode_prompt(tok, fmt, c) for c in convs]
    params = sum(p.numel() for p in model.parameters())
    eos = [tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>")]
    n = len(convs)

    def engine_run(**kw):
        engine = ToolLoopEngine(model, tok, fmt, GenerationConfig(max_new_tokens=args.max_new_tokens,
                                                                    batch_size=args.batch_size,
                                                                    constrained=not args.free, **kw))
        t0 = time.perf_counter()
        outs = engine.run(convs)
        return time.perf_counter() - t0, [o.output_ids for o in outs], engine

    gen_s, eng_s, gen_ids, eng_ids, engine = [], [], None, None, None
    with torch.inference_mode():
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            ids = generate_batched(model, prompts, eos, tok.pad_token_id, args.max_new_tokens, args.batch_size)
            gen_s.append(time.perf_counter() - t0)
            gen_ids = gen_ids or ids
            s, ids, e = engine_run()
            eng_s.append(s)
            eng_ids, engine = eng_ids or ids, engine or e
            console.print(f"[dim]round: generate {gen_s[-1]:.1f} s, engine {eng_s[-1]:.1f} s, load {os.getloadavg()[0]:.1f}[/dim]")
        seq_s = seq_ids = None
        if args.sequential:
            t0 = time.perf_counter()
            seq_ids = generate_batched(model, prompts, eos, tok.pad_token_id, args.max_new_tokens, 1)
            seq_s = time.perf_counter() - t0
        amp = engine_run(autocast=True) if args.autocast else None
    load1 = os.getloadavg()

    ratios = [g / e for g, e in zip(gen_s, eng_s)]
    g_med, e_med = statistics.median(gen_s), statistics.median(eng_s)
    same = sum(a == b for a, b in zip(gen_ids, eng_ids))
    gen_tokens, eng_tokens = sum(map(len, gen_ids)), sum(map(len, eng_ids))
    prompt_tokens = sum(map(len, prompts))
    peak = matmul_flops(reps=30)
    t = Table(title=f"SmolLM2-135M on {n} hackathon cases, max_new_tokens={args.max_new_tokens}, batch "
                    f"{args.batch_size}, {torch.get_num_threads()} threads, {args.rounds} interleaved rounds")
    t.add_column("measure")
    t.add_column("batched generate", justify="right")
    t.add_column("engine", justify="right")
    if seq_s:
        t.add_column("one-at-a-time generate", justify="right")
    extra = lambda *v: list(v) if seq_s else []   # noqa: E731
    t.add_row("seconds (median)", f"{g_med:.1f}", f"{e_med:.1f}", *extra(f"{seq_s:.1f}" if seq_s else ""))
    t.add_row("seconds per round", " ".join(f"{x:.1f}" for x in gen_s), " ".join(f"{x:.1f}" for x in eng_s),
              *extra(""))
    t.add_row("cases / s", f"{n / g_med:.3f}", f"{n / e_med:.3f}", *extra(f"{n / seq_s:.3f}" if seq_s else ""))
    t.add_row("engine speed-up (per round)", "1.00x", f"{statistics.median(ratios):.2f}x ("
              + ", ".join(f"{r:.2f}" for r in ratios) + ")", *extra(f"{g_med / seq_s:.2f}x" if seq_s else ""))
    t.add_row("new tokens", str(gen_tokens), str(eng_tokens), *extra(str(sum(map(len, seq_ids))) if seq_ids else ""))
    t.add_row("outputs identical to batched generate (token ids)", f"{n}/{n}", f"{same}/{n}",
              *extra(f"{sum(a == b for a, b in zip(gen_ids, seq_ids))}/{n}" if seq_ids else ""))
    t.add_row("fraction of fp32 matmul peak", f"{2 * params * (prompt_tokens + gen_tokens) / g_med / peak:.1%}",
              f"{2 * params * (prompt_tokens + eng_tokens) / e_med / peak:.1%}", *extra(""))
    console.print(t)
    if amp:
        a_same = sum(a == b for a, b in zip(amp[1], eng_ids))
        agree = sum(_common(a, b) for a, b in zip(amp[1], eng_ids)) / max(eng_tokens, 1)
        console.print(f"bf16 autocast engine: {amp[0]:.1f} s ({eng_s[-1] / amp[0]:.2f}x the fp32 engine's last round), "
                      f"{a_same}/{n} cases identical to fp32, {agree:.1%} of fp32's tokens before the first "
                      f"difference")
    timing = engine.timing.as_dict()
    total = sum(v for k, v in timing.items() if k.endswith("_s"))
    w = Table(title="where the engine's time goes (first round)")
    w.add_column("phase")
    w.add_column("seconds", justify="right")
    w.add_column("share", justify="right")
    for k in ("prefill_s", "decode_s", "continuation_s", "tools_s", "constrain_s"):
        w.add_row(k.removesuffix("_s"), f"{timing[k]:.2f}", f"{timing[k] / max(total, 1e-9):.0%}")
    console.print(w)
    served = engine.store.hits if engine.store is not None else 0
    common = min(_common(prompts[0], p) for p in prompts)
    console.print(f"prompt tokens {prompt_tokens}, of which the prefix store served {served} ({served / prompt_tokens:.0%}); "
                  f"the start all {n} prompts share: {common} tokens; decode steps {timing['steps']}")
    console.print(f"[dim]matmul peak (1024x576x1536 fp32): {peak / 1e9:.1f} GFLOP/s; load average before "
                  f"{load0[0]:.2f}, after {load1[0]:.2f} (1 min) on {os.cpu_count()} CPUs[/dim]")
    for i, (a, b) in enumerate(zip(gen_ids, eng_ids)):
        if a != b:
            k = _common(a, b)
            console.print(f"[yellow]case {i} differs[/yellow] after {k} tokens: generate="
                          f"{tok.decode(a[k:k + 12])!r} engine={tok.decode(b[k:k + 12])!r}")


if __name__ == "__main__":
    main()
