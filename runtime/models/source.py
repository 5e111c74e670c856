"""Which base model, tool format and dtype a model config means, from three places in this order:

  1. what the config sets itself (`model.path`, `model.format`, `model.dtype`: null unless overridden);
  2. what the adapter (or merged model) folder records about its training run (toolcore/run_record.py);
  3. the model family the config names (`model.family`, composed from configs/family/<name>.yaml: the
     same file training reads, so a family is described once).

An adapter trained on one base model or format is never silently loaded on another: when the config
(1 or 3) names a different base or format than the adapter's record, loading fails naming both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from toolcore.errors import ToolkitError
from toolcore.run_record import read_family_record


@dataclass(frozen=True)
class ModelSource:
    path: str
    format: str
    dtype: str
    family: str | None      # the family name, when one is known


def same_model(a: str, b: str) -> bool:
    """Two spellings of one base model: equal strings, or the same local folder."""
    if str(a) == str(b):
        return True
    from toolcore.hub import resolve_model_path   # the offline alias `smollm2` names a cache folder

    pa, pb = (Path(resolve_model_path(str(x))).expanduser() for x in (a, b))
    try:
        return pa.exists() and pb.exists() and pa.resolve() == pb.resolve()
    except OSError:
        return False


def resolve_source(*, family: Mapping[str, Any] | None = None, path: str | None = None, format: str | None = None,
                   dtype: str | None = None, adapter: str | None = None, default_dtype: str = "float32",
                   field: str = "model") -> ModelSource:
    family = dict(family or {})
    record = read_family_record(adapter) if adapter else (read_family_record(path) if path else None)
    record = record or {}
    where = f"the adapter's training record ({adapter})" if adapter else f"the model folder's record ({path})"
    for key, given, compare in (("path", path, same_model), ("format", format, str.__eq__)):
        theirs = record.get(key)
        if theirs is None:
            continue
        for value, source, fix in (
                (given, f"{field}.{key}", f"drop {field}.{key} (the record names it) or set it to {theirs}"),
                (family.get(key), f"family {family.get('name')!r} ({field}.family.{key})",
                 f"use {field}=hf (it takes base and format from the record) or the family it was trained from")):
            if value is not None and not compare(str(value), str(theirs)):
                raise ToolkitError(f"{source} is {value!r} but {where} says {key} {theirs!r}",
                                   field=f"{field}.{key}", fix=fix)
            if value is not None:
                break   # an explicit value that agrees settles it; the family is not asked
    chosen_path = path or record.get("path") or family.get("path")
    # with nothing saying otherwise a model is prompted in the generic format (as `model=hf` always was)
    chosen_format = format or record.get("format") or family.get("format") or "generic"
    if not chosen_path:
        raise ToolkitError("no base model given", field=f"{field}.path",
                           fix=f"set {field}.path (a hub id or folder), pick a family (model=smollm2), "
                               f"or give {field}.adapter of a toolkit training run")
    chosen_dtype = dtype or family.get("dtype") or record.get("dtype") or default_dtype
    return ModelSource(str(chosen_path), str(chosen_format), str(chosen_dtype),
                       family.get("name") or record.get("name"))
