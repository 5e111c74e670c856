"""Writes docs/configuration.md, the reference of every config key, from the config dataclasses: each
key's type, default and the comment that documents it in the dataclass (the one place it lives).

    python scripts/config_reference.py            # rewrite docs/configuration.md
    python scripts/config_reference.py --check    # exit 1 if docs/configuration.md is not current
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "configuration.md"

from toolcore.config_doc import rows  # noqa: E402  (the checkout first on the path)

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
