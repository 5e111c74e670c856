"""The held-out *unseen-tool* eval suite: requests for tools whose domains and names never appear in
training (`unseen_blueprints.py`, checked disjoint from the training library on every run), in every
BFCL shape, as an eval suite JSONL that `python -m eval suite=<path>` loads.

    python -m data_gen.schema_driven.unseen                          # -> data/unseen_tools.jsonl, 300 cases
    python -m data_gen.schema_driven.unseen --out runs/unseen.jsonl --cases 500 --seed 1

Cases use held-out values (the eval pools), real tool names (no masking), the same surface noise and
the same verification as training rows; `difficulty` is the shape. To keep training rows clear of it
too, add the file to `decontaminate_against` when generating.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from toolcore.errors import ToolkitError
from toolcore.executors import ExecutionContext
from toolcore.files import write_text_atomic
from toolcore.formats import FORMATS, get_format
from toolcore.vocab import load_vocabulary

from ..compose import Rejected
from ..surface import SurfaceConfig
from .config import SchemaDataConfig
from .episodes import EpisodeBuilder, check, prepare
from .library import build_library, check_disjoint, unseen_library
from .samplers import Sampler


def build_cases(n: int, seed: int = 0, *, library_size: int = 400, library_seed: int = 0,
                shapes: dict[str, float] | None = None, holdout: float = 0.15) -> tuple[list[dict[str, Any]], Counter]:
    unseen = unseen_library()
    check_disjoint(build_library(library_size, library_seed), unseen)
    tools = [prepare(t.tool, t.domain, t.family, "unseen") for t in unseen]
    sampler = Sampler(load_vocabulary(), holdout)
    defaults = SchemaDataConfig()
    builder = EpisodeBuilder(sampler, SurfaceConfig(), shapes=shapes or defaults.shapes,
                             max_offered=defaults.max_offered, optional_share=defaults.optional_share,
                             mask_share=0.0, spoken_share=0.0, aliases=sampler.alias,
                             inline_share=defaults.inline_share)
    formats = [get_format(f) for f in FORMATS]
    cases: list[dict[str, Any]] = []
    rejected: Counter = Counter()
    seen: set[str] = set()
    for i in range(n * 5):
        if len(cases) >= n:
            break
        rng = random.Random(f"unseen:{seed}:{i}")
        try:
            draft = builder.build(rng, True, tools, ExecutionContext(now=datetime(2026, 1, 1), rng=rng))
        except Rejected as r:
            rejected[r.reason] += 1
            continue
        reason = check(draft, draft.user_text, formats, sampler.alias)
        if reason or draft.user_text.lower() in seen:
            rejected[reason or "duplicate_utterance"] += 1
            continue
        seen.add(draft.user_text.lower())
        cases.append({"id": f"unseen-{draft.shape}-{len(cases)}", "difficulty": draft.shape,
                      "messages": [{"role": "user", "content": draft.user_text}],
                      "tools": [t.to_schema() for t in draft.conversation.tools],
                      "expected_calls": [c.to_dict() for c in draft.expected_calls]})
    return cases, rejected


def write_suite(out: str | Path, n: int = 300, seed: int = 0, **kw: Any) -> dict[str, Any]:
    cases, rejected = build_cases(n, seed, **kw)
    if len(cases) < n:
        raise ToolkitError(f"only {len(cases)} of {n} cases could be made", file=str(out), field="--cases",
                           fix="ask for fewer cases, or add tools to data_gen/schema_driven/unseen_blueprints.py")
    write_text_atomic(Path(out), "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases))
    return {"out": str(out), "cases": len(cases), "by_shape": dict(Counter(c["difficulty"] for c in cases)),
            "tools": len(unseen_library()), "domains": sorted({t.domain for t in unseen_library()}),
            "rejected": dict(rejected)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m data_gen.schema_driven.unseen", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="data/unseen_tools.jsonl")
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--library-size", type=int, default=SchemaDataConfig().library_size,
                    help="the training library it must be disjoint from (schema_data.library_size)")
    args = ap.parse_args(argv)
    try:
        if args.cases <= 0:
            raise ToolkitError("must be positive", field="--cases")
        print(json.dumps(write_suite(args.out, args.cases, args.seed, library_size=args.library_size), indent=2))
    except ToolkitError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
