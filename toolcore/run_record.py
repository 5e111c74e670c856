"""What a saved model folder says about itself: the family it was trained from.

Training writes `toolcall_family.json` into every adapter (and merged model) folder it saves: the
family's name, base model path, tool format and dtype, exactly as the run's `family` config had them.
Whoever loads the folder later (eval, serve) takes the base model and format from it instead of
guessing, and can refuse a contradicting override by naming both values. Older run folders have no
such file; their `config.yaml` one level up (the adapter's run folder) holds the same `family` node.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from .files import write_text_atomic

RECORD = "toolcall_family.json"
KEYS = ("name", "path", "format", "dtype", "kind")


def write_family_record(folder: str | Path, family: Mapping[str, Any], *, whole_model: bool = False) -> Path:
    """`whole_model`: the folder holds every weight (a merged or fully fine-tuned model), so it is its
    own base and the record names no path: the folder may be moved or copied to another machine."""
    record = {k: family[k] for k in KEYS if k in family and family[k] is not None and not (whole_model and k == "path")}
    path = Path(folder) / RECORD
    write_text_atomic(path, json.dumps(record, indent=2) + "\n")
    return path


def read_family_record(folder: str | Path) -> dict[str, Any] | None:
    """The family a saved adapter/model folder was trained from, or None when it does not say."""
    folder = Path(folder)
    if (folder / RECORD).exists():
        return json.loads((folder / RECORD).read_text())
    run_config = folder.parent / "config.yaml"
    if (folder / "adapter_config.json").exists() and run_config.exists():
        import yaml

        family = (yaml.safe_load(run_config.read_text()) or {}).get("family")
        if isinstance(family, dict):
            return {k: family[k] for k in KEYS if family.get(k) is not None}
    return None
