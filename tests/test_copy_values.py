"""Copied values (runtime/copy_values.py): a required string the request never states is decoded again
as a span of the request's words. The spans, finding the written value in a call's text, the grounding
rule that asks for a copy, and the trie decoding on a real (tiny) model against a full forward pass."""

from __future__ import annotations

import json

import pytest
import torch

from runtime.copy_values import SpanCopier, locate, request_spans
from runtime.grounding import StatedValues, ground_call
from toolcore.schema import Tool, ToolCall

from .tiny_models import tiny_llama, tiny_tokenizer

WEATHER = Tool("get_weather", "Weather in a city", {"type": "object", "properties": {
    "location": {"type": "string"}, "unit": {"type": "string"}}, "required": ["location"]})
REMIND = Tool("remind", "A reminder", {"type": "object", "properties": {
    "title": {"type": "string"}, "time": {"type": "string", "pattern": "^\\d{1,2}:\\d{2} [AP]M$"}},
    "required": ["title", "time"]})


def test_spans_are_runs_of_words_as_written_and_title_cased_when_all_lowercase():
    spans = request_spans("will it be nice in leipzig, berlin today?", max_words=3)
    assert {"leipzig", "Leipzig", "leipzig, berlin", "Leipzig, Berlin", "in leipzig, berlin"} <= set(spans)
    assert "In Daytona Beach" not in request_spans("fly to in Daytona Beach") and "Daytona Beach" in request_spans(
        "fly to in Daytona Beach")
    assert "today?" not in spans and "today" in spans               # edge punctuation is not a word
    assert max(len(s.split()) for s in spans) == 3 and len(spans) == len(set(spans))
    assert "a\nb" not in request_spans("a\nb") and request_spans("") == []


@pytest.mark.parametrize("text, key, value, found", [
    ('{"name": "f", "arguments": {"location": "Lüneburg"}}', "location", "Lüneburg", (41, '"', False)),
    ('{"name": "f", "arguments": {"location": "L\\u00fcneburg"}}', "location", "Lüneburg", (41, '"', True)),
    ("[f(city='Oslo', country='Oslo')]", "country", "Oslo", (25, "'", False)),   # after its own key
    ('{"name": "f", "arguments": {"location": "Lima"}}', "city", "Lima", None),
    ('{"name": "f", "arguments": {"location": Lima}}', "location", "Lima", None),  # not a quoted string
])
def test_the_written_value_is_found_after_its_key_between_quotes(text, key, value, found):
    assert locate(text, key, value) == found
    if found:
        pos, close, escaped = found
        written = json.dumps(value)[1:-1] if escaped else value
        assert text[pos - 1] == close and text[pos:pos + len(written)] == written


def copy_to(span):
    asked = []

    def copy(key, value, taken):
        asked.append((key, value, taken))
        return span
    return copy, asked


def test_an_unstated_required_string_takes_the_copy_and_the_call_stays():
    stated = StatedValues.of(["um, will it be nice in leipzig today please?"], said=["um, will it be nice in leipzig today please?"])
    call = ToolCall("get_weather", {"location": "Lüneburg"})
    copy, asked = copy_to("leipzig")
    g = ground_call(call, [WEATHER], stated, copy=copy)
    assert g.call == ToolCall("get_weather", {"location": "leipzig"}) and asked == [("location", "Lüneburg", set())]
    assert g.record(call) == {"call": call.to_dict(), "copied": {"location": "Lüneburg"}}
    assert ground_call(call, [WEATHER], stated).call is None               # no copier: withdrawn as before


@pytest.mark.parametrize("span", [None, "Hamburg"])
def test_no_copy_or_a_copy_the_request_does_not_state_still_withdraws(span):
    stated = StatedValues.of(["will it be nice in leipzig?"])
    g = ground_call(ToolCall("get_weather", {"location": "Lüneburg"}), [WEATHER], stated, copy=copy_to(span)[0])
    assert g.call is None and g.withdrawn_for == "location='Lüneburg'"


def test_only_required_word_strings_are_copied():
    stated = StatedValues.of(["remind me about groceries at 5 PM"])
    copy, asked = copy_to("groceries")
    g = ground_call(ToolCall("get_weather", {"location": "groceries", "unit": "kelvin"}), [WEATHER], stated, copy=copy)
    assert g.dropped == ["unit"] and asked == []                            # optional: dropped, not copied
    g = ground_call(ToolCall("remind", {"title": "groceries", "time": "9:00 AM"}), [REMIND], stated, copy=copy)
    assert g.call is None and asked == []                                   # digits: canonical forms are not copied


def test_a_copy_the_schema_refuses_is_not_taken():
    stated = StatedValues.of(["remind me about groceries at 5:00 PM"])
    g = ground_call(ToolCall("remind", {"title": "goberments", "time": "5:00 PM"}), [REMIND], stated,
                    copy=copy_to("groceries")[0])
    assert g.call == ToolCall("remind", {"title": "groceries", "time": "5:00 PM"})
    weather = Tool("w", "", {"type": "object", "properties": {"location": {"type": "string", "maxLength": 3}},
                             "required": ["location"]})
    assert ground_call(ToolCall("w", {"location": "Xyz"}), [weather], StatedValues.of(["sky in Lima"]),
                       copy=copy_to("Lima")[0]).call is None


@pytest.fixture(scope="module")
def lm():
    torch.manual_seed(0)
    texts = ['{"name": "get_weather", "arguments": {"location": "Lima"}}', "will it rain in san jose or in lima today"]
    tok = tiny_tokenizer(texts * 20, vocab_size=300)
    return tiny_llama(len(tok), hidden=64).eval(), tok


def test_the_copy_is_a_request_span_and_its_score_is_the_models_own(lm):
    """The trie decoding writes one of the spans, closed by the quote, and the log-probability it reports
    is what a full forward pass of the same tokens gives (the cache is used right)."""
    model, tok = lm
    request = "will it rain in san jose or in lima today"
    context = tok.encode("user: " + request + "\n", add_special_tokens=False)
    prefix = '{"name": "get_weather", "arguments": {"location": "'
    spans = request_spans(request)
    got = SpanCopier(model, tok, min_support=0.0, min_logprob=-1e9).copy(context, prefix, spans, '"', False)
    assert got is not None and got.value in spans and 0 < got.support <= 1
    base = tok.encode(prefix, add_special_tokens=False)
    full = tok.encode(prefix + got.value + '"', add_special_tokens=False)
    shared = min(next((i for i, (a, b) in enumerate(zip(base, tok.encode(prefix + s + '"', add_special_tokens=False)))
                       if a != b), len(base)) for s in spans)
    ids = torch.tensor([context + full])
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits[0].float(), -1)
    start = len(context) + shared
    expected = sum(float(logp[i - 1, ids[0, i]]) for i in range(start, ids.shape[1]))
    assert got.logprob == pytest.approx(expected, abs=1e-3)


def test_a_support_floor_the_model_does_not_reach_gives_no_copy(lm):
    model, tok = lm
    copier = SpanCopier(model, tok, min_support=1.0 + 1e-6)    # no first token can carry more than everything
    assert copier.copy(tok.encode("user: in lima\n"), '{"location": "', request_spans("in lima"), '"', False) is None
    assert SpanCopier(model, tok, min_support=0.0, min_logprob=-1e9).copy([1], '{"location": "', ["lima"], '"', False) is not None
    assert SpanCopier(model, tok, min_support=0.0, min_logprob=0.0).copy([1], '{"location": "', ["lima", "in"], '"', False) is None
    assert SpanCopier(model, tok, min_support=0.0).copy([1], '{"location": "', [], '"', False) is None


def test_the_calls_other_strings_are_not_offered_again():
    """"from Montreal to Lviv" written as from_city=Montreal, to_city=Eureka: the copy for to_city may
    not be Montreal again."""
    trip = Tool("trip", "", {"type": "object", "properties": {"from_city": {"type": "string"}, "to_city": {"type": "string"}},
                             "required": ["from_city", "to_city"]})
    copy, asked = copy_to("Lviv")
    g = ground_call(ToolCall("trip", {"from_city": "Montreal", "to_city": "Eureka"}), [trip],
                    StatedValues.of(["from Montreal to Lviv"]), copy=copy)
    assert g.call == ToolCall("trip", {"from_city": "Montreal", "to_city": "Lviv"})
    assert asked == [("to_city", "Eureka", {"montreal"})]
