"""Routing (rules first, a model for the rest) and the single-request latency of the runner."""

from __future__ import annotations

import json

from runtime.baselines.symbolic import SymbolicParser
from runtime.models import RouterModel, SymbolicModel
from eval.runner import evaluate
from toolcore.schema import Tool
from toolcore.suites import load_cases

LIGHTS = Tool("set_lights", "Turn the lights on or off", {"type": "object", "properties": {
    "room": {"type": "string"}, "state": {"type": "string", "enum": ["on", "off"]}}, "required": ["room", "state"]})


def test_a_parse_is_complete_only_when_every_intent_became_a_valid_offered_call(registry):
    parse = SymbolicParser().parse
    weather, alarm, music = registry["get_weather"], registry["set_alarm"], registry["play_music"]
    assert parse("What's the weather in Paris and set an alarm for 7 AM", [weather, alarm]).complete
    gap = parse("What's the weather in Paris and set an alarm for 7 AM", [weather])   # alarm not offered
    assert not gap.complete and "set_alarm is not offered" in gap.reason and gap.calls
    assert not parse("thanks, that's all", [weather]).complete                          # no call
    assert not parse("play some jazz", [music, LIGHTS]).complete                        # a tool it has no rules for
    assert not parse("play some jazz and order a pizza", [music]).complete              # an intent it cannot read


def test_router_answers_complete_parses_and_hands_the_rest_over(registry):
    cases = load_cases("handwritten", registry=registry)
    router = RouterModel(SymbolicModel(name="inner"))
    preds = router.predict(cases)
    parser = SymbolicParser()
    for case, pred in zip(cases, preds):
        complete = parser.parse(case.user_text, case.tools).complete
        assert pred.details["route"] == ("symbolic" if complete else "model")
        assert pred.calls == parser(case.user_text, case.tools)     # the inner model is the parser too here
        if not complete:
            assert pred.details["symbolic_gap"]
    assert {p.details["route"] for p in preds} == {"symbolic", "model"}
    assert router.name == "router(inner)"


def test_latency_is_one_request_alone_and_routes_are_counted(tmp_path):
    summary = evaluate(RouterModel(SymbolicModel(name="inner")), "handwritten", tmp_path, latency_cases=12)
    lat = summary["latency"]
    assert lat["single_request_cases"] == 12
    assert 0 <= lat["single_request_p50_ms"] <= lat["single_request_p95_ms"]
    assert lat["batched_cases_per_s"] > 0
    assert sum(summary["routes"].values()) == summary["cases"] == 66
    rows = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    measured = [r for r in rows if r["single_request_ms"] is not None]
    assert len(measured) == 12 and all(r["latency_ms"] == round(r["single_request_ms"], 3) for r in measured)
    # unmeasured cases are charged their level's mean of measured cases
    assert all(r["latency_ms"] > 0 for r in rows)
    assert summary["invalid_calls"]["total"] == 0       # the parser only writes offered tools' keys
    none = evaluate(SymbolicModel(), "hackathon30", tmp_path / "b", latency_cases=0)
    assert none["latency"]["single_request_cases"] == 0 and none["routes"] is None
