"""The converter's config (`python -m data_gen.convert`, configs/convert.yaml). This dataclass is the
documentation: every field says what it does; (*) marks the ones people change. Training and eval
convert a raw `data.path` / `suite=` with these defaults (into a cache), so both see the same splits.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import ToolkitError
from ..formats import FORMATS
from ..suites import BUILTIN_SUITES

SPLITS = ("train", "validation", "test")
LAYOUTS = ("openai", "sharegpt", "xlam", "hermes")
WHERE = "configs/convert.yaml"


@dataclass
class ConvertConfig:
    # (*) what to convert: a JSONL / JSON / Parquet file, a folder of them, a `save_to_disk` folder, or a
    # Hugging Face hub dataset id (read with datasets.load_dataset). "sharegpt:path" names the layout.
    source: str = ""
    # (*) the source's layout: openai | sharegpt | xlam | hermes; empty: detected from its columns and rows
    layout: str = ""
    # (*) where the DatasetDict and manifest.json are written
    output_dir: str = "data/converted"
    # hub sources: the dataset's config name and revision (empty: the default ones)
    hub_config: str = ""
    revision: str = ""
    # seeds the train / validation / test cut when the source has no such splits
    seed: int = 0
    # shares of the cut (a source that has some of these splits keeps them; the missing ones are cut
    # from its train rows with these shares)
    splits: dict[str, float] = field(default_factory=lambda: {"train": 0.9, "validation": 0.05, "test": 0.05})
    # eval suites (built-in names or JSONL paths) no user turn may overlap with, as in data_gen
    decontaminate_against: list[str] = field(default_factory=lambda: sorted(BUILTIN_SUITES))
    ngram: int = 8
    # formats every call must render and parse back unchanged in (data_gen checks all of them)
    verify_formats: list[str] = field(default_factory=lambda: list(FORMATS))
    # conversations longer than this many characters (messages + tools as JSON) are dropped
    max_chars: int = 200_000
    # replace an existing dataset at output_dir
    overwrite: bool = False

    def __post_init__(self) -> None:
        def bad(field_: str, msg: str, fix: str | None = None) -> ToolkitError:
            return ToolkitError(msg, file=WHERE, field=field_, fix=fix)

        if self.layout and self.layout not in LAYOUTS:
            raise bad("layout", f"unknown layout {self.layout!r}", f"use one of {', '.join(LAYOUTS)} (or leave it empty)")
        if set(self.splits) - set(SPLITS) or "train" not in self.splits:
            raise bad("splits", f"splits must include train and only use {SPLITS}")
        if min(self.splits.values()) < 0 or abs(sum(self.splits.values()) - 1) > 1e-6:
            raise bad("splits", f"shares must be >= 0 and sum to 1 (got {sum(self.splits.values()):.3f})")
        for f in self.verify_formats:
            if f not in FORMATS:
                raise bad("verify_formats", f"unknown format {f!r}", f"use {list(FORMATS)}")
        if self.max_chars <= 0 or self.ngram <= 0:
            raise bad("max_chars", "max_chars and ngram must be positive")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
