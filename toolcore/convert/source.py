"""Opening a source with `datasets`: a JSONL / JSON / Parquet file, a `save_to_disk` folder, or
anything `datasets.load_dataset` reads (a hub dataset id, or a local folder of data files: the same
call). Returns the source's splits and a hash of its content (the conversion cache's key).

One bad line makes `datasets`' JSON reader give up on the whole file; the rows of such a file are then
read line by line (`json`), and each line that is no JSON object becomes a counted rejection.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..errors import ToolkitError
from .writer import tree_hash

JSON_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz")
PARQUET_SUFFIXES = (".parquet",)
SPLIT_NAMES = {"train": "train", "validation": "validation", "valid": "validation", "val": "validation",
               "dev": "validation", "eval": "validation", "test": "test"}


@dataclass
class Split:
    """Rows of one source split: a `datasets.Dataset`, or decoded lines (None for a line that is no JSON
    object) when the file had to be read line by line."""

    name: str
    rows: Any
    columns: list[str]
    bad_lines: list[tuple[int, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rows)


@dataclass
class Source:
    name: str
    kind: str                    # file | saved | load_dataset
    splits: list[Split]
    content_sha256_16: str


def is_local(source: str) -> bool:
    return Path(source).exists()


def local_hash(source: str) -> str:
    path = Path(source)
    if path.is_file():
        return tree_hash([path], path.parent)
    return tree_hash([p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")], path)


def _loaded(name: str, kind: str, loaded: Any, content: str) -> Source:
    from datasets import Dataset

    items = [("train", loaded)] if isinstance(loaded, Dataset) else list(loaded.items())
    return Source(name, kind, [Split(s, ds, list(ds.column_names)) for s, ds in items], content)


def _decode(raw: bytes) -> tuple[Any, str | None]:
    try:
        return json.loads(raw.decode("utf-8")), None
    except UnicodeDecodeError:
        return None, "invalid_unicode"
    except (ValueError, RecursionError):
        return None, "malformed_json"


def read_lines(path: Path) -> Split:
    """The rows of a JSON file `datasets` could not read, each decoded alone: one a line (JSON Lines),
    or the items of one JSON list. Bad ones are kept as (line or item number, reason)."""
    import gzip

    raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    if path.name.lower().endswith((".json", ".json.gz")) and raw.lstrip().startswith(b"["):
        whole, problem = _decode(raw)
        if problem or not isinstance(whole, list):
            raise ToolkitError(f"cannot read it ({problem or 'not a list of rows'})", file=str(path),
                               fix="a .json file holds one list of rows (or write JSON Lines: one row a line)")
        items = [(n, x, None) for n, x in enumerate(whole, start=1)]
    else:
        items = [(n, *_decode(line)) for n, line in enumerate(raw.split(b"\n"), start=1) if line.strip()]
    rows, bad, columns = [], [], {}
    for n, obj, problem in items:
        if problem:
            bad.append((n, problem))
            continue
        if not isinstance(obj, dict):
            bad.append((n, "malformed_row"))
            continue
        rows.append(obj)
        columns.update(dict.fromkeys(obj))
    return Split("train", rows, list(columns), bad)


def open_source(source: str, *, hub_config: str = "", revision: str = "", field: str = "source") -> Source:
    import datasets

    datasets.disable_progress_bars()
    path = Path(source)
    if path.is_file():
        name = path.name.lower()
        if name.endswith(PARQUET_SUFFIXES):
            builder = "parquet"
        elif name.endswith(JSON_SUFFIXES):
            builder = "json"
        else:
            raise ToolkitError("unsupported file type", file=source, field=field,
                               fix="give a .jsonl, .json or .parquet file (or a folder, or a hub dataset id)")
        content = local_hash(source)
        kwargs = {"parse_agent_traces": False} if builder == "json" else {}
        try:
            return _loaded(source, "file", datasets.load_dataset(builder, data_files=str(path), **kwargs), content)
        except Exception as e:  # noqa: BLE001 - a reader failure is the file's: JSON is then read row by row
            if builder == "json":
                return Source(source, "file", [read_lines(path)], content)
            raise ToolkitError(f"cannot read it: {_first_line(e)}", file=source, field=field,
                               fix="check the file (a .json file holds one list of rows; JSON Lines one row a line)") from e
    if path.is_dir() and ((path / "dataset_dict.json").exists() or (path / "state.json").exists()):
        try:
            return _loaded(source, "saved", datasets.load_from_disk(str(path)), local_hash(source))
        except Exception as e:  # noqa: BLE001
            raise ToolkitError(f"cannot load the saved dataset: {_first_line(e)}", file=source, field=field) from e
    # a hub dataset id, or a local folder of data files: datasets.load_dataset reads both
    try:
        loaded = datasets.load_dataset(source, hub_config or None, revision=revision or None)
    except Exception as e:  # noqa: BLE001
        what = "folder" if path.is_dir() else "hub dataset"
        raise ToolkitError(f"cannot load the {what}: {_first_line(e)}", file=source, field=field,
                           fix="give a .jsonl / .json / .parquet file, a dataset folder, or a hub id "
                               "(the hub needs network access)") from e
    if path.is_dir():
        content = local_hash(source)
    else:
        content = hashlib.sha256(json.dumps([source, hub_config, revision, sorted(
            (s, ds._fingerprint) for s, ds in loaded.items())]).encode()).hexdigest()[:16]
    return _loaded(source, "load_dataset", loaded, content)


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:300]


def toolkit_split(name: str, names: Sequence[str]) -> str | None:
    """Which toolkit split a source split feeds: train / validation / test by its name; when no split
    has a known name, every split is training data (to be cut)."""
    if not any(n.lower() in SPLIT_NAMES for n in names):
        return "train"
    return SPLIT_NAMES.get(name.lower())


def sample_rows(split: Split, n: int = 200) -> list[dict[str, Any]]:
    """The first rows that decode to objects (for layout detection)."""
    rows = []
    for i in range(min(n, len(split.rows))):
        try:
            row = split.rows[i]
        except Exception:  # noqa: BLE001 - a row that does not decode is counted later, not looked at here
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows
