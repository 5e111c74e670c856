"""The metric against hand-made cases whose scores follow the hackathon benchmark's rules."""

import pytest

from toolcore.metric import (CaseResult, argument_accuracy, call_f1, error_counts, error_kinds, name_f1, summarize,
                             total_score)


def c(name, **args):
    return {"name": name, "arguments": args}


CASES = [
    # (expected, predicted, f1, why)
    ([], [], 1.0, "both empty"),
    ([c("t", minutes=5)], [], 0.0, "nothing predicted"),
    ([], [c("t", minutes=5)], 0.0, "call where none expected"),
    ([c("set_timer", minutes=10)], [c("set_timer", minutes="10")], 0.0, 'string "10" is not integer 10'),
    ([c("set_timer", minutes=10)], [c("set_timer", minutes=10.0)], 1.0, "10.0 == 10 in Python"),
    ([c("w", location="San Francisco")], [c("w", location="  san francisco ")], 1.0, "strings: strip + lower"),
    ([c("m", message="good morning")], [c("m", message="good morning.")], 0.0, "punctuation is not removed"),
    ([c("w", location="Paris")], [c("W", location="Paris")], 0.0, "names are case-sensitive"),
    ([c("w", location="Paris")], [c("w", location="Paris", unit="C")], 1.0, "extra arguments are ignored"),
    ([c("a", hour=7, minute=0)], [c("a", hour=7)], 0.0, "a missing expected key fails"),
    ([c("w", location="Paris"), c("w", location="London")], [c("w", location="London"), c("w", location="Paris")],
     1.0, "order-insensitive, same tool twice"),
    ([c("w", location="Paris"), c("w", location="London")], [c("w", location="Paris"), c("w", location="Paris")],
     0.5, "a prediction is used once: duplicates do not match twice"),
    ([c("w", location="Paris")], [c("w", location="Paris"), c("w", location="Paris")], 2 / 3, "P=1/2 R=1"),
    ([c("a", x=1), c("b", y=2), c("c", z=3)], [c("a", x=1)], 0.5, "P=1 R=1/3"),
    ([c("a", x=1)], [c("b", x=1)], 0.0, "wrong tool"),
    ([c("a", flag=True)], [c("a", flag=1)], 1.0, "True == 1 under Python =="),
    ([c("a", items=[1, 2])], [c("a", items=[1, 2])], 1.0, "lists compare with =="),
    ([c("a", items=[])], [c("a", items=[])], 1.0, "empty list argument"),
]


@pytest.mark.parametrize("expected, predicted, f1, why", CASES, ids=[x[3] for x in CASES])
def test_call_f1_matches_benchmark_rules(expected, predicted, f1, why):
    assert call_f1(expected, predicted) == pytest.approx(f1)


def test_greedy_first_unused_match():
    # the first expected call grabs the first matching prediction even if a later one would fit better
    expected = [c("a", x=1), c("a", x=1, y=2)]
    predicted = [c("a", x=1, y=2), c("a", x=1)]
    assert call_f1(expected, predicted) == 0.5


def test_total_score_formula():
    fast = [CaseResult("e", "easy", [], [], latency_ms=0.0), CaseResult("m", "medium", [], [], latency_ms=250.0),
            CaseResult("h", "hard", [], [], latency_ms=1000.0, on_device=False)]
    easy = 0.6 + 0.15 * 1 + 0.25
    medium = 0.6 + 0.15 * 0.5 + 0.25
    hard = 0.6 + 0.0 + 0.0
    assert total_score(fast) == pytest.approx(100 * (0.2 * easy + 0.3 * medium + 0.5 * hard))


def test_name_and_argument_accuracy():
    assert name_f1([c("a", x=1)], [c("a", x=2)]) == 1.0
    assert argument_accuracy([c("a", x=1, y=2)], [c("a", x=1, y=3)]) == (1, 2)
    assert argument_accuracy([c("a", x=1)], [c("b", x=1)]) == (0, 0)


def test_error_kinds_name_what_is_wrong():
    assert error_kinds([c("a", x=1)], [c("a", x=1, extra=2)]) == []          # extra arguments are not scored
    assert error_kinds([], []) == [] and error_kinds([c("a")], []) == ["no call"]
    assert error_kinds([], [c("a")]) == ["call where none was wanted"]
    assert error_kinds([c("a", x=1)], [c("b", x=1)]) == ["wrong tool"]
    assert error_kinds([c("a"), c("b")], [c("c")]) == ["too few calls", "wrong tool"]
    assert error_kinds([c("a", t="Paris")], [c("a", t="paris"), c("a", t="Rome")]) == ["too many calls"]
    assert error_kinds([c("a", x=[1, 2], y=True, z="A")], [c("a", x=[1], y=True)]) == [
        "argument left out", "wrong value (array)"]
    assert error_kinds([c("a", n=5, o={"k": 1})], [c("a", n="5", o={"k": 2})]) == [
        "wrong value (number)", "wrong value (object)"]
    # the two calls of one tool pair up by their arguments, not by order
    assert error_kinds([c("a", x=1), c("a", x=2)], [c("a", x=2), c("a", x=3)]) == ["wrong value (number)"]
    cases = [CaseResult("1", "", [c("a", x=1)], []), CaseResult("2", "", [c("a", x=1)], [c("b")]),
             CaseResult("3", "", [c("a", x=1)], [])]
    assert error_counts(cases) == {"no call": 2, "wrong tool": 1}
    # every imperfect case has a kind, a perfect one none
    for case in cases + [CaseResult("4", "", [c("a", x=1)], [c("a", x=1)])]:
        assert bool(error_kinds(case.expected, case.predicted)) == (case.f1 < 1.0)


def test_summary_breakdowns():
    cases = [CaseResult("1", "easy", [c("w", location="Paris")], [c("w", location="Paris")]),
             CaseResult("2", "hard", [c("w", location="Paris"), c("t", minutes=5)], [c("w", location="Rome")],
                        parse_failures=1)]
    s = summarize(cases)
    assert s["f1"] == 0.5 and s["f1_by_difficulty"] == {"easy": 1.0, "hard": 0.0}
    assert s["f1_by_tool"]["t"] == 0.0 and s["f1_by_num_calls"] == {"1": 1.0, "2": 0.0}
    assert s["errors"] == {"too few calls": 1, "wrong value (string)": 1}
    assert s["parse_failure_rate"] == 0.5
