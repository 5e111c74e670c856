"""Writes docs/configuration.md, the reference of every config key, from the config dataclasses: each
key's type, default and the comment that documents it in the dataclass (the one place it lives).

    python scripts/config_reference.py            # rewrite docs/configuration.md
    python scripts/config_reference.py --check    # exit 1 if docs/configuration.md is not current
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import sys
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "configuration.md"

# (command, root dataclass "module:Class", key prefix)
STAGES = [
    ("python -m data_gen", "data_gen.config:DataGenConfig", ""),
    ("python -m data_gen.speech", "data_gen.speech.config:SpeechConfig", ""),
    ("python -m train", "train.config:TrainConfig", ""),
    ("python -m eval", "eval.config:EvalConfig", ""),
    ("python -m eval / serve: model.generation (the decoding of Hugging Face models)", "runtime.generation:GenerationConfig",
     "model.generation."),
    ("python -m serve", "serve.config:ServeConfig", ""),
]


def load(spec: str) -> type:
    module, name = spec.split(":")
    return getattr(__import__(module, fromlist=[name]), name)


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


def rows(cls: type, prefix: str) -> list[tuple[str, str, str, str]]:
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


def render() -> str:
    parts = ["# Configuration reference", "",
             "Every key of every stage, generated from the config dataclasses by `python scripts/config_reference.py`",
             "(a test checks it is current). Set any of them on the command line: `key=value`. (*) marks the keys",
             "people change most. `python -m <stage> --cfg job` prints a whole composed config.", ""]
    for command, spec, prefix in STAGES:
        cls = load(spec)
        parts += [f"## `{command}`", "", f"`{spec.replace(':', '.')}`", "", "| key | type | default | what it does |",
                  "| --- | --- | --- | --- |"]
        parts += [f"| `{k}` | {t} | {d} | {n} |" for k, t, d, n in rows(cls, prefix)]
        parts.append("")
    return "\n".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 if the page is not current")
    text = render()
    if ap.parse_args().check:
        current = OUT.exists() and OUT.read_text() == text
        print("docs/configuration.md is current" if current else
              "docs/configuration.md is out of date: run python scripts/config_reference.py")
        return 0 if current else 1
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
