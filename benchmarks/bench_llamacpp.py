"""The llama.cpp engine on exported GGUF files against the transformers engine and transformers' batched
`generate`, on the hackathon 30, with the same adapter and the same decoding (greedy, the call grammar).

    python -m train.export runs/demo                     # first: runs/demo/gguf/
    python benchmarks/bench_llamacpp.py --run runs/demo [--types f16 q8_0 q4_k_m] [--max-new-tokens 96]

Printed per backend: wall time for the 30 cases (throughput), single-request latency (each case alone,
until its calls are written: p50 / p95), mean call F1, the hackathon total score computed with that
latency, and how many cases give exactly the transformers engine's calls. The `generate` baseline is the
strongest plain one (bench_eval.py: length-sorted left-padded batches of 16, greedy, first turn only, so
it does less work than the engines' full tool loop). Run it on an idle machine: the load average is printed.
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
from toolcore.suites import load_suite
from toolcore.tokenize import encode_prompt

from bench_eval import generate_batched   # benchmarks/ is on sys.path when run as a script


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def measure(engine, convs, cases, reference=None):
    t0 = time.perf_counter()
    outs = engine.run(convs)
    wall = time.perf_counter() - t0
    single = []
    for conv in convs:                                   # each case alone: until its calls are written
        o = engine.run([conv])[0]
        single.append(o.first_call_ms or o.latency_ms)
    f1 = statistics.mean(call_f1(c.expected_calls, o.calls) for c, o in zip(cases, outs))
    results = [CaseResult(c.id, c.difficulty, c.expected_calls, o.calls, latency_ms=ms)
               for c, o, ms in zip(cases, outs, single)]
    same = None if reference is None else sum(a.calls == b.calls for a, b in zip(reference, outs))
    return outs, {"wall_s": wall, "p50": percentile(single, 0.5), "p95": percentile(single, 0.95), "f1": f1,
                  "score": total_score(results), "same": same}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", default="runs/demo")
    ap.add_argument("--types", nargs="+", default=["f16", "q8_0", "q4_k_m"])
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    run = Path(args.run)
    cases = load_suite("hackathon30")
    convs = [c.conversation for c in cases]
    fmt = get_format("generic")
    gen = GenerationConfig(max_new_tokens=args.max_new_tokens)
    rows = []
    from toolcore.run_record import read_family_record
    from toolcore.hub import resolve_model_path

    base = resolve_model_path(read_family_record(run / "adapter")["path"])
    model, tok = load_model_and_tokenizer(base, adapter=str(run / "adapter"))
    prompts = [encode_prompt(tok, fmt, c) for c in convs]
    eos = sorted({tok.eos_token_id, tok.convert_tokens_to_ids(fmt.turn_end)})
    t0 = time.perf_counter()
    generate_batched(model, prompts, eos, tok.pad_token_id, args.max_new_tokens, 16)
    rows.append(("transformers generate (first turn, batch 16)", {"wall_s": time.perf_counter() - t0}))
    reference, figures = measure(ToolLoopEngine(model, tok, fmt, gen), convs, cases)
    rows.append(("transformers engine (tool loop, batch 16)", figures))
    del model
    for kind in args.types:
        engine = LlamaCppEngine(str(run / "gguf" / f"model-{kind}.gguf"), tok, fmt, gen, threads=args.threads)
        rows.append((f"llama.cpp engine {kind}", measure(engine, convs, cases, reference)[1]))
    base_wall = rows[0][1]["wall_s"]
    table = Table(title=f"hackathon 30, {run} (load average {os.getloadavg()[0]:.2f}, {args.threads} threads)")
    for col in ("backend", "wall s", "x generate", "p50 ms", "p95 ms", "F1", "score", "same calls"):
        table.add_column(col)
    for name, f in rows:
        table.add_row(name, f"{f['wall_s']:.1f}", f"{base_wall / f['wall_s']:.2f}",
                      *(f"{f[k]:.0f}" if k in f else "-" for k in ("p50", "p95")),
                      f"{f['f1']:.3f}" if "f1" in f else "-", f"{f['score']:.1f}" if "score" in f else "-",
                      "-" if f.get("same") is None else f"{f['same']}/30")
    Console().print(table)


if __name__ == "__main__":
    main()
