"""Reading JSONL with errors that name the line; writing files so that a crash never leaves a
half-written one that looks complete."""

from __future__ import annotations

import json
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .errors import ToolkitError


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write to a temporary sibling, then rename over `path` (a rename is atomic on one filesystem)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


@contextmanager
def folder_written_atomically(path: str | Path) -> Iterator[Path]:
    """Yield `.<name>.partial` beside `path` to write a whole folder into (weights, tokenizer, record);
    when the block ends without error it takes the place of `path`. A crash leaves only the partial
    folder, whose name says it is unfinished; a folder at `path` is always one complete write."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    yield tmp
    replace_folder(tmp, path)


def replace_folder(new: str | Path, path: str | Path) -> None:
    """Move the finished folder `new` to `path`, replacing what is there: the old folder is renamed
    aside first and removed last, so `path` is always either the old complete folder or the new one."""
    new, path = Path(new), Path(path)
    old = path.with_name(f".{path.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if path.exists():
        os.replace(path, old)
    os.replace(new, path)
    shutil.rmtree(old, ignore_errors=True)


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-empty line; a broken line stops with a one-line error."""
    path = Path(path)
    if not path.is_file():
        raise ToolkitError("file does not exist", file=str(path))
    for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise ToolkitError(f"malformed JSON: {e.msg} at column {e.colno}", file=str(path), line=n,
                               fix="each line must be one complete JSON object") from e
        if not isinstance(d, dict):
            raise ToolkitError("a line must be a JSON object", file=str(path), line=n)
        yield n, d
