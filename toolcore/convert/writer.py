"""The toolkit dataset on disk, as data_gen and the converter both write it: a `datasets` DatasetDict
(one row a conversation, the columns of RECORD_FEATURES) with `manifest.json` inside, saved to a
temporary sibling folder and renamed into place, so a folder with a manifest is always complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ..decontam import normalize
from ..files import write_text_atomic

DATASET_FORMAT = "toolkit-dataset/1"
ROOT = Path(__file__).resolve().parents[2]


def record_features():
    from datasets import Features, List, Value

    return Features({"id": Value("string"), "category": Value("string"), "style": Value("string"),
                     "history": Value("bool"), "user_text": Value("string"), "request_starts": List(Value("int64")),
                     "num_calls": Value("int64"),
                     "tool_names": List(Value("string")), "expected_calls": Value("string"),
                     "messages": Value("string"), "tools": Value("string")})


def make_record(id_: str, *, category: str, style: str, history: bool, user_text: str,
                calls: list[dict[str, Any]], messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                request_starts: list[int] | None = None) -> dict[str, Any]:
    """One row: `calls` answer the last user turn (eval's expected calls), `messages` the whole chat.
    `request_starts`: the message index where each independent request begins (data_gen's conversations
    of one to three requests over one tool list); [0] for one conversation whose turns build on each other.
    Training with `data.pack_requests` computes each request apart, after one copy of the tools."""
    return {
        "id": id_, "category": category, "style": style, "history": history, "user_text": user_text,
        "request_starts": list(request_starts or [0]),
        "num_calls": len(calls), "tool_names": [c["name"] for c in calls],
        "expected_calls": json.dumps(calls, ensure_ascii=False),
        "messages": json.dumps(messages, ensure_ascii=False), "tools": json.dumps(tools, ensure_ascii=False),
    }


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts by tool, by number of calls, by category and style; no-call share; distinct utterances."""
    tools = Counter(name for r in records for name in r["tool_names"])
    texts = [normalize(r["user_text"]) for r in records]
    return {
        "conversations": len(records),
        "by_tool": dict(sorted(tools.items())),
        "by_num_calls": {str(k): v for k, v in sorted(Counter(r["num_calls"] for r in records).items())},
        "by_category": dict(sorted(Counter(r["category"] for r in records).items())),
        "by_style": dict(sorted(Counter(r["style"] for r in records).items())),
        "no_tool_share": round(sum(r["num_calls"] == 0 for r in records) / max(1, len(records)), 4),
        "with_history": sum(r["history"] for r in records),
        "distinct_user_utterances": round(len(set(texts)) / max(1, len(texts)), 4),
    }


def decontamination_counts(rejections: Mapping[str, int], against: Iterable[str], ngram: int) -> dict[str, Any]:
    decon = {k.split(":")[1]: v for k, v in rejections.items() if k.startswith("decontaminated:")}
    return {"against": list(against), "ngram": ngram, "dropped": sum(decon.values()), **decon}


def tree_hash(paths: Iterable[Path], root: Path) -> str:
    """sha256 (16 hex digits) over the relative names and bytes of `paths`, in sorted order."""
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.relative_to(root).as_posix().encode())
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def code_version(dirs: Iterable[str] = ("toolcore", "data_gen")) -> dict[str, str]:
    """Git commit (when in a checkout) and a hash of the source and data files that shape the output."""
    files = [p for d in dirs for p in (ROOT / d).rglob("*")
             if p.suffix in (".py", ".yaml", ".jsonl") and "__pycache__" not in p.parts
             and not p.relative_to(ROOT).parts[1:2] == ("configs",)]     # the stages' configs are not code
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {"git_commit": commit or "unknown", "code_hash": tree_hash(files, ROOT)}


def is_dataset_folder(path: str | Path) -> bool:
    """A finished toolkit dataset: a saved DatasetDict with its manifest."""
    path = Path(path)
    return (path / "manifest.json").is_file() and (path / "dataset_dict.json").is_file()


def save_dataset_folder(out: Path, by_split: Mapping[str, list[dict[str, Any]]], manifest: dict[str, Any], *,
                        extra: Callable[[Path], None] | None = None, replace: bool = True) -> bool:
    """Write the splits and the manifest (plus whatever `extra(folder)` adds) to a temporary sibling,
    then rename it to `out`. With replace=False a folder already at `out` (another process finished
    the same work first) is kept and this one dropped; returns whether this write is the one in place."""
    import datasets
    from datasets import Dataset, DatasetDict

    features = record_features()
    dd = DatasetDict({s: Dataset.from_dict({k: [r[k] for r in rs] for k in features}, features=features)
                      for s, rs in by_split.items()})   # (columns, not rows: an empty split keeps its columns)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    datasets.disable_progress_bars()
    dd.save_to_disk(str(tmp))
    if extra:
        extra(tmp)
    write_text_atomic(tmp / "manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False))
    if out.exists() and not replace:
        shutil.rmtree(tmp)
        return False
    if out.exists():
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old)
    else:
        try:
            os.replace(tmp, out)
        except OSError:          # another process renamed its copy into place in between
            shutil.rmtree(tmp)
            return False
    return True
