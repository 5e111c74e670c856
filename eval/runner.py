"""Run a model over a suite and score it.

Writes `<output_dir>/predictions.jsonl` (one line per case: id, predicted_calls, f1, latency_ms, plus
expected calls, raw output and parse failures) and `<output_dir>/summary.json` (f1, score,
per-difficulty F1 and the other breakdowns) - both written to a temporary file and renamed.
Both variants, with and without the repair post-processor, are scored every time; `repair`
picks which one is the headline.

Latency means what the hackathon means: one request answered alone, until its calls are written.
A batched run's wall time says nothing about that (each case would be charged the whole batch), so
`latency_cases` cases, spread over the suite, are answered again one at a time; their times give
the p50/p95 and the score's latency term (each level charged the mean of its measured cases).
Batched throughput (cases per second of the batched run) is reported beside it.

Cases go to the model `batch_cases` at a time, with a progress bar; finished batches are saved as they
finish and a killed run resumes after them (eval/resume.py). A BFCL question file (toolcore/bfcl.py)
is a suite too; with `metric="bfcl_ast"` each case is also judged by BFCL's AST checker
(toolcore/bfcl_metric.py): `accuracy` and `accuracy_by_category` join the summary, and each
prediction line says `category`, `bfcl_valid` and `bfcl_error`.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean
from typing import Any, Sequence

from toolcore.bfcl import is_bfcl_file, load_bfcl_cases
from toolcore.bfcl_metric import accuracy_summary, check_case
from toolcore.errors import ToolkitError
from toolcore.files import write_text_atomic
from toolcore.metric import CaseResult, call_f1, summarize
from toolcore.registry import ToolRegistry, load_registry
from toolcore.suites import SPOKEN_SUITES, Case, load_cases, spoken_suite_path

from runtime.baselines.repair import repair_calls
from runtime.models.base import Model, Prediction
from .resume import PredictionStore, content_hash, predict_resumable

METRICS = ("call_f1", "bfcl_ast")


def score(cases: Sequence[Case], predictions: Sequence[Prediction], *, repair: bool,
          latency: Sequence[float] | None = None) -> list[CaseResult]:
    results = []
    for i, (case, pred) in enumerate(zip(cases, predictions)):
        calls = repair_calls(pred.calls, case.tools, case.user_text) if repair else pred.calls
        results.append(CaseResult(case.id, case.difficulty, case.expected_calls, list(calls),
                                  pred.latency_ms if latency is None else latency[i],
                                  pred.on_device, len(pred.parse_failures)))
    return results


def single_request_ms(model: Model, cases: Sequence[Case], n: int) -> dict[int, float]:
    """Answer `n` cases spread over the suite one at a time: time until the calls are written (the
    whole answer when there are none)."""
    picks = sorted({round(k * len(cases) / n) for k in range(n)} & set(range(len(cases)))) if n > 0 else []
    out = {}
    for i in picks:
        pred = model.predict([cases[i]])[0]
        out[i] = pred.details.get("first_call_ms") or pred.latency_ms
    return out


def charged_latency(cases: Sequence[Case], measured: dict[int, float]) -> list[float] | None:
    """Per case: its single-request time, or the mean of the measured cases of its difficulty level."""
    if not measured:
        return None
    overall = mean(measured.values())
    by_level: dict[str, list[float]] = {}
    for i, ms in measured.items():
        by_level.setdefault(cases[i].difficulty, []).append(ms)
    return [measured.get(i, mean(by_level.get(c.difficulty, [overall]))) for i, c in enumerate(cases)]


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def latency_summary(measured: dict[int, float], batched_s: float, cases: int) -> dict[str, Any]:
    ms = list(measured.values())
    return {"single_request_cases": len(ms),
            "single_request_p50_ms": round(_percentile(ms, 0.5), 2) if ms else None,
            "single_request_p95_ms": round(_percentile(ms, 0.95), 2) if ms else None,
            "single_request_mean_ms": round(mean(ms), 2) if ms else None,
            "batched_wall_s": round(batched_s, 3), "batched_cases_per_s": round(cases / batched_s, 3) if batched_s else None}


def _audio_facts(case: Case) -> dict[str, Any]:
    """Spoken cases: the clip and its noise level (None = clean), for the report's SNR breakdown and players."""
    clip = case.user_audio
    if clip is None:
        return {}
    snr = clip.meta.get("snr_db")
    return {"audio": clip.ref, "snr_db": None if snr is None or snr != snr else float(snr)}


def invalid_calls(cases: Sequence[Case], predictions: Sequence[Prediction]) -> dict[str, int]:
    """Predicted calls that no offered schema allows, by kind: a tool that was not offered, a key the
    tool does not have, a required key missing, a value of the wrong type (or out of its enum)."""
    counts = {"unknown_tool": 0, "unknown_key": 0, "missing_required": 0, "wrong_type": 0}
    for case, pred in zip(cases, predictions):
        offered = {t.name: t for t in case.tools}
        for call in pred.calls:
            tool = offered.get(call.name)
            if tool is None:
                counts["unknown_tool"] += 1
                continue
            props = tool.properties
            if set(call.arguments) - set(props):
                counts["unknown_key"] += 1
            elif set(tool.required) - set(call.arguments):
                counts["missing_required"] += 1
            elif tool.validation_errors(call.arguments):
                counts["wrong_type"] += 1
    return counts | {"total": sum(counts.values())}


def assist_counts(predictions: Sequence[Prediction]) -> dict[str, int]:
    """What the opt-in assists changed (runtime/generation.py; all zero under the default decoding): calls
    `next_call_p` opened where the model would have stopped, repeated calls `divert_repeats` wrote again
    with another tool, and how many of those rewrites were taken back."""
    taken = [u for p in predictions for u in p.details.get("assists") or []]
    return {"opened_calls": sum(u.get("assist") == "next_call_p" for u in taken),
            "diverted_calls": sum(u.get("assist") == "divert_repeats" for u in taken),
            "diverted_taken_back": sum(u.get("assist") == "divert_repeats" and bool(u.get("taken_back"))
                                       for u in taken),
            "cases_touched": sum(bool(p.details.get("assists")) for p in predictions)}


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


def _routes(predictions: Sequence[Prediction]) -> dict[str, int] | None:
    """How many cases each part of a router answered (None for other models)."""
    routes = [p.details.get("route") for p in predictions]
    if not any(routes):
        return None
    return {r: routes.count(r) for r in sorted(set(routes), key=str)}


def resolve_spoken_suite(suite: str) -> str:
    """Built-in spoken suites (hackathon30_spoken, ..._noisy) are files data_gen synthesises once
    (TTS is data generation's job; the stages meet at the file)."""
    if suite not in SPOKEN_SUITES:
        return suite
    path = spoken_suite_path(suite)
    if not path.exists():
        raise ToolkitError(f"spoken suite {suite!r} is not built yet", file=str(path), field="suite",
                           fix=f"synthesise it once: python -m data_gen.speech.suites {suite} (make data does all)")
    return str(path)


def load_eval_cases(suite: str, *, split: str, limit: int | None, registry: ToolRegistry,
                    answers: str | None = None, metric: str = "call_f1") -> list[Case]:
    """A suite's cases: a BFCL question file (+ answers) or anything `load_cases` reads."""
    if metric not in METRICS:
        raise ToolkitError(f"unknown metric {metric!r}", field="metric", fix=f"use one of {', '.join(METRICS)}")
    if is_bfcl_file(suite):
        return load_bfcl_cases(suite, answers, limit=limit)
    if metric == "bfcl_ast":
        raise ToolkitError("metric=bfcl_ast scores BFCL question files only", file=str(suite), field="metric",
                           fix="give a BFCL file as suite= (one object a line with question and function)")
    if answers:
        raise ToolkitError("answers= belongs to BFCL question files", file=str(suite), field="answers",
                           fix="drop answers=: this suite carries its expected calls")
    return load_cases(suite, split=split, limit=limit, registry=registry)


def bfcl_verdicts(cases: Sequence[Case], results: Sequence[CaseResult]) -> list[str | None]:
    """Per case: None when BFCL's AST checker passes the (headline) calls, else why it fails."""
    return [check_case(c.raw["category"], c.raw["function"], c.raw["ground_truth"], r.predicted)
            for c, r in zip(cases, results)]


def _accuracy(cases: Sequence[Case], verdicts: Sequence[str | None]) -> dict[str, Any]:
    return accuracy_summary([(c.raw["category"], v is None) for c, v in zip(cases, verdicts)])


def evaluate(model: Model, suite: str, output_dir: str | Path, *, split: str = "test", repair: bool = False,
             limit: int | None = None, tool_paths: Sequence[str] = (), latency_cases: int = 30,
             answers: str | None = None, metric: str = "call_f1", batch_cases: int = 64, progress: bool = True,
             model_config: Any = None) -> dict[str, Any]:
    """Score `model` on `suite`. `model_config` (the model's config, default its name) is part of what
    identifies the run when a killed run is resumed from `output_dir`."""
    registry = load_registry(tool_paths)
    resolved = resolve_spoken_suite(suite)
    cases = load_eval_cases(resolved, split=split, limit=limit, registry=registry, answers=answers, metric=metric)
    out = Path(output_dir)
    identity = {"suite": str(suite), "suite_sha256": content_hash(resolved), "answers": answers,
                "answers_sha256": content_hash(answers), "split": split, "limit": limit, "batch_cases": batch_cases,
                "cases": len(cases), "model": model_config if model_config is not None else {"name": model.name}}
    store = PredictionStore(out / "partial", identity)
    # timing: of the batched run, before the one-at-a-time pass
    predictions, batched_s, timing = predict_resumable(model, cases, store, batch_cases=batch_cases,
                                                       progress=progress)
    measured = single_request_ms(model, cases, min(latency_cases, len(cases)))
    charged = charged_latency(cases, measured)
    variants = {k: score(cases, predictions, repair=k == "repaired", latency=charged) for k in ("raw", "repaired")}
    headline = variants["repaired" if repair else "raw"]
    bfcl = metric == "bfcl_ast"
    verdicts = {k: bfcl_verdicts(cases, v) for k, v in variants.items()} if bfcl else {}
    judged = verdicts.get("repaired" if repair else "raw")
    lines = []
    for i, (case, pred, res) in enumerate(zip(cases, predictions, headline)):
        bfcl_facts = {"category": case.raw["category"], "bfcl_valid": judged[i] is None,
                      "bfcl_error": judged[i]} if judged is not None else {}
        lines.append(json.dumps({
            "id": case.id, "predicted_calls": [c.to_dict() for c in res.predicted], "f1": round(res.f1, 4),
            "latency_ms": round(res.latency_ms, 3), "single_request_ms": _round(measured.get(i)),
            "batched_latency_ms": round(pred.latency_ms, 3), "difficulty": case.difficulty,
            "expected_calls": [c.to_dict() for c in case.expected_calls],
            "raw_predicted_calls": [c.to_dict() for c in pred.calls],
            "f1_without_repair": round(call_f1(case.expected_calls, pred.calls), 4),
            "user_text": case.transcript, "raw_text": pred.raw_text, "parse_failures": pred.parse_failures,
            "tools_offered": [t.name for t in case.tools], **bfcl_facts, **_audio_facts(case), **pred.details,
        }, ensure_ascii=False))
    write_text_atomic(out / "predictions.jsonl", "\n".join(lines) + "\n")
    summary = summarize(headline) | ({"metric": metric} | _accuracy(cases, judged) if judged is not None else {}) | {
        "model": model.name, "suite": str(suite), "split": split if Path(suite).is_dir() else None,
        "answers": answers, "repair": repair,
        "variants": {k: summarize(v) | (_accuracy(cases, verdicts[k]) if bfcl else {}) for k, v in variants.items()},
        "timing": timing, "latency": latency_summary(measured, batched_s, len(cases)),
        "routes": _routes(predictions), "invalid_calls": invalid_calls(cases, predictions),
        "assists": assist_counts(predictions),
        "simulated_tool_results": sum(e.get("simulated", False) for p in predictions
                                      for e in p.details.get("tool_events", [])),
    }
    write_text_atomic(out / "summary.json", json.dumps(summary, indent=2))
    store.clear()
    return summary
