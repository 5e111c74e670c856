"""What the config dataclasses say about their keys: each key's type, default and documenting comment
(the comment above the field, and the one after it on its line), read from the source. The dataclass is
the documentation; docs/configuration.md (scripts/config_reference.py) and each stage's --help
(toolcore.stage_help) are both made from it."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import typing


def field_comments(cls: type) -> dict[str, str]:
    """Each field's documenting comment: the comment lines right above it and the one after it on its line."""
    lines, start = inspect.getsourcelines(cls)
    tree = ast.parse("".join(lines))
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef)).body
    out = {}
    for node in body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        k = node.lineno - 1
        above = []
        while k - 1 >= 0 and lines[k - 1].strip().startswith("#"):
            above.insert(0, lines[k - 1].strip().lstrip("#").strip())
            k -= 1
        line = lines[node.lineno - 1]
        trailing = line.split("#", 1)[1].strip() if "#" in line and "#" not in line.split("=")[0] else ""
        out[node.target.id] = " ".join(above + ([trailing] if trailing else []))
    return out


def type_name(tp: object) -> str:
    text = tp if isinstance(tp, str) else getattr(tp, "__name__", str(tp))
    return str(text).replace("typing.", "").replace("|", "\\|")


def default_text(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
        if dataclasses.is_dataclass(value):
            return ""
    else:
        return "(required)"
    text = repr(value)
    return f"`{text}`" if len(text) <= 60 else f"`{text[:57]}...`"


def rows(cls: type, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(dotted key, type, default, comment) for every field, nested dataclasses' fields after the rest."""
    hints = typing.get_type_hints(cls)
    notes = field_comments(cls)
    out, nested = [], []
    for f in dataclasses.fields(cls):
        tp = hints.get(f.name, f.type)
        if dataclasses.is_dataclass(tp):
            nested.append((f.name, tp))
            continue
        note = notes.get(f.name, "").replace("|", "\\|")
        out.append((prefix + f.name, type_name(tp), default_text(f), note))
    for name, tp in nested:
        out += rows(tp, f"{prefix}{name}.")
    return out
