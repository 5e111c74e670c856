"""Data generation throughput: verified conversations per second per core, and the rejection rate.

    python benchmarks/bench_data_gen.py [--attempts 6000]

Printed, all measured in this run:
  * drafting only (compose, no checks) - the baseline the verified rate is a ratio to;
  * the full path (compose + verify + decontaminate + deduplicate + record), per core;
  * where the time goes, stage by stage;
  * all cores at once (one process per core on disjoint attempt ranges): the machine's own limit for
    this workload, and the parallel efficiency against N x the single-process rate;
  * schema-driven rows alone (schema_data.share=1.0: library tools known only by their schema, every BFCL
    shape, masking), per core, with their rejections by reason.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import time
from collections import Counter

from rich.console import Console
from rich.table import Table

from data_gen.config import DataGenConfig
from data_gen.compose import Rejected
from toolcore.decontam import normalize
from data_gen.generate import Generator, to_record


def timed_run(start: int, attempts: int, cfg: DataGenConfig | None = None) -> tuple[float, int, Counter]:
    gen = Generator(cfg or DataGenConfig())
    seen: set[str] = set()
    rejections: Counter = Counter()
    kept = 0
    t0 = time.perf_counter()
    for i in range(start, start + attempts):
        rec, reason = gen.attempt(i, seen)
        if rec is None:
            rejections[reason] += 1
        else:
            kept += 1
    return time.perf_counter() - t0, kept, rejections


def schema_driven_run(attempts: int) -> tuple[float, int, Counter]:
    """Verified schema-driven conversations (data_gen/schema_driven) in one process."""
    from data_gen.schema_driven.config import SchemaDataConfig

    return timed_run(0, attempts, DataGenConfig(schema_data=SchemaDataConfig(share=1.0)))


def stage_breakdown(gen: Generator, attempts: int) -> dict[str, float]:
    t = Counter()
    seen: set[str] = set()
    for i in range(attempts):
        rng = random.Random(i)
        t0 = time.perf_counter()
        try:
            d = gen.composer.build(rng, eval_pool=gen.split_for(i) != "train")
        except Rejected:
            continue
        t1 = time.perf_counter()
        gen.verifier.check(d)
        t2 = time.perf_counter()
        gen.decontam.reason(d.user_text)
        key = normalize(d.user_text)
        seen.add(key)
        t3 = time.perf_counter()
        to_record(d, str(i), "train")
        t4 = time.perf_counter()
        t["compose (slots, phrasing, noise, tool runs, answers)"] += t1 - t0
        t["verify (schema, checks, grounding, re-execution, 5 format round-trips)"] += t2 - t1
        t["decontaminate + deduplicate"] += t3 - t2
        t["record (JSON)"] += t4 - t3
    return dict(t)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--attempts", type=int, default=6000)
    args = ap.parse_args()
    console = Console()
    cores = os.cpu_count() or 1

    gen = Generator(DataGenConfig())
    t0 = time.perf_counter()
    drafted = 0
    for i in range(args.attempts):
        try:
            gen.composer.build(random.Random(i), eval_pool=False)
            drafted += 1
        except Rejected:
            pass
    draft_rate = drafted / (time.perf_counter() - t0)

    seconds, kept, rejections = timed_run(0, args.attempts)
    rate = kept / seconds
    with mp.get_context("fork").Pool(cores) as pool:
        t0 = time.perf_counter()
        parts = pool.starmap(timed_run, [(k * args.attempts, args.attempts) for k in range(cores)])
        wall = time.perf_counter() - t0
    all_kept = sum(p[1] for p in parts)
    all_rate = all_kept / max(p[0] for p in parts)

    table = Table(title=f"data generation, {args.attempts} attempts per process, {cores} cores")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("drafting only (baseline), conv/s", f"{draft_rate:,.0f}")
    table.add_row("verified, conv/s per core", f"{rate:,.0f}")
    table.add_row("verified / drafting-only", f"{rate / draft_rate:.2f}x")
    table.add_row("rejection rate", f"{1 - kept / args.attempts:.2%}")
    table.add_row(f"all {cores} cores, verified conv/s", f"{all_rate:,.0f}")
    table.add_row("parallel efficiency (vs cores x single)", f"{all_rate / (cores * rate):.0%}")
    table.add_row("time for the default 25,000 at one core, s", f"{25_000 / rate:.1f}")
    console.print(table)

    reasons = Table(title="rejections by reason (single process)")
    reasons.add_column("reason")
    reasons.add_column("count", justify="right")
    for r, n in rejections.most_common():
        reasons.add_row(r, str(n))
    console.print(reasons)

    stages = stage_breakdown(gen, min(args.attempts, 3000))
    total = sum(stages.values())
    st = Table(title="where the time goes")
    st.add_column("stage")
    st.add_column("share", justify="right")
    for name, s in stages.items():
        st.add_row(name, f"{s / total:.0%}")
    console.print(st)
    console.print(f"[dim]wall time of the {cores}-process run: {wall:.1f}s[/dim]")

    sd_seconds, sd_kept, sd_rejections = schema_driven_run(args.attempts)
    sd = Table(title=f"schema-driven rows only (schema_data.share=1.0), {args.attempts} attempts, one process")
    sd.add_column("measure")
    sd.add_column("value", justify="right")
    sd.add_row("verified conv/s per core", f"{sd_kept / sd_seconds:,.0f}")
    sd.add_row("rejection rate", f"{1 - sd_kept / args.attempts:.2%}")
    for r, n in sd_rejections.most_common(6):
        sd.add_row(f"  rejected: {r}", str(n))
    console.print(sd)


if __name__ == "__main__":
    main()
