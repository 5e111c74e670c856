"""Generation run: draft -> verify -> decontaminate -> deduplicate -> shard -> DatasetDict.

Attempts are numbered; attempt i draws from its own RNG seeded by (seed, i), and its split is fixed
by i alone, so a run is a pure function of the config. Attempts are grouped into shards of
`shard_size`; a finished shard is written to `<output_dir>.partial/` by write-then-rename, so a
killed run restarts from its last finished shard and ends with the very same dataset (no duplicate,
no loss). The final DatasetDict is saved to a temporary folder and renamed into place with the
manifest inside it: a folder at `output_dir` with a manifest is always complete.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from tqdm.auto import tqdm

from toolcore.convert.writer import (DATASET_FORMAT, code_version, decontamination_counts, make_record,
                                     save_dataset_folder, summary)
from toolcore.decontam import Decontaminator, normalize
from toolcore.errors import ToolkitError
from toolcore.files import write_text_atomic
from toolcore.formats import get_format
from toolcore.registry import load_registry
from toolcore.vocab import load_vocabulary

from .compose import Composer, Draft, Rejected
from .config import SPLITS, DataGenConfig
from .intents import compile_intent
from .templates import count_phrasings
from .verify import Verifier

class Generator:
    """Holds everything compiled from the config; `draft_record(i)` is one attempt."""

    def __init__(self, cfg: DataGenConfig):
        self.cfg = cfg
        registry = load_registry(cfg.tool_paths)
        self.vocab = load_vocabulary(cfg.vocab_paths)
        names = cfg.tools or [t.name for t in registry if t.generation]
        self.intents = [compile_intent(registry[n], self.vocab, holdout=cfg.holdout) for n in names]
        missing = [n for n, i in zip(names, self.intents) if i is None]
        if missing:
            raise ToolkitError(f"tool {missing[0]!r} has no generation section", file="configs/data_gen.yaml",
                               field="tools", fix="remove it from `tools` or add phrasings to its schema file")
        self.tools_without_generation = [t.name for t in registry if not t.generation]
        self.composer = Composer(self.intents, list(registry), self.vocab, holdout=cfg.holdout,
                                 category_weights=cfg.categories, max_distractors=cfg.max_distractors,
                                 spoken_share=cfg.spoken_share, requests_per_conversation=cfg.requests_per_conversation,
                                 coref_share=cfg.coref_share, contrast_share=cfg.contrast_share,
                                 context_share=cfg.context_share, coordinate_share=cfg.coordinate_share,
                                 no_tools_offered_share=cfg.no_tools_offered_share,
                                 surface=cfg.surface)
        self.verifier = Verifier([get_format(f) for f in cfg.verify_formats], self.vocab)
        self.decontam = Decontaminator.from_suites(cfg.decontaminate_against, cfg.ngram)
        self.schema_data = None          # schema-driven rows (data_gen.schema_driven), a share of the attempts
        if cfg.schema_data.share > 0:
            from .schema_driven.source import GeneralSource
            self.schema_data = GeneralSource(cfg, registry, self.vocab)
        # the split of attempt i is fixed by i: a cycle of 1000 slots shared out by the split shares
        cycle, bounds, acc = 1000, [], 0.0
        for s in SPLITS:
            acc += cfg.splits.get(s, 0.0)
            bounds.append((round(acc * cycle), s))
        self.split_of = [next(s for b, s in bounds if k < b) for k in range(cycle)]

    def split_for(self, i: int) -> str:
        return self.split_of[(i * 7919) % len(self.split_of)]  # a stride spreads splits evenly

    def attempt(self, i: int, seen: set[str]) -> tuple[dict[str, Any] | None, str | None]:
        split = self.split_for(i)
        general = self.schema_data is not None and self.schema_data.takes(i)
        rng = random.Random(self.cfg.seed * 1_000_003 + i)
        try:
            draft = self.schema_data.build(i, split != "train") if general else self.composer.build(rng, eval_pool=split != "train")
        except Rejected as r:
            return None, r.reason
        check = self.schema_data.check if general else self.verifier.check
        reason = check(draft) or next(filter(None, (self.decontam.reason(m.content) for m in draft.conversation.messages
                                                    if m.role == "user")), None)
        if reason:
            return None, reason
        key = normalize(draft.user_text)
        if key in seen:
            return None, "duplicate_utterance"
        seen.add(key)
        return to_record(draft, f"{self.cfg.seed}-{i}" + draft.meta.get("id_suffix", ""), split), None


def to_record(d: Draft | Any, id_: str, split: str) -> dict[str, Any]:
    conv = d.conversation.to_dict()
    return make_record(id_, category=d.category, style=d.style, history=d.history, user_text=d.user_text,
                       calls=[c.to_dict() for c in d.expected_calls], messages=conv["messages"],
                       tools=conv["tools"], request_starts=d.meta.get("request_starts")) | {"split": split}


def config_fingerprint(cfg: DataGenConfig) -> str:
    # how the work is split over jobs does not change the dataset (data_gen/sharding.py)
    skip = ("overwrite", "output_dir", "export", "num_shards", "shard_index", "shard_slack_blocks")
    keep = {k: v for k, v in cfg.as_dict().items() if k not in skip}
    # at the value they stand for before they existed, these keys change nothing: datasets made before
    # them stay current
    for section, key, before in (("", "contrast_share", 0.0), ("", "coordinate_share", 0.0),
                                 ("schema_data", "max_calls", 3)):
        where = keep[section] if section else keep
        if where[key] == before:
            del where[key]
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]


def block_paths(work: Path, k: int) -> tuple[Path, Path]:
    """Block k's records and its rejection counts."""
    return work / f"shard-{k:05d}.jsonl", work / f"shard-{k:05d}.stats.json"


def make_block(gen: Generator, work: Path, k: int, seen: set[str]) -> tuple[list[dict], Counter]:
    """Attempts k*shard_size .. (k+1)*shard_size-1, written atomically (stats first, records last: a
    block whose records file exists is complete)."""
    path, stats_path = block_paths(work, k)
    shard, stats = [], Counter()
    for i in range(k * gen.cfg.shard_size, (k + 1) * gen.cfg.shard_size):
        rec, reason = gen.attempt(i, seen)
        if rec is None:
            stats[reason] += 1
        else:
            shard.append(rec)
    if gen.schema_data is not None:
        stats.update(gen.schema_data.drain())   # teacher outcomes: not rejections, split off in the manifest
    write_text_atomic(stats_path, json.dumps(dict(stats)))
    write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in shard))
    return shard, stats


def load_block(work: Path, k: int, seen: set[str]) -> tuple[list[dict], Counter]:
    """A finished block, deduplicated against `seen`. A block of this run was drafted with every earlier
    block's utterances in `seen` already (nothing to drop); a block of a shard job only with its own job's
    (data_gen/sharding.py), so a repeat of an earlier block made by another job is dropped here, and
    counted as the single-process run counts it."""
    path, stats_path = block_paths(work, k)
    shard, stats = [], Counter(json.loads(stats_path.read_text()))
    for line in path.read_text().splitlines():
        r = json.loads(line)
        key = normalize(r["user_text"])
        if key in seen:
            stats["duplicate_utterance"] += 1
        else:
            seen.add(key)
            shard.append(r)
    return shard, stats


def run_shards(gen: Generator, work: Path, *, progress: bool = True,
               on_shard: Callable[[int], None] | None = None,
               on_missing: Callable[[int], None] | None = None) -> tuple[list[dict], Counter, int]:
    """Finish (or resume) shards until enough conversations are kept; returns records in order.
    `on_missing(k)` is called before a block that is not on disk yet is made (the merge of shard
    jobs raises there: it makes nothing itself)."""
    cfg = gen.cfg
    records: list[dict] = []
    rejections: Counter = Counter()
    seen: set[str] = set()
    attempts = 0
    bar = tqdm(total=cfg.num_conversations, desc="verified conversations", unit="conv", disable=not progress)
    for k in itertools.count():
        if block_paths(work, k)[0].exists():   # finished earlier (or by a shard job): reuse it
            shard, stats = load_block(work, k, seen)
        else:
            if on_missing:
                on_missing(k)
            shard, stats = make_block(gen, work, k, seen)
            if on_shard:
                on_shard(k)
        records += shard
        rejections.update(stats)
        attempts += cfg.shard_size
        bar.update(min(len(shard), cfg.num_conversations - bar.n))
        if len(records) >= cfg.num_conversations:
            break
        if attempts > cfg.max_attempts_per_kept * cfg.num_conversations:
            raise ToolkitError(f"only {len(records)} of {attempts} attempts were kept; top rejections: "
                               f"{rejections.most_common(3)}", file="configs/data_gen.yaml",
                               fix="check the tools' phrasings and vocabularies")
    bar.close()
    return records[: cfg.num_conversations], rejections, attempts


def generate(cfg: DataGenConfig, *, progress: bool = True,
             on_shard: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Write the dataset and its manifest to `cfg.output_dir`; return the manifest."""
    out = Path(cfg.output_dir)
    fingerprint = config_fingerprint(cfg)
    if (out / "manifest.json").exists() and not cfg.overwrite:
        manifest = json.loads((out / "manifest.json").read_text())
        if manifest.get("config_fingerprint") == fingerprint:
            return manifest | {"reused": True}
        raise ToolkitError("a dataset made with another config is already there", file=str(out),
                           fix="choose another output_dir or set overwrite=true")
    work = out.parent / f"{out.name}.partial"
    work.mkdir(parents=True, exist_ok=True)
    state = work / "state.json"
    if state.exists() and json.loads(state.read_text()).get("config_fingerprint") != fingerprint:
        raise ToolkitError("an unfinished run with another config is in the way", file=str(work),
                           fix=f"delete {work} to start over")
    if not state.exists():   # shard jobs share the folder: written once
        write_text_atomic(state, json.dumps({"config_fingerprint": fingerprint}))

    t0 = time.perf_counter()
    gen = Generator(cfg)
    t_setup = time.perf_counter() - t0
    on_missing = None
    if cfg.num_shards > 1:   # a job of a sharded run, or the merge of them (data_gen/sharding.py)
        from .sharding import check_shard_jobs, missing_block, run_shard_job
        if cfg.shard_index is not None:
            return run_shard_job(gen, work, fingerprint, progress=progress)
        check_shard_jobs(work, cfg.num_shards, fingerprint)
        on_missing = missing_block(cfg.num_shards)
    records, rejections, attempts = run_shards(gen, work, progress=progress, on_shard=on_shard,
                                               on_missing=on_missing)
    t_gen = time.perf_counter() - t0 - t_setup
    if len(records) < cfg.num_conversations:
        raise ToolkitError("ran out of attempts", file=str(work))

    by_split = {s: [r for r in records if r["split"] == s] for s in SPLITS if cfg.splits.get(s, 0) > 0}
    manifest = build_manifest(cfg, gen, records, by_split, rejections, attempts, fingerprint,
                              seconds={"setup": round(t_setup, 2), "generate": round(t_gen, 2)})

    def exports(folder: Path) -> None:
        from .export import export_split
        for s, rs in by_split.items():
            for kind in cfg.export:
                export_split(rs, folder / "export" / f"{s}.{kind}.jsonl", kind)

    save_dataset_folder(out, by_split, manifest, extra=exports)
    shutil.rmtree(work)
    return manifest


def build_manifest(cfg: DataGenConfig, gen: Generator, records: list[dict], by_split: dict[str, list[dict]],
                   rejections: Counter, attempts: int, fingerprint: str, seconds: dict) -> dict[str, Any]:
    phrasings = {i.name: sum(len(i.phrasings[m][False] + [p for p in i.phrasings[m][True]
                                                          if p not in i.phrasings[m][False]])
                             for m in i.phrasings) for i in gen.intents}
    teacher = {k: rejections.pop(k) for k in list(rejections) if k.startswith("teacher:")}
    variants = {i.name: sum(count_phrasings(p.tree) for m in i.phrasings
                            for p in {id(x): x for x in i.phrasings[m][False] + i.phrasings[m][True]}.values())
                for i in gen.intents}
    rate = seconds["generate"] and len(records) / seconds["generate"]
    return {
        "format": DATASET_FORMAT,
        "config_fingerprint": fingerprint,
        "seed": cfg.seed,
        "code_version": code_version(),
        "splits": {s: len(rs) for s, rs in by_split.items()},
        "total": summary(records),
        "per_split": {s: summary(rs) for s, rs in by_split.items()},
        "tools_generated": [i.name for i in gen.intents],
        "tools_without_generation": gen.tools_without_generation,
        "phrasing_templates": phrasings,
        "phrasing_variants_before_slots": variants,
        "attempts": attempts,
        "rejections": dict(rejections.most_common()),
        "rejection_rate": round(sum(rejections.values()) / max(1, attempts), 4),
        "decontamination": decontamination_counts(rejections, cfg.decontaminate_against, cfg.ngram),
        "seconds": seconds,
        "conversations_per_second": round(rate, 1) if rate else None,
        "schema_data": gen.schema_data.manifest(records, teacher) if gen.schema_data is not None else None,
        "config": cfg.as_dict(),
    }
