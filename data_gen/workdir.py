"""The start of a resumable data stage (speech, vision): reuse a finished dataset of the same config,
refuse to overwrite one of another config, and prepare `<output_dir>.partial/` for shard files.

A finished dataset is a folder with manifest.json (it appears last, by rename). The partial folder
carries the config fingerprint: shards left by the same config are kept (the run resumes), those of
another config are removed (nothing in them is reusable).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from toolcore.errors import ToolkitError
from toolcore.files import replace_folder, write_text_atomic


def finished_or_refuse(out: Path, fp: str, overwrite: bool, what: str) -> dict[str, Any] | None:
    """The manifest of a finished dataset with this fingerprint (reused), None when there is none or
    overwrite is on; another config's dataset is an error."""
    if not (out / "manifest.json").exists():
        return None
    manifest = json.loads((out / "manifest.json").read_text())
    if manifest.get("config_fingerprint") == fp and not overwrite:
        return {**manifest, "reused": True}
    if not overwrite:
        raise ToolkitError(f"a {what} of another config is already here", file=str(out), field="output_dir",
                           fix="pass overwrite=true, or choose another output_dir")
    return None


def partial_folder(out: Path, fp: str) -> Path:
    """`<out>.partial/` with `shards/`, keeping only what the same config left there."""
    work = out.with_name(out.name + ".partial")
    marker = work / "fingerprint.json"
    if work.exists() and (not marker.exists() or json.loads(marker.read_text()).get("fp") != fp):
        shutil.rmtree(work)
    (work / "shards").mkdir(parents=True, exist_ok=True)
    write_text_atomic(marker, json.dumps({"fp": fp}))
    return work


def publish(work: Path, out: Path) -> None:
    """Move the finished `.partial` folder to `out` (replacing an older dataset there): the folder at
    `out` is always either the old complete dataset or the new one."""
    replace_folder(work, out)
