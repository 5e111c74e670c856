"""The call-matching metric of the FunctionGemma hackathon's benchmark.py, reproduced exactly.

A predicted call matches an expected one when the names are equal (case-sensitive) and every
argument key of the expected call is present in the prediction with an equal value: strings are
compared after `strip().lower()`, anything else with Python `==` (so "10" != 10 but 10.0 == 10).
Extra predicted arguments are ignored. Per case, each expected call takes the first unused
matching prediction (greedy), and F1 = 2PR/(P+R). Both lists empty is a perfect 1.0.

The total score weighs F1 with latency and on-device share per difficulty level:
level = 0.60 * mean F1 + 0.15 * max(0, 1 - mean_ms / 500) + 0.25 * on-device share,
total = 100 * (0.20 * easy + 0.30 * medium + 0.50 * hard).
Difficulty is a free label in suites from elsewhere (BFCL's categories, or none), so the total is
taken over the easy / medium / hard levels present, their weights scaled to sum to 1: with all three
present (the hackathon's suites) it is benchmark.py's score exactly; with none it is None.
`summarize` names the levels it covers (`score_levels`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from statistics import mean
from typing import Any, Iterable, Mapping, Sequence

from .schema import ToolCall

LEVEL_WEIGHTS = {"easy": 0.20, "medium": 0.30, "hard": 0.50}
NO_LABEL = "(none)"    # how a case without a difficulty label is grouped in breakdowns


def _as_call(c: ToolCall | Mapping[str, Any]) -> ToolCall:
    return c if isinstance(c, ToolCall) else ToolCall(c.get("name", ""), dict(c.get("arguments") or {}))


def values_equal(expected: Any, predicted: Any) -> bool:
    if isinstance(expected, str) and isinstance(predicted, str):
        return expected.strip().lower() == predicted.strip().lower()
    return expected == predicted


def call_matches(expected: ToolCall, predicted: ToolCall) -> bool:
    if expected.name != predicted.name:
        return False
    return all(k in predicted.arguments and values_equal(v, predicted.arguments[k])
               for k, v in expected.arguments.items())


def match_calls(expected: Sequence, predicted: Sequence) -> int:
    """Number of expected calls matched, each to the first unused matching prediction."""
    exp, pred = [_as_call(c) for c in expected], [_as_call(c) for c in predicted]
    used = [False] * len(pred)
    matched = 0
    for e in exp:
        for j, p in enumerate(pred):
            if not used[j] and call_matches(e, p):
                used[j] = True
                matched += 1
                break
    return matched


def call_f1(expected: Sequence, predicted: Sequence) -> float:
    if not expected and not predicted:
        return 1.0
    if not expected or not predicted:
        return 0.0
    matched = match_calls(expected, predicted)
    precision, recall = matched / len(predicted), matched / len(expected)
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def name_f1(expected: Sequence, predicted: Sequence) -> float:
    """F1 over tool names only (multiset): did the model pick the right tools, whatever the arguments."""
    exp = Counter(_as_call(c).name for c in expected)
    pred = Counter(_as_call(c).name for c in predicted)
    if not exp and not pred:
        return 1.0
    if not exp or not pred:
        return 0.0
    hit = sum((exp & pred).values())
    p, r = hit / sum(pred.values()), hit / sum(exp.values())
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def _pairs_by_name(exp: Sequence[ToolCall], pred: Sequence[ToolCall]) -> list[tuple[ToolCall, ToolCall]]:
    """Each expected call with the unused prediction of the same name that gets most of its arguments
    right (none where no prediction of its name is left)."""
    used = [False] * len(pred)
    pairs = []
    for e in exp:
        best, best_j = -1, -1
        for j, p in enumerate(pred):
            if used[j] or p.name != e.name:
                continue
            score = sum(k in p.arguments and values_equal(v, p.arguments[k]) for k, v in e.arguments.items())
            if score > best:
                best, best_j = score, j
        if best_j >= 0:
            used[best_j] = True
            pairs.append((e, pred[best_j]))
    return pairs


def argument_accuracy(expected: Sequence, predicted: Sequence) -> tuple[int, int]:
    """(correct, total) expected arguments, among expected calls whose tool was predicted.

    Each expected call is paired with the unused prediction of the same name that gets most of its
    arguments right, so a wrong argument is counted once, not hidden by the name score."""
    pairs = _pairs_by_name([_as_call(c) for c in expected], [_as_call(c) for c in predicted])
    correct = sum(k in p.arguments and values_equal(v, p.arguments[k]) for e, p in pairs for k, v in e.arguments.items())
    return correct, sum(len(e.arguments) for e, _ in pairs)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return {list: "array", dict: "object"}.get(type(value), "null")


def error_kinds(expected: Sequence, predicted: Sequence) -> list[str]:
    """What is wrong with a case's calls, in the metric's own terms (empty when F1 is 1.0): no call
    where one was wanted, a call where none was, a wrong tool, too few / too many calls, and, for
    calls of the right tool, an expected argument left out or given a wrong value (by the expected
    value's JSON type, so "wrong value (array)" says the model did not fill a list right)."""
    exp, pred = [_as_call(c) for c in expected], [_as_call(c) for c in predicted]
    if not exp or not pred:
        return [] if not exp and not pred else ["no call"] if exp else ["call where none was wanted"]
    kinds: set[str] = set()
    left_e = sum((Counter(e.name for e in exp) - Counter(p.name for p in pred)).values())
    left_p = sum((Counter(p.name for p in pred) - Counter(e.name for e in exp)).values())
    if min(left_e, left_p):
        kinds.add("wrong tool")
    if left_e > left_p:
        kinds.add("too few calls")
    if left_p > left_e:
        kinds.add("too many calls")
    for e, p in _pairs_by_name(exp, pred):
        for k, v in e.arguments.items():
            if k not in p.arguments:
                kinds.add("argument left out")
            elif not values_equal(v, p.arguments[k]):
                kinds.add(f"wrong value ({_json_type(v)})")
    return sorted(kinds)


def error_counts(cases: Iterable["CaseResult"]) -> dict[str, int]:
    """Cases per error kind (a case with several kinds counts in each), most frequent first."""
    counts = Counter(k for c in cases for k in error_kinds(c.expected, c.predicted))
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


@dataclass
class CaseResult:
    id: str
    difficulty: str
    expected: list[ToolCall]
    predicted: list[ToolCall]
    latency_ms: float = 0.0
    on_device: bool = True
    parse_failures: int = 0

    def __post_init__(self) -> None:
        self.expected = [_as_call(c) for c in self.expected]
        self.predicted = [_as_call(c) for c in self.predicted]

    @property
    def f1(self) -> float:
        return call_f1(self.expected, self.predicted)


def scored_levels(cases: Iterable[CaseResult]) -> list[str]:
    """The hackathon levels (easy, medium, hard) that some case has: what `total_score` covers."""
    present = {c.difficulty for c in cases}
    return [level for level in LEVEL_WEIGHTS if level in present]


def total_score(cases: Iterable[CaseResult]) -> float | None:
    """The benchmark's 0-100 score over the levels present (see above); None when none is."""
    cases = list(cases)
    levels = scored_levels(cases)
    if not levels:
        return None
    total = 0.0
    for level in levels:
        cs = [c for c in cases if c.difficulty == level]
        f1 = mean(c.f1 for c in cs)
        ms = mean(c.latency_ms for c in cs)
        on_device = mean(1.0 if c.on_device else 0.0 for c in cs)
        total += LEVEL_WEIGHTS[level] * (0.60 * f1 + 0.15 * max(0.0, 1 - ms / 500) + 0.25 * on_device)
    return 100 * total / sum(LEVEL_WEIGHTS[level] for level in levels)


def summarize(cases: Sequence[CaseResult]) -> dict[str, Any]:
    """F1, score and the breakdowns a report shows (by difficulty, tool, number of calls)."""
    def mean_f1(cs: Sequence[CaseResult]) -> float:
        return round(mean(c.f1 for c in cs), 4) if cs else 0.0

    groups: dict[str, dict[str, list[CaseResult]]] = {"difficulty": defaultdict(list), "tool": defaultdict(list),
                                                      "num_calls": defaultdict(list)}
    for c in cases:
        groups["difficulty"][c.difficulty or NO_LABEL].append(c)
        groups["num_calls"][str(len(c.expected))].append(c)
        for name in sorted({e.name for e in c.expected}) or ["(none)"]:
            groups["tool"][name].append(c)
    score = total_score(cases)
    arg_ok = arg_total = 0
    for c in cases:
        ok, tot = argument_accuracy(c.expected, c.predicted)
        arg_ok, arg_total = arg_ok + ok, arg_total + tot
    return {
        "cases": len(cases),
        "f1": mean_f1(cases),
        "score": None if score is None else round(score, 2),
        "score_levels": scored_levels(cases),
        "f1_by_difficulty": {k: mean_f1(v) for k, v in sorted(groups["difficulty"].items())},
        "f1_by_tool": {k: mean_f1(v) for k, v in sorted(groups["tool"].items())},
        "f1_by_num_calls": {k: mean_f1(v) for k, v in sorted(groups["num_calls"].items())},
        "errors": error_counts(cases),
        "tool_name_f1": round(mean(name_f1(c.expected, c.predicted) for c in cases), 4) if cases else 0.0,
        "argument_accuracy": round(arg_ok / arg_total, 4) if arg_total else 0.0,
        "parse_failure_rate": round(mean(1.0 if c.parse_failures else 0.0 for c in cases), 4) if cases else 0.0,
        "mean_latency_ms": round(mean(c.latency_ms for c in cases), 3) if cases else 0.0,
        "on_device_share": round(mean(1.0 if c.on_device else 0.0 for c in cases), 4) if cases else 0.0,
    }
