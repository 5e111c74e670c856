"""Run a model over a suite and score it.

Writes `<output_dir>/predictions.jsonl` (one line per case: id, predicted_calls, f1, latency_ms, plus
expected calls, raw output and parse failures) and `<output_dir>/summary.json` (f1, score,
per-difficulty F1 and the other breakdowns) - both written to a temporary file and renamed.
Both variants, with and without the repair post-processor, are scored every time; `repair`
picks which one is the headline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from toolcore.files import write_text_atomic
from toolcore.metric import CaseResult, call_f1, summarize
from toolcore.registry import load_registry
from toolcore.suites import SPOKEN_SUITES, Case, load_cases

from .baselines.repair import repair_calls
from .models.base import Model, Prediction


def score(cases: Sequence[Case], predictions: Sequence[Prediction], *, repair: bool) -> list[CaseResult]:
    results = []
    for case, pred in zip(cases, predictions):
        calls = repair_calls(pred.calls, case.tools, case.user_text) if repair else pred.calls
        results.append(CaseResult(case.id, case.difficulty, case.expected_calls, list(calls), pred.latency_ms,
                                  pred.on_device, len(pred.parse_failures)))
    return results


def _audio_facts(case: Case) -> dict[str, Any]:
    """Spoken cases: the clip and its noise level (None = clean), for the report's SNR breakdown and players."""
    clip = case.user_audio
    if clip is None:
        return {}
    snr = clip.meta.get("snr_db")
    return {"audio": clip.ref, "snr_db": None if snr is None or snr != snr else float(snr)}


def resolve_spoken_suite(suite: str) -> str:
    """Built-in spoken suites (hackathon30_spoken, ..._noisy) are synthesised on first use."""
    if suite not in SPOKEN_SUITES:
        return suite
    from data_gen.speech.suites import ensure_spoken_suite   # numpy/scipy/TTS: only when needed

    return str(ensure_spoken_suite(suite))


def evaluate(model: Model, suite: str, output_dir: str | Path, *, split: str = "test", repair: bool = False,
             limit: int | None = None, tool_paths: Sequence[str] = ()) -> dict[str, Any]:
    registry = load_registry(tool_paths)
    cases = load_cases(resolve_spoken_suite(suite), split=split, limit=limit, registry=registry)
    predictions = model.predict(cases)
    variants = {"raw": score(cases, predictions, repair=False), "repaired": score(cases, predictions, repair=True)}
    headline = variants["repaired" if repair else "raw"]
    out = Path(output_dir)
    lines = []
    for case, pred, res in zip(cases, predictions, headline):
        lines.append(json.dumps({
            "id": case.id, "predicted_calls": [c.to_dict() for c in res.predicted], "f1": round(res.f1, 4),
            "latency_ms": round(pred.latency_ms, 3), "difficulty": case.difficulty,
            "expected_calls": [c.to_dict() for c in case.expected_calls],
            "raw_predicted_calls": [c.to_dict() for c in pred.calls],
            "f1_without_repair": round(call_f1(case.expected_calls, pred.calls), 4),
            "user_text": case.transcript, "raw_text": pred.raw_text, "parse_failures": pred.parse_failures,
            "tools_offered": [t.name for t in case.tools], **_audio_facts(case), **pred.details,
        }, ensure_ascii=False))
    write_text_atomic(out / "predictions.jsonl", "\n".join(lines) + "\n")
    summary = summarize(headline) | {
        "model": model.name, "suite": str(suite), "split": split if Path(suite).is_dir() else None,
        "repair": repair, "variants": {k: summarize(v) for k, v in variants.items()},
        "timing": getattr(model, "timing", None),
        "simulated_tool_results": sum(e.get("simulated", False) for p in predictions
                                      for e in p.details.get("tool_events", [])),
    }
    write_text_atomic(out / "summary.json", json.dumps(summary, indent=2))
    return summary
