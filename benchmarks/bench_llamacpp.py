"""The llama.cpp engine on exported GGUF files against the transformers engine and transformers' batched
`generate`, with the same adapter and the same decoding (greedy, the call grammar), on the hackathon 30,
the hand-written set and the first 300 cases of the generated test split.

    python -m train.export runs/demo                     # first: runs/demo/gguf/
    python benchmarks/bench_llamacpp.py --run runs/demo [--types f16 q8_0 q4_k_m] [--parallel 4]

Per suite and backend: wall time for the whole suite (throughput, and as a multiple of `generate`), mean
call F1, and how many cases give exactly the transformers engine's calls. The `generate` baseline is the
strongest plain one (bench_eval.py: length-sorted left-padded batches of 16, greedy, first turn only, so
it does less work than the engines' full tool loop: the "calls handed back" row ends each conversation
with its first turn's calls, unexecuted, as the server does, which is generate's work). Each GGUF runs plain (one pass a generated id) and
drafted (runtime/drafting.py); the drafted run must give the plain run's calls and text: where a text
differs, the two top logits of the plain run at the first differing id are printed (a near-tie that a pass
over several ids rounds the other way). Then single-request latency on the hackathon 30 (each case alone,
until its calls are written: p50 / p95) and the hackathon total score computed with it: "cold" clears
llama.cpp's cache before every request; "tools kept" has the case's system prompt and tools computed
already (`hold_prefix`), as an app that asks over the same tools again has them. Run it on an idle
machine: the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from runtime.engine import GenerationConfig, ToolLoopEngine
from runtime.llamacpp_engine import LlamaCppEngine
from runtime.models.hf import load_model_and_tokenizer
from toolcore.formats import get_format
from toolcore.metric import CaseResult, call_f1, total_score
from toolcore.suites import load_cases
from toolcore.tokenize import encode_prompt

from bench_eval import generate_batched   # benchmarks/ is on sys.path when run as a script


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def suite_figures(engine, cases, reference=None) -> tuple[list, dict]:
    accepted = dict(engine.drafts.accepted) if hasattr(engine, "drafts") else None
    if hasattr(engine, "lc"):       # cold: a run must not find the previous run's prompts in the cache
        engine.lc.clear()
    t0 = time.perf_counter()
    outs = engine.run([c.conversation for c in cases])
    wall = time.perf_counter() - t0
    f1 = statistics.mean(call_f1(c.expected_calls, o.calls) for c, o in zip(cases, outs))
    same = None if reference is None else sum(a.calls == b.calls for a, b in zip(reference, outs))
    figures = {"wall_s": wall, "f1": f1, "same": same, "n": len(cases)}
    if accepted is not None:
        figures["passes_saved"] = sum(engine.drafts.accepted.values()) - sum(accepted.values())
    return outs, figures


def divergences(engine, cases, plain, drafted) -> list[str]:
    """For each case whose drafted text differs from the plain one: where, the plain run's two top logits
    there (recomputed by one pass over the prompt and the ids before it), and that pass's logits of the two
    ids the runs chose: under the grammar the top ids may be ones it forbids, so the chosen ids' gap is the
    one that says whether it was a near-tie."""
    import numpy as np

    lines = []
    for case, a, b in zip(cases, plain, drafted):
        if a.output_ids == b.output_ids:
            continue
        k = next((i for i, (x, y) in enumerate(zip(a.output_ids, b.output_ids)) if x != y),
                 min(len(a.output_ids), len(b.output_ids)))
        ids = encode_prompt(engine.tok, engine.fmt, case.conversation) + a.output_ids[:k]
        engine.lc.keep(0, 0)
        logits = engine.lc.feed(0, ids, logits=True)
        top = np.argsort(-logits)[:2]
        said = ", ".join(f"{engine.tok.decode([int(t)])!r} {logits[t]:.3f}" for t in top)
        chosen = [o.output_ids[k] for o in (a, b) if k < len(o.output_ids)]
        gap = f"; chosen: plain {logits[chosen[0]]:.3f}, drafted {logits[chosen[1]]:.3f}" if len(chosen) == 2 else ""
        lines.append(f"{case.id}: id {k} ({'calls the same' if a.calls == b.calls else 'CALLS DIFFER'}); "
                     f"plain {engine.tok.decode(a.output_ids[k:k + 2])!r}, drafted {engine.tok.decode(b.output_ids[k:k + 2])!r}; "
                     f"top logits {said}{gap}")
    return lines


def latency(engine, cases, *, cold: bool) -> dict:
    single, outs = [], []
    for case in cases:
        if cold and hasattr(engine, "lc"):
            engine.lc.clear()
        elif hasattr(engine, "hold_prefix"):
            engine.hold_prefix(case.conversation)
        o = engine.run([case.conversation])[0]
        outs.append(o)
        single.append(o.first_call_ms or o.latency_ms)
    results = [CaseResult(c.id, c.difficulty, c.expected_calls, o.calls, latency_ms=ms)
               for c, o, ms in zip(cases, outs, single)]
    return {"p50": percentile(single, 0.5), "p95": percentile(single, 0.95), "mean": statistics.mean(single),
            "score": total_score(results)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", default="runs/demo")
    ap.add_argument("--types", nargs="+", default=["f16", "q8_0"])
    ap.add_argument("--suites", nargs="*", default=["hackathon30", "handwritten", "data/default"],
                    help="suites for the throughput tables (none: the latency table only)")
    ap.add_argument("--test-cases", type=int, default=300, help="cases of a dataset folder's test split")
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--parallel", type=int, default=4, help="llama.cpp sequences decoded together")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--no-transformers", action="store_true",
                    help="llama.cpp rows only (plain against drafted), without the transformers baselines")
    ap.add_argument("--draft-tokens", type=int, default=8, help="the drafted runs' model.draft_tokens")
    ap.add_argument("--no-latency", action="store_true", help="the throughput tables only")
    ap.add_argument("--draft-lookup", action="store_true", help="the drafted runs' model.draft_lookup")
    args = ap.parse_args()
    run = Path(args.run)
    fmt = get_format("generic")
    gen = GenerationConfig(max_new_tokens=args.max_new_tokens)
    from toolcore.hub import resolve_model_path
    from toolcore.run_record import read_family_record

    base = resolve_model_path(read_family_record(run / "adapter")["path"])
    model, tok = load_model_and_tokenizer(base, adapter=str(run / "adapter"))
    eos = sorted({tok.eos_token_id, tok.convert_tokens_to_ids(fmt.turn_end)})
    hf_engine = ToolLoopEngine(model, tok, fmt, gen)
    engines = {(kind, k): LlamaCppEngine(str(run / "gguf" / f"model-{kind}.gguf"), tok, fmt, gen, parallel=args.parallel,
                                         threads=args.threads, draft_tokens=k,
                                         draft_lookup=args.draft_lookup)
               for kind in args.types for k in (0, args.draft_tokens)}
    console = Console(width=180)
    for suite in args.suites:
        cases = load_cases(suite, limit=args.test_cases if Path(suite).is_dir() else None)
        rows, reference = [], None
        if not args.no_transformers:
            prompts = [encode_prompt(tok, fmt, c.conversation) for c in cases]
            t0 = time.perf_counter()
            generate_batched(model, prompts, eos, tok.pad_token_id, args.max_new_tokens, 16)
            rows.append(("transformers generate (first turn, batch 16)", {"wall_s": time.perf_counter() - t0}))
            reference, figures = suite_figures(hf_engine, cases)
            rows.append(("transformers engine (tool loop, batch 16)", figures))
        notes, plain = [], {}
        for (kind, k), engine in engines.items():
            outs, figures = suite_figures(engine, cases, reference)
            if k == 0:
                plain[kind] = outs
            else:
                figures["same_plain"] = (sum(a.calls == b.calls for a, b in zip(plain[kind], outs)),
                                         sum(a.output_ids == b.output_ids for a, b in zip(plain[kind], outs)))
                notes += [f"{kind}: {line}" for line in divergences(engine, cases, plain[kind], outs)]
            rows.append((f"llama.cpp {kind} {'drafted' if k else 'plain'} ({args.parallel} sequences)", figures))
            if k:   # the first turn's calls handed back unexecuted, as the server does: generate's work
                engine.hand_back = lambda conv, calls: True
                rows.append((f"llama.cpp {kind} drafted, calls handed back", suite_figures(engine, cases, reference)[1]))
                engine.hand_back = None
        base_wall = None if args.no_transformers else rows[0][1]["wall_s"]
        table = Table(title=f"{suite} ({len(cases)} cases), {run}: load average {os.getloadavg()[0]:.2f}, "
                            f"{args.threads} threads")
        for col in ("backend", "wall s", "x generate", "F1", "same calls as transformers",
                    "drafted = plain: calls / text", "passes saved"):
            table.add_column(col)
        for name, f in rows:
            same_plain = f.get("same_plain")
            table.add_row(name, f"{f['wall_s']:.1f}", f"{base_wall / f['wall_s']:.2f}" if base_wall else "-",
                          f"{f['f1']:.3f}" if "f1" in f else "-",
                          "-" if f.get("same") is None else f"{f['same']}/{f['n']}",
                          "-" if same_plain is None else f"{same_plain[0]}/{f['n']} / {same_plain[1]}/{f['n']}",
                          str(f.get("passes_saved", "-")) if same_plain else "-")
        console.print(table)
        for line in notes:
            console.print(f"  text differs: {line}")
    if args.no_latency:
        return
    cases = load_cases("hackathon30")
    table = Table(title=f"hackathon 30, one request alone until its calls (load average {os.getloadavg()[0]:.2f})")
    for col in ("backend", "cache", "p50 ms", "p95 ms", "mean ms", "total score"):
        table.add_column(col)
    if not args.no_transformers:
        hf_engine.cfg.batch_size = 1
        f = latency(hf_engine, cases, cold=False)
        table.add_row("transformers engine", "prefix store", f"{f['p50']:.0f}", f"{f['p95']:.0f}", f"{f['mean']:.0f}",
                      f"{f['score']:.1f}")
    for (kind, k), engine in engines.items():
        for cold in (True, False):
            f = latency(engine, cases, cold=cold)
            table.add_row(f"llama.cpp {kind} {'drafted' if k else 'plain'}", "cold" if cold else "tools kept",
                          f"{f['p50']:.0f}", f"{f['p95']:.0f}", f"{f['mean']:.0f}", f"{f['score']:.1f}")
    console.print(table)
    for (kind, k), engine in engines.items():
        if k:
            shares = engine.drafts.shares()
            console.print(f"llama.cpp {kind}, drafted ids the model took, all runs: "
                          + ", ".join(f"{s} {engine.drafts.accepted[s]}/{engine.drafts.proposed[s]} ({shares[s]:.0%})"
                                      for s in shares))


if __name__ == "__main__":
    main()
