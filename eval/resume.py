"""Predicting a suite batch by batch, so a killed run resumes where it stopped.

Suites of a thousand cases (BFCL's live files) take long on a CPU. The model gets `batch_cases` cases
at a time; each finished batch is written atomically to `<output_dir>/partial/batch-<first>.json`
(its predictions, wall time and the model's timing counters for that batch), beside `run.json`, what
identifies the run (suite and its content hash, answers, split, limit, batch size, model config).
A rerun with the same identity loads the finished batches and predicts only the rest; a different
identity is refused with a one-line error, so two configs' predictions never mix. The folder is
removed once predictions.jsonl and summary.json are written.

Predictions always go through their saved JSON form, also in a run that is never interrupted, so a
resumed run writes exactly what an uninterrupted one would.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from toolcore.errors import ToolkitError
from toolcore.files import write_text_atomic
from toolcore.schema import ToolCall
from toolcore.suites import Case

from runtime.models.base import Model, Prediction


def content_hash(path: str | Path | None) -> str | None:
    """sha256 of a suite file; for a dataset folder, of its JSON metadata (datasets' state.json holds
    each split's fingerprint, which changes with the data)."""
    if not path:
        return None
    path = Path(path)
    h = hashlib.sha256()
    if path.is_dir():
        for f in sorted([*path.glob("*.json"), *path.glob("*/*.json")]):
            h.update(str(f.relative_to(path)).encode() + b"\0" + f.read_bytes())
    elif path.is_file():
        h.update(path.read_bytes())
    else:
        return None
    return h.hexdigest()


def encode(pred: Prediction) -> dict[str, Any]:
    return {"calls": [c.to_dict() for c in pred.calls], "raw_text": pred.raw_text,
            "parse_failures": list(pred.parse_failures), "latency_ms": pred.latency_ms,
            "on_device": pred.on_device, "details": pred.details}


def decode(d: Mapping[str, Any]) -> Prediction:
    return Prediction([ToolCall.from_dict(c) for c in d["calls"]], raw_text=d["raw_text"],
                      parse_failures=list(d["parse_failures"]), latency_ms=d["latency_ms"],
                      on_device=d["on_device"], details=dict(d["details"]))


class PredictionStore:
    """The finished batches of one run under `folder` (see the module docstring)."""

    def __init__(self, folder: str | Path, identity: Mapping[str, Any]):
        self.folder = Path(folder)
        self.identity = json.loads(json.dumps(identity, sort_keys=True, default=str))
        run_file = self.folder / "run.json"
        if run_file.exists():
            stored = json.loads(run_file.read_text())
            if stored != self.identity:
                differ = sorted(k for k in set(stored) | set(self.identity) if stored.get(k) != self.identity.get(k))
                raise ToolkitError(f"holds an unfinished run of another configuration (differs in: {', '.join(differ)})",
                                   file=str(run_file), fix=f"rerun with the same settings to resume it, or delete "
                                                           f"{self.folder} (or pick another output_dir) to start over")
        else:
            if self.folder.exists():       # batches without run.json: nothing says whose they are
                shutil.rmtree(self.folder)
            write_text_atomic(run_file, json.dumps(self.identity, indent=2, sort_keys=True))

    def _path(self, start: int) -> Path:
        return self.folder / f"batch-{start:07d}.json"

    def load(self, start: int, ids: Sequence[str]) -> dict[str, Any] | None:
        path = self._path(start)
        if not path.exists():
            return None
        batch = json.loads(path.read_text())
        if batch["ids"] != list(ids):
            raise ToolkitError("saved batch holds other cases than the suite's", file=str(path),
                               fix=f"delete {self.folder} to start over")
        return batch

    def save(self, start: int, ids: Sequence[str], preds: Sequence[Prediction], wall_s: float,
             timing: Mapping[str, float] | None) -> dict[str, Any]:
        batch = {"ids": list(ids), "wall_s": wall_s, "timing": dict(timing) if timing else None,
                 "predictions": [encode(p) for p in preds]}
        text = json.dumps(batch, ensure_ascii=False)
        write_text_atomic(self._path(start), text)
        return json.loads(text)

    def clear(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _timing(model: Model) -> dict[str, float] | None:
    t = getattr(model, "timing", None)
    return dict(t) if t else None


def _delta(after: Mapping[str, float] | None, before: Mapping[str, float] | None) -> dict[str, float] | None:
    if after is None:
        return None
    return {k: v - (before or {}).get(k, 0) for k, v in after.items()}


def predict_resumable(model: Model, cases: Sequence[Case], store: PredictionStore, *, batch_cases: int,
                      progress: bool = True) -> tuple[list[Prediction], float, dict[str, float] | None]:
    """Predictions for every case (finished batches loaded, the rest predicted and saved), the summed
    wall time of all batches, and the model's summed timing counters (None for models without)."""
    from tqdm import tqdm

    starts = list(range(0, len(cases), batch_cases))
    ids = {s: [c.id for c in cases[s:s + batch_cases]] for s in starts}
    batches = {s: b for s in starts if (b := store.load(s, ids[s])) is not None}
    done = sum(len(b["ids"]) for b in batches.values())
    if done:
        print(f"resuming: {done} of {len(cases)} cases already predicted ({store.folder})", file=sys.stderr)
    with tqdm(total=len(cases), initial=done, desc=f"eval {model.name}", unit="case", disable=not progress,
              file=sys.stderr, dynamic_ncols=True) as bar:
        for s in starts:
            if s in batches:
                continue
            before = _timing(model)
            t0 = time.perf_counter()
            preds = model.predict(cases[s:s + batch_cases])
            wall = time.perf_counter() - t0
            batches[s] = store.save(s, ids[s], preds, wall, _delta(_timing(model), before))
            bar.update(len(preds))
    predictions = [decode(p) for s in starts for p in batches[s]["predictions"]]
    timings = [batches[s]["timing"] for s in starts if batches[s]["timing"]]
    timing = None
    if timings:
        timing = {k: round(sum(t.get(k, 0) for t in timings), 3) for k in timings[0]}
    return predictions, sum(batches[s]["wall_s"] for s in starts), timing
