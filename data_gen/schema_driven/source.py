"""The schema-driven rows of a data_gen run: which attempts are theirs, how one is built and checked,
and their part of the manifest. `data_gen.generate.Generator` holds one `GeneralSource` when
`schema_data.share > 0` and hands it the attempts it `takes`; everything else (splits, shards,
resumption, decontamination against the eval suites, deduplication, records) stays the generator's.

Attempt i is schema-driven when a hash of (seed, i) falls under the share, and draws from its own RNG
seeded by (seed, i): a run stays a pure function of the config (the teacher, when on, excepted), and
the built-in rows of a run with share 0 are exactly those of a run before this module existed.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from toolcore.bfcl import is_bfcl_file, suite_user_texts
from toolcore.conversation import Message
from toolcore.decontam import Decontaminator
from toolcore.errors import ToolkitError
from toolcore.executors import ExecutionContext
from toolcore.formats import get_format
from toolcore.registry import BUILTIN_DIR, ToolRegistry
from toolcore.vocab import Vocabulary

from ..slots import stable_fraction
from .episodes import EpisodeBuilder, GDraft, Prepared, check, prepare, row_id_suffix, row_tags
from .library import build_library, check_disjoint, unseen_library
from .samplers import Sampler, Unsupported


def bfcl_files(paths: list[str]) -> list[Path]:
    """BFCL question files in the given folders/files; folders that are not there are skipped."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += [f for f in sorted(p.glob("*.json")) if is_bfcl_file(f)]
        elif p.is_file():
            if not is_bfcl_file(p):
                raise ToolkitError("not a BFCL question file", file=str(p), field="schema_data.bfcl_paths",
                                   fix="point it at BFCL_v*.json question files or their folder")
            out.append(p)
    return out


def user_tools(registry: ToolRegistry) -> list:
    """Tools from `tool_paths` with no `generation` section: they get schema-driven data."""
    builtin = str(BUILTIN_DIR)
    return [t for t in registry if not t.generation and not str(t.source).startswith(builtin)]


class GeneralSource:
    def __init__(self, cfg: Any, registry: ToolRegistry, vocab: Vocabulary):
        g = self.g = cfg.schema_data
        self.seed, self.holdout = cfg.seed, cfg.holdout
        library = build_library(g.library_size, g.library_seed) if g.library_size else []
        check_disjoint(library, unseen_library())      # the unseen-tool eval suite must stay unseen
        self.unusable: Counter = Counter()
        prepared: list[Prepared] = []
        for lt in library:
            self._add(prepared, lt.tool, lt.domain, lt.family, "library")
        self.user_tools = [t.name for t in user_tools(registry)]
        for t in user_tools(registry):
            # each its own domain: a user's tool can stand as the "cannot serve this" tool for another one
            self._add(prepared, t, f"user:{t.name}", t.name, "user")
        if not prepared:
            raise ToolkitError("no tool to make schema-driven data for", file="configs/data_gen.yaml",
                               field="schema_data.library_size",
                               fix="set schema_data.library_size > 0, add tools without `generation` to tool_paths, "
                                   "or set schema_data.share=0")
        self.library = library
        # whole families held out by hash, like phrasings and values: the eval splits ask for tools never trained on
        held = [p for p in prepared if p.source == "library" and stable_fraction("family:" + p.family) < self.holdout]
        self.pools = {False: [p for p in prepared if p not in held] or prepared,
                      True: [p for p in prepared if p in held or p.source == "user"] or prepared}
        self.sampler = Sampler(vocab, cfg.holdout)
        self.aliases = self.sampler.alias
        self.builder = EpisodeBuilder(self.sampler, cfg.surface, shapes=g.shapes, max_offered=g.max_offered,
                                      optional_share=g.optional_share, mask_share=g.mask_share,
                                      spoken_share=cfg.spoken_share, aliases=self.aliases,
                                      hard_irrelevance=g.hard_irrelevance, inline_share=g.inline_share,
                                      bare_share=g.bare_share, lookalike=g.lookalike,
                                      context_share=cfg.context_share, follow_share=g.follow_share,
                                      long_list_share=g.long_list_share, long_list_max=g.long_list_max,
                                      structured_weight=g.structured_weight, coordinate_share=g.coordinate_share,
                                      max_calls=g.max_calls)
        self.formats = [get_format(f) for f in cfg.verify_formats]
        self.bfcl_files = bfcl_files(g.bfcl_paths)
        self.bfcl = Decontaminator([t for f in self.bfcl_files for t in suite_user_texts(f)], cfg.ngram)
        self.teacher = None
        if g.teacher.url:
            from .teacher import Teacher
            self.teacher = Teacher(g.teacher)
        self.counts: Counter = Counter()

    def _add(self, prepared: list[Prepared], tool, domain: str, family: str, source: str) -> None:
        try:
            prepared.append(prepare(tool, domain, family, source))
        except Unsupported as u:
            if source == "user":
                raise ToolkitError(f"parameter schema this generator cannot draw values for ({u.reason})",
                                   file=tool.source, field=f"{tool.name}.parameters",
                                   fix="give it a type/enum/format, or add a `generation` section") from None
            self.unusable[u.reason] += 1

    def takes(self, i: int) -> bool:
        return stable_fraction(f"general:{self.seed}:{i}") < self.g.share

    def build(self, i: int, eval_pool: bool) -> GDraft:
        rng = random.Random(f"general:{self.seed}:{i}")
        ctx = ExecutionContext(now=datetime(2026, 1, 1) + timedelta(minutes=rng.randrange(365 * 24 * 60)), rng=rng)
        draft = self.builder.build(rng, eval_pool, self.pools[eval_pool], ctx)
        draft.meta["rng"] = rng
        draft.meta["id_suffix"] = row_id_suffix(draft.shape, draft.source, draft.masked)
        return draft

    def check(self, draft: GDraft) -> str | None:
        reason = check(draft, draft.user_text, self.formats, self.aliases) or self.bfcl_reason(draft.user_text)
        if reason is None and self.teacher is not None and draft.meta["rng"].random() < self.g.teacher.share:
            self.polish(draft)
        return reason

    def bfcl_reason(self, text: str) -> str | None:
        reason = self.bfcl.reason(text)
        return reason and reason.replace("decontaminated:", "decontaminated:bfcl_")

    def polish(self, draft: GDraft) -> None:
        """The teacher's rewrite replaces the request only when it passes the same checks again."""
        assert self.teacher is not None
        new, error = self.teacher.rewrite(draft.user_text, draft.meta.get("said", []))
        if new is None:
            self.counts[f"teacher:error:{error}"] += 1
            return
        from .teacher import MAX_CHARS
        if not new or len(new) > MAX_CHARS:
            reason = "length"
        elif new.strip().lower() == draft.user_text.strip().lower():
            reason = "unchanged"
        else:
            reason = check(draft, new, self.formats, self.aliases) or self.bfcl_reason(new)
            reason = reason and reason.removeprefix("general:")
        if reason:
            self.counts[f"teacher:rejected:{reason}"] += 1
            return
        self.counts["teacher:accepted"] += 1
        draft.user_text = new
        draft.conversation.messages[0] = Message.text("user", new)

    def drain(self) -> Counter:
        """Counts since the last call (teacher outcomes): stored with each shard, so they survive a resume."""
        out, self.counts = self.counts, Counter()
        return out

    def manifest(self, records: list[dict[str, Any]], teacher: dict[str, int]) -> dict[str, Any]:
        tagged = [(r, t) for r in records if (t := row_tags(r["id"])) is not None]
        rows, tags = [r for r, _ in tagged], [t for _, t in tagged]
        return {
            "share": self.g.share,
            "rows": len(rows),
            "by_source": {"builtin": len(records) - len(rows), **Counter(t[1] for t in tags)},
            "by_shape": dict(sorted(Counter(t[0] for t in tags).items())),
            "by_shape_per_split": {s: dict(sorted(Counter(t[0] for r, t in zip(rows, tags) if r["split"] == s).items()))
                                   for s in sorted({r["split"] for r in rows})},
            "masked": sum("masked" in t for t in tags),
            "library_size": len(self.library),
            "library_by_domain": dict(sorted(Counter(t.domain for t in self.library).items())),
            "library_families": len({t.family for t in self.library}),
            "eval_only_tools": len(self.pools[True]) if self.pools[True] is not self.pools[False] else 0,
            "unusable_library_tools": dict(self.unusable),
            "user_tools": self.user_tools,
            "bfcl_decontamination_files": [str(f) for f in self.bfcl_files],
            "teacher": {"url": self.g.teacher.url, "model": self.g.teacher.model, **teacher} if self.teacher else None,
        }
