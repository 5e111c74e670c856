"""The data generation config. This dataclass is the documentation: every field says what it does;
fields marked (*) are the ones people usually change. Hydra composes `configs/data_gen.yaml` on top
of it, so an override of a key that does not exist fails at once, and bad combinations fail in
`__post_init__` before any work starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolcore.errors import ToolkitError
from toolcore.formats import FORMATS
from toolcore.suites import BUILTIN_SUITES

from .schema_driven.config import SchemaDataConfig
from .surface import SurfaceConfig

SPLITS = ("train", "validation", "test")


@dataclass
class DataGenConfig:
    # (*) where the DatasetDict and manifest.json are written
    output_dir: str = "data/default"
    # (*) the dataset is a pure function of (seed, config, code)
    seed: int = 0
    # (*) conversations kept over all splits
    num_conversations: int = 25_000
    # share of conversations per split; validation/test draw from held-out phrasings and values
    splits: dict[str, float] = field(default_factory=lambda: {"train": 0.9, "validation": 0.05, "test": 0.05})
    # generation attempts per shard: the unit of resumption after a crash
    shard_size: int = 2_000
    # (*) tools to generate for; empty = every registered tool with a `generation` section
    tools: list[str] = field(default_factory=list)
    # extra tool schema files or folders (a tool = a schema file plus its phrasings)
    tool_paths: list[str] = field(default_factory=list)
    # extra vocabulary folders (<list>.yaml files); a list with a built-in name replaces it
    vocab_paths: list[str] = field(default_factory=list)
    # (*) category mix; see data_gen.compose for what each is
    categories: dict[str, float] = field(default_factory=lambda: {
        "single": 0.46, "multi2": 0.20, "multi3": 0.07, "chitchat": 0.09, "knowledge": 0.08, "unavailable": 0.06,
        "ask_back": 0.04})
    # distractor tools offered beside the needed ones: 0..max_distractors
    max_distractors: int = 4
    # share of phrasings and slot values held out for validation/test (never seen in train)
    holdout: float = 0.15
    # share of utterances in spoken style (disfluencies, no typos, no punctuation)
    spoken_share: float = 0.15
    # (*) how many independent requests a conversation holds, with weights: the earlier ones are finished
    # exchanges (calls, results, answer), each of a category drawn from `categories`; the row's category
    # is its last request's. One tool list serves them all (about half of a one-request row's tokens)
    requests_per_conversation: dict[int, float] = field(default_factory=lambda: {1: 0.5, 2: 0.3, 3: 0.2})
    # chance that a person named in one request is "him/her/them" in the next
    coref_share: float = 0.6
    # chance that a later request of a conversation, or the second call of one tool in a request, takes the
    # near miss of a value set earlier (6 AM then 6 PM, 2 minutes then 2 hours): a minimal pair in one row.
    # Off by default: at 0.5 (4% of rows hold a pair) the demo adapter's figures moved within seed noise
    # (docs/results.md); 0 leaves the dataset as it was without the key
    contrast_share: float = 0.0
    # chance that a request asking one tool twice says it once and lists the values that differ ("the
    # weather in Oslo and Bergen", "alarms at 6 and 6:30": one call each), for the slots a tool's
    # `generation.coordinate` names. 0 leaves the dataset as it was without the key
    coordinate_share: float = 0.0
    # (*) share of text requests with a sentence of context before the ask ("I'm cooking. Set a timer for
    # ten minutes", "We're restocking. Create a purchase order ..."), as people write to an assistant, so
    # the model learns to find the ask inside prose; spoken requests never get one
    context_share: float = 0.35
    # share of no-call conversations offered no tools at all
    no_tools_offered_share: float = 0.2
    surface: SurfaceConfig = field(default_factory=SurfaceConfig)
    # (*) schema-driven rows: tools with no `generation` section (a programmatic library of hundreds,
    # and yours from tool_paths) in every BFCL shape; see data_gen/schema_driven/config.py
    schema_data: SchemaDataConfig = field(default_factory=SchemaDataConfig)
    # formats every call must round-trip through (render -> parse)
    verify_formats: list[str] = field(default_factory=lambda: list(FORMATS))
    # eval suites (built-in names or JSONL paths) no utterance may overlap with; default: every built-in
    # suite (the hackathon 30 and the hand-written held-out set)
    decontaminate_against: list[str] = field(default_factory=lambda: sorted(BUILTIN_SUITES))
    ngram: int = 8
    # peer formats written beside the dataset: openai (TRL, axolotl), sharegpt (LLaMA-Factory)
    export: list[str] = field(default_factory=lambda: ["openai", "sharegpt"])
    # give up when this many attempts per kept conversation were needed (a broken config)
    max_attempts_per_kept: float = 3.0
    # replace an existing complete dataset at output_dir
    overwrite: bool = False
    # (*) split the work over this many independent jobs (docs/cluster.md), e.g. a Slurm array through
    # Hydra's submitit launcher: `-m hydra/launcher=submitit_slurm num_shards=8 shard_index='range(8)'`.
    # Job i makes the attempt blocks i, i+N, i+2N, ... into <output_dir>.partial/ (shared storage);
    # the dataset is the same as a one-process run's with the same seed, whatever N
    num_shards: int = 1
    # which job this is (0 .. num_shards-1); null with num_shards > 1: the merge step, which checks every
    # job's manifest and builds the dataset (a missing or failed job is named, to be rerun alone)
    shard_index: int | None = None
    # blocks each shard job makes beyond its even share of num_conversations, so that the merge finds every
    # block a one-process run would use although jobs keep at slightly different rates
    shard_slack_blocks: int = 1

    def __post_init__(self) -> None:
        def bad(field_: str, msg: str, fix: str | None = None) -> ToolkitError:
            return ToolkitError(msg, file="configs/data_gen.yaml", field=field_, fix=fix)

        if self.num_conversations <= 0:
            raise bad("num_conversations", "must be positive")
        unknown = set(self.splits) - set(SPLITS)
        if unknown or "train" not in self.splits:
            raise bad("splits", f"splits must include train and only use {SPLITS}")
        if abs(sum(self.splits.values()) - 1) > 1e-6 or min(self.splits.values()) < 0:
            raise bad("splits", f"shares must be >= 0 and sum to 1 (got {sum(self.splits.values()):.3f})")
        known = {"single", "multi2", "multi3", "chitchat", "knowledge", "unavailable", "ask_back"}
        if set(self.categories) - known:
            raise bad("categories", f"unknown category {sorted(set(self.categories) - known)[0]!r}",
                      f"use {sorted(known)}")
        if min(self.categories.values()) < 0 or sum(self.categories.values()) <= 0:
            raise bad("categories", "weights must be >= 0 with a positive sum")
        counts = self.requests_per_conversation
        if (not counts or min(counts.values()) < 0 or sum(counts.values()) <= 0
                or any(not str(k).isdigit() or int(k) < 1 for k in counts)):
            raise bad("requests_per_conversation", f"needs counts >= 1 with weights >= 0 and a positive sum (got {counts})",
                      "e.g. {1: 0.5, 2: 0.3, 3: 0.2}")
        for name in ("holdout", "spoken_share", "coref_share", "contrast_share", "no_tools_offered_share",
                     "context_share", "coordinate_share"):
            if not 0 <= getattr(self, name) <= 1:
                raise bad(name, "must be within [0, 1]")
        for f in self.verify_formats:
            if f not in FORMATS:
                raise bad("verify_formats", f"unknown format {f!r}", f"use {list(FORMATS)}")
        for e in self.export:
            if e not in ("openai", "sharegpt"):
                raise bad("export", f"unknown export {e!r}", "use openai and/or sharegpt")
        if self.shard_size <= 0:
            raise bad("shard_size", "must be positive")
        if self.num_shards < 1:
            raise bad("num_shards", "must be >= 1")
        if self.shard_index is not None and not 0 <= self.shard_index < self.num_shards:
            raise bad("shard_index", f"must be within 0..{self.num_shards - 1} (num_shards={self.num_shards})",
                      f"shard_index='range({self.num_shards})' sweeps every job; leave it out to merge")
        if self.shard_slack_blocks < 0:
            raise bad("shard_slack_blocks", "must be >= 0")

    def no_tool_share(self) -> float:
        total = sum(self.categories.values())
        return sum(self.categories.get(c, 0) for c in ("chitchat", "knowledge", "unavailable")) / total

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict
        return asdict(self)
