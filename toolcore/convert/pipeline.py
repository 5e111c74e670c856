"""The conversion run: source -> layout reader -> checks -> decontamination -> deduplication -> splits
-> the toolkit dataset folder (as data_gen writes it, manifest included).

`convert(cfg)` writes `cfg.output_dir` (the `python -m data_gen.convert` CLI). `resolve_dataset(source)`
is what train (`data.path`, `data.mix`) and eval (`suite=`) call: a toolkit dataset folder is returned
as it is; anything else is converted once, with the default settings, into a cache folder named by the
source's content hash and the settings (`$TOOLKIT_CACHE`, default ~/.cache/toolcall-toolkit), so a
later run, and the other stage, reuse the very same splits.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from ..decontam import Decontaminator
from ..errors import ToolkitError
from ..formats import get_format
from . import hermes, openai, sharegpt, xlam
from .config import LAYOUTS, SPLITS, ConvertConfig
from .detect import detect_layout
from .rows import Reject, RowContext
from .source import Source, is_local, local_hash, open_source, sample_rows, toolkit_split
from .writer import (DATASET_FORMAT, ROOT, code_version, decontamination_counts, is_dataset_folder,
                     save_dataset_folder, summary, tree_hash)

READERS: dict[str, Callable] = {"openai": openai.read, "sharegpt": sharegpt.read, "xlam": xlam.read,
                                "hermes": hermes.read}
HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")
LOCAL_FOLDERS = ("data", "runs", "outputs")   # this project's own folders: data/default is never a hub id
EXAMPLE_CHARS = 300


def split_layout(source: str) -> tuple[str, str]:
    """"sharegpt:data/mine.jsonl" -> ("sharegpt", "data/mine.jsonl"); no known prefix -> ("", source)."""
    head, sep, rest = source.partition(":")
    return (head, rest) if sep and head in LAYOUTS and rest else ("", source)


def check_exists(name: str, field: str) -> None:
    """A local path must exist; a name that cannot be one (its parent folder is not here) is a hub id."""
    path = Path(name)
    if path.exists() or (HUB_ID.fullmatch(name) and not path.parent.exists() and path.parts[0] not in LOCAL_FOLDERS):
        return
    raise ToolkitError("does not exist", file=name, field=field,
                       fix="give a dataset folder (`make data`, python -m data_gen or data_gen.convert), a .jsonl / "
                           ".json / .parquet file, a folder of them, or a hub dataset id")


CODE = ("toolcore/convert/*.py", "toolcore/schema.py", "toolcore/conversation.py", "toolcore/verify.py",
        "toolcore/decontam.py", "toolcore/formats/*.py", "toolcore/suites/*.jsonl")


def converter_code_hash() -> str:
    """What shapes a conversion's output: the converter, schemas and checks, formats, the eval suites."""
    return tree_hash([p for pattern in CODE for p in ROOT.glob(pattern)], ROOT)


def fingerprint(cfg: ConvertConfig, layout: str, content: str) -> str:
    """The source's content, its layout and the settings (the code is not in it: as data_gen's, a rerun
    after an update reuses its output; the cache's key adds the code)."""
    keep = {k: v for k, v in cfg.as_dict().items() if k not in ("source", "layout", "output_dir", "overwrite")}
    blob = json.dumps({"config": keep, "layout": layout, "content": content}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _safe(text: str) -> str:
    return text[:EXAMPLE_CHARS].encode("utf-8", "backslashreplace").decode("utf-8")


class RowConverter:
    """One row in, a kept record or a rejection reason out; `convert_row` never raises."""

    def __init__(self, cfg: ConvertConfig, layout: str):
        self.layout = layout
        self.read = READERS[layout]
        self.ctx = RowContext([get_format(f) for f in cfg.verify_formats], cfg.max_chars)
        self.decon = Decontaminator.from_suites(cfg.decontaminate_against, cfg.ngram)
        self.seen: set[str] = set()

    def record(self, row: Any, where: str) -> dict[str, Any]:
        if not isinstance(row, dict):
            raise Reject("malformed_row", "a row is not an object")
        messages, tools = self.read(row, self.ctx)
        rec = self.ctx.record(messages, tools, where, self.layout)
        for m in messages:
            reason = self.decon.reason(m.content) if m.role == "user" else None
            if reason:
                raise Reject(reason, m.content)
        key = hashlib.sha256((rec["messages"] + "\0" + rec["tools"]).encode()).hexdigest()
        if key in self.seen:
            raise Reject("duplicate")
        self.seen.add(key)
        return rec

    def convert_row(self, row: Any, where: str) -> tuple[dict[str, Any] | None, str, str]:
        """(record, "", "") or (None, reason, detail). `row` may be a function that reads it (decoding
        an Arrow row can fail too)."""
        try:
            return self.record(row() if callable(row) else row, where), "", ""
        except Reject as r:
            return None, r.reason, r.detail
        except RecursionError:
            return None, "too_deep", ""
        except Exception as e:  # noqa: BLE001 - a row the readers did not foresee is a counted rejection
            return None, "malformed_row", f"{type(e).__name__}: {e}"


def read_rows(src: Source, cfg: ConvertConfig, layout: str, *, field: str = "layout",
              progress: bool = False) -> tuple[dict[str, list[dict]], Counter, dict[str, str], dict[str, Any]]:
    """Every row of every split through the reader and the checks. Returns the kept records by toolkit
    split, rejection counts, one example per reason, and facts about the source."""
    from tqdm.auto import tqdm

    names = [s.name for s in src.splits]
    first = next((s for s in src.splits if len(s)), src.splits[0])
    detected = not layout
    layout = layout or detect_layout(first.columns, sample_rows(first), source=src.name, field=field)
    rows = RowConverter(cfg, layout)
    kept: dict[str, list[dict]] = {s: [] for s in SPLITS}
    rejections: Counter = Counter()
    examples: dict[str, str] = {}
    ignored: dict[str, int] = {}

    def reject(reason: str, where: str, detail: str = "") -> None:
        rejections[reason] += 1
        examples.setdefault(reason, _safe(f"{where}: {detail}" if detail else where))

    # eval splits first: a conversation that is in test and in train is kept in test
    order = sorted(src.splits, key=lambda s: {"test": 0, "validation": 1}.get(toolkit_split(s.name, names) or "", 2))
    for split in order:
        target = toolkit_split(split.name, names)
        if target is None:
            ignored[split.name] = len(split)
            continue
        for n, reason in split.bad_lines:
            reject(reason, f"{split.name} line {n}")
        for i in tqdm(range(len(split.rows)), desc=f"converting {split.name}", unit="row", disable=not progress):
            rec, reason, detail = rows.convert_row(lambda: split.rows[i], f"{split.name}-{i}")
            if rec is None:
                reject(reason, f"{split.name}-{i}", detail)
            else:
                kept[target].append(rec)
    facts = {"name": src.name, "kind": src.kind, "layout": layout, "layout_detected": detected,
             "content_sha256_16": src.content_sha256_16,
             "splits": {s.name: len(s) + len(s.bad_lines) for s in src.splits}, "ignored_splits": ignored}
    return kept, rejections, examples, facts


def cut_splits(kept: dict[str, list[dict]], have: set[str], shares: dict[str, float], seed: int) -> list[str]:
    """Splits the source lacks are cut from its train rows (seeded), with their shares of those rows;
    a split with a share gets at least one row when there are enough. Returns the splits cut."""
    missing = [s for s in ("validation", "test") if s not in have and shares.get(s, 0) > 0]
    train = kept["train"]
    order = list(range(len(train)))
    random.Random(seed).shuffle(order)
    start = 0
    for s in missing:
        k = round(len(train) * shares[s])
        if k == 0 and len(train) > len(missing):
            k = 1
        kept[s] = [train[i] for i in sorted(order[start:start + k])]
        start += k
    kept["train"] = [train[i] for i in sorted(order[start:])]
    return missing


def convert_source(src: Source, cfg: ConvertConfig, layout: str, fp: str, out: Path, *, replace: bool = True,
                   field: str = "layout", progress: bool = False) -> dict[str, Any]:
    t0 = time.perf_counter()
    kept, rejections, examples, facts = read_rows(src, cfg, layout, field=field, progress=progress)
    have = {toolkit_split(s.name, [x.name for x in src.splits]) for s in src.splits} - {None}
    created = cut_splits(kept, have, cfg.splits, cfg.seed)
    records = [r for s in SPLITS for r in kept[s]]
    rows_read = sum(facts["splits"].values()) - sum(facts["ignored_splits"].values())
    manifest = {
        "format": DATASET_FORMAT,
        "origin": "convert",
        "config_fingerprint": fp,
        "source": facts,
        "seed": cfg.seed,
        "code_version": code_version(),
        "splits": {s: len(kept[s]) for s in SPLITS},
        "created_splits": created,
        "total": summary(records),
        "per_split": {s: summary(kept[s]) for s in SPLITS},
        "rows_read": rows_read,
        "kept": len(records),
        "rejections": dict(rejections.most_common()),
        "rejection_rate": round(sum(rejections.values()) / max(1, rows_read), 4),
        "rejection_examples": dict(sorted(examples.items())),
        "decontamination": decontamination_counts(rejections, cfg.decontaminate_against, cfg.ngram),
        "seconds": round(time.perf_counter() - t0, 2),
        "config": cfg.as_dict(),
    }
    save_dataset_folder(out, kept, manifest, replace=replace)
    return manifest


def convert(cfg: ConvertConfig, *, progress: bool = False) -> dict[str, Any]:
    """Convert `cfg.source` into a toolkit dataset at `cfg.output_dir`; returns the manifest."""
    hint, name = split_layout(cfg.source)
    layout = cfg.layout or hint
    if not name:
        raise ToolkitError("no source given", file="configs/convert.yaml", field="source",
                           fix="source=my_data.jsonl (or a folder, or a hub dataset id)")
    check_exists(name, "source")
    out = Path(cfg.output_dir)
    done = json.loads((out / "manifest.json").read_text()) if is_dataset_folder(out) else None
    if done and not cfg.overwrite and is_local(name) and done.get("config_fingerprint") == fingerprint(
            cfg, layout, local_hash(name)):
        return done | {"reused": True}
    src = open_source(name, hub_config=cfg.hub_config, revision=cfg.revision, field="source")
    fp = fingerprint(cfg, layout, src.content_sha256_16)
    if done and not cfg.overwrite:
        if done.get("config_fingerprint") == fp:
            return done | {"reused": True}
        raise ToolkitError("a dataset made from another source or config is already there", file=str(out),
                           field="output_dir", fix="choose another output_dir or set overwrite=true")
    return convert_source(src, cfg, layout, fp, out, progress=progress)


def cache_root() -> Path:
    from ..hub import cache_dir

    return cache_dir() / "converted"


_RESOLVED: dict[tuple, Path] = {}


def resolve_dataset(source: str | Path, *, field: str = "data.path") -> Path:
    """A toolkit dataset folder for any source train and eval accept (see the module's docstring)."""
    if is_dataset_folder(source):
        return Path(source)
    layout, name = split_layout(str(source))
    check_exists(name, field)
    path = Path(name)
    stamp = (str(source), path.stat().st_mtime_ns if path.is_file() else None, str(cache_root()))
    if stamp in _RESOLVED and is_dataset_folder(_RESOLVED[stamp]):
        return _RESOLVED[stamp]
    cfg = ConvertConfig(source=str(source))
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", path.name or name)[:48]
    src = None if path.exists() else open_source(name, field=field)
    fp = fingerprint(cfg, layout, local_hash(name) if src is None else src.content_sha256_16)
    out = cache_root() / f"{slug}-{hashlib.sha256((fp + converter_code_hash()).encode()).hexdigest()[:16]}"
    if not is_dataset_folder(out):
        src = src or open_source(name, field=field)
        convert_source(src, cfg, layout, fp, out, replace=False, field=field)
    manifest = json.loads((out / "manifest.json").read_text())
    if not manifest["kept"]:
        top = ", ".join(f"{k} {v}" for k, v in list(manifest["rejections"].items())[:4])
        raise ToolkitError(f"no conversation was kept ({top or 'no rows'})", file=name, field=field,
                           fix=f"see the examples in {out / 'manifest.json'}, or name the layout ('<layout>:{name}')")
    _RESOLVED[stamp] = out
    return out
