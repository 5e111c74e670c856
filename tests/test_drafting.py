"""Draft proposals (runtime/drafting.py) with SmolLM2's real tokenizer and the real call grammar. That a
drafted run writes exactly what a plain one writes is checked end to end on an exported model in
tests/test_gguf.py."""

from __future__ import annotations

import pytest

from runtime.constrained import CallConstraint
from runtime.drafting import DraftStats, grammar_draft, lookup_draft
from toolcore.formats import get_format
from toolcore.hub import load_tokenizer
from toolcore.schema import Tool

WEATHER = Tool("get_weather_forecast", "Weather for a city.",
               {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"]})
ALARM = Tool("set_alarm", "Set an alarm.", {"type": "object", "properties": {"hour": {"type": "integer"}},
                                            "required": ["hour"]})


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("smollm2")


@pytest.fixture(scope="module")
def constraint(tok):
    return CallConstraint(tok, get_format("generic"), len(tok))


def test_lookup_proposes_what_followed_the_newest_match_of_the_longest_ngram():
    source = [1, 2, 3, 9, 9, 1, 2, 4, 5, 6]
    assert lookup_draft(source, [7, 1, 2], limit=3) == [4, 5, 6]           # the newest [1, 2]
    assert lookup_draft(source, [3, 9, 9], limit=2) == [1, 2]             # the trigram beats the newest 9
    assert lookup_draft(source, [8, 6], limit=4) == []                    # 6 ends the source: nothing follows
    assert lookup_draft(source, [8, 7], limit=4) == []
    assert lookup_draft(source, [0, 2], limit=4, min_ngram=2) == []       # a lone id is not enough there


def test_the_grammar_drafts_the_forced_rest_of_a_call(tok, constraint):
    matcher = constraint.start([WEATHER])
    first = grammar_draft(matcher, 32)
    text = tok.decode(first)
    # one tool offered: the whole opening up to the first key's value is forced
    assert text.startswith('{"name": "get_weather_forecast"') and '"city"' in text
    for tid in first:
        assert matcher.accept_token(tid)
    assert grammar_draft(matcher, 32) == []                               # the city is the model's to choose


def test_the_grammar_stops_drafting_where_the_model_chooses(tok, constraint):
    matcher = constraint.start([WEATHER, ALARM])
    draft = grammar_draft(matcher, 32)
    # the forced ' "' before the name is held back: a longer token (' "get', say) could absorb it
    assert tok.decode(draft) == '{"name":'

    assert len(grammar_draft(matcher, 2)) <= 2
    assert grammar_draft(None, 8) == []                                   # outside a call: no grammar draft


def test_draft_counters_are_flat_and_shares_are_per_source():
    stats = DraftStats()
    stats.proposed["grammar"], stats.accepted["grammar"] = 10, 9
    assert stats.as_dict()["draft_grammar_accepted"] == 9 and stats.as_dict()["draft_lookup_proposed"] == 0
    assert stats.shares() == {"grammar": 0.9, "lookup": 0.0}
