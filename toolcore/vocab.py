"""Slot vocabularies: curated lists of values users mention (cities, names, songs...).

Each list is a YAML file `<name>.yaml` with `entries`: a plain string, or a mapping with
`value` (the canonical argument value), optional `say` (other surface forms a user may use), optional
`weight` (how often a phrasing grammar's slot draws the entry against the list's others, default 1) and
any extra fields (gender, artist, reply, a city's country and state). Built-in lists live in `toolcore/vocab/`; users add
folders with `vocab_paths`. A song with an `artist` may also be asked for as "<title> by <artist>".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from .errors import ToolkitError

BUILTIN_VOCAB_DIR = Path(__file__).parent / "vocab"


@dataclass(frozen=True)
class Entry:
    value: str
    say: tuple[str, ...]
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    weight: float = 1.0


def _entry(raw: Any, *, file: str, index: int) -> Entry:
    if isinstance(raw, (str, int, float)) and not isinstance(raw, bool):
        return Entry(str(raw), (str(raw),))
    if not isinstance(raw, dict) or not isinstance(raw.get("value"), (str, int, float)):
        raise ToolkitError("an entry must be a string or a mapping with a string 'value'", file=file,
                           field=f"entries[{index}]", fix="quote values YAML would read as booleans (Yes/No/On)")
    value = str(raw["value"]).strip()
    say = [str(s).strip() for s in raw.get("say") or [value]]
    if raw.get("artist"):
        say += [f"{s} by {raw['artist']}" for s in say]
    weight = raw.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight < math.inf:
        raise ToolkitError(f"weight {weight!r} is not a positive number", file=file, field=f"entries[{index}].weight",
                           fix="give a number above 0 (1 = as often as an entry without one)")
    extra = {k: v for k, v in raw.items() if k not in ("value", "say", "weight")}
    return Entry(value, tuple(dict.fromkeys(say)), extra, float(weight))


class Vocabulary:
    """All lists by name; `aliases` maps a canonical value (lowercased) to every surface form."""

    def __init__(self, lists: dict[str, list[Entry]]):
        self.lists = lists
        self.aliases: dict[str, set[str]] = {}
        for entries in lists.values():
            for e in entries:
                self.aliases.setdefault(e.value.lower(), set()).update(s.lower() for s in e.say)

    def __getitem__(self, name: str) -> list[Entry]:
        try:
            return self.lists[name]
        except KeyError:
            raise ToolkitError(f"unknown vocabulary {name!r}", field="vocab",
                               fix=f"add {name}.yaml to a vocab folder; known: {', '.join(sorted(self.lists))}") from None

    def values(self, name: str) -> list[str]:
        return [e.value for e in self[name]]


def load_vocab_file(path: Path) -> list[Entry]:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ToolkitError(f"cannot read vocabulary: {e}".replace("\n", " "), file=str(path)) from e
    entries = data.get("entries") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        raise ToolkitError("no entries", file=str(path), field="entries", fix="add a non-empty `entries:` list")
    return [_entry(raw, file=str(path), index=i) for i, raw in enumerate(entries)]


def load_vocabulary(paths: Iterable[str | Path] = (), *, builtin: bool = True) -> Vocabulary:
    """Built-in lists plus user folders; a user list with a built-in name replaces it."""
    lists: dict[str, list[Entry]] = {}
    folders = ([BUILTIN_VOCAB_DIR] if builtin else []) + [Path(p) for p in paths]
    for folder in folders:
        if not folder.is_dir():
            raise ToolkitError("vocabulary folder does not exist", file=str(folder))
        for f in sorted(folder.glob("*.yaml")):
            lists[f.stem] = load_vocab_file(f)
    return Vocabulary(lists)
