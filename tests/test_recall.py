"""An answer in words that names an offered tool is taken back for a call (`recall_declines`,
runtime/recall.py), on a tiny llama trained here to decline one phrasing of a request it calls for in another."""

from __future__ import annotations

import pytest
import torch

from runtime.engine import GenerationConfig, ToolLoopEngine
from runtime.recall import recall_tools, tools_named_in
from toolcore.conversation import Conversation, Message
from toolcore.schema import Tool

from .test_engine import CITIES, FMT, HOME, HOME_CITY, SKIES, SKY, STEPS_GUESSER, episode, train_tiny

DECLINE = "I cannot look at the sky."
NOW = "how is the sky in {} now?"
TIDE = Tool("check_tide", "Look at the tide in a city",
            {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, executor="test_sky")


def named(text: str, *names: str) -> list[str]:
    tools = [Tool(n, "", {"type": "object", "properties": {}}) for n in names]
    return [t.name for t in tools_named_in(text, tools)]


def test_a_tool_is_named_by_half_the_words_of_its_name_less_its_action_words():
    assert named("The weather in Lisbon is sunny.", "get_weather", "set_timer") == ["get_weather"]
    assert named("I'm afraid I don't have a tool to search the web.", "web_search", "search_contacts") == ["web_search"]
    assert named("I can't search registered trademarks.", "trademark_search") == ["trademark_search"]
    assert named("I can't work out the final cost.", "calculateFinalPrice") == ["calculateFinalPrice"]
    # an action word alone names nothing: every calculate_* tool would be named by "calculate"
    assert named("I can't calculate the area of a triangle.", "calculate_bmi", "get_time") == []
    assert named("Sorry, I can't help with that.", "play_music", "search_contacts") == []
    assert named("", "get_weather") == []


def test_a_tool_that_requires_no_value_is_recalled_only_where_the_request_names_it_too():
    """Grounding cannot withdraw a call with no values, so the model's words alone are not enough."""
    get_time = Tool("get_time", "Current time", {"type": "object", "properties": {}})
    weather = Tool("get_weather", "Weather", {"type": "object", "properties": {"location": {"type": "string"}},
                                              "required": ["location"]})
    words = "You can start running at any time, or check the weather first."
    assert [t.name for t in recall_tools(words, "how do I start running?", [get_time, weather])] == ["get_weather"]
    assert [t.name for t in recall_tools("I can't check the time.", "time check, please", [get_time])] == ["get_time"]


def decline(asked: str) -> Conversation:
    return Conversation([Message.text("user", asked), Message.text("assistant", DECLINE)], [SKY])


@pytest.fixture(scope="module")
def decliner():
    """Calls check_sky for "how is the sky in X?" (guessing Turin for "at home") and declines "how is the sky
    in X now?" in words that name it."""
    torch.manual_seed(0)
    convs = [episode(c, s) for c in CITIES for s in SKIES] + [episode(HOME_CITY, s, asked=HOME) for s in SKIES]
    convs += [decline(NOW.format(c)) for c in CITIES + ["home"]]
    return train_tiny(convs, steps=STEPS_GUESSER)


def run(model, tok, asked: str, tools=(SKY,), **cfg):
    config = GenerationConfig(max_new_tokens=60, batch_size=2, **cfg)
    return ToolLoopEngine(model, tok, FMT, config).run([Conversation([Message.text("user", asked)], list(tools))])[0]


def test_a_decline_naming_the_tool_is_written_again_as_its_call(decliner):
    model, tok = decliner
    asked = NOW.format("Lima")
    off = run(model, tok, asked, recall_declines=False)
    assert off.calls == [] and DECLINE in off.text and off.ungrounded == []
    on = run(model, tok, asked)                              # on by default
    assert [c.name for c in on.calls] == ["check_sky"] and on.calls[0].arguments == {"city": "Lima"}
    record = on.ungrounded[0]
    assert {k: record[k] for k in ("recalled", "tools")} == {"recalled": DECLINE, "tools": ["check_sky"]}
    # the least probability the model gave one of the call's tokens, before the grammar's mask (the call
    # start, forced, not counted): above the default floor, so the call stays; a floor above it takes
    # the call back, and the turn is written in words again
    assert GenerationConfig().recall_min_p <= record["min_p"] < 1 and "taken_back" not in record
    shy = run(model, tok, asked, recall_declines=True, recall_min_p=1.0)
    assert shy.calls == [] and shy.text == off.text and shy.ungrounded[0]["taken_back"] is True
    assert on.text.startswith(FMT.call_start) and DECLINE not in on.text     # the words were taken back
    # streamed, the words come and are taken back exactly before the call
    engine = ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=60, recall_declines=True))
    events = list(engine.stream(Conversation([Message.text("user", asked)], [SKY])))
    kinds = [e.kind for e in events]
    rewind = kinds.index("rewind")
    assert "".join(e.text for e in events[:rewind] if e.kind == "text") == events[rewind].text
    assert DECLINE in events[rewind].text and "call" in kinds[rewind:]


def test_a_recalled_call_the_request_does_not_ground_gives_the_words_back(decliner):
    """At home, the forced call guesses a city no one said: it is withdrawn and the decline written again
    (calls blocked: it is not recalled twice)."""
    model, tok = decliner
    asked = NOW.format("home")
    off = run(model, tok, asked, copy_values=False, recall_declines=False)
    on = run(model, tok, asked, copy_values=False, recall_declines=True, recall_min_p=0.0)   # judged by grounding
    assert on.calls == [] and on.text == off.text and DECLINE in on.text
    assert on.ungrounded[0]["recalled"] == DECLINE
    assert len(on.ungrounded) == 2 and on.ungrounded[1]["unstated"].startswith("city=")     # a city no one said


def test_words_that_name_no_offered_tool_stay(decliner):
    model, tok = decliner
    asked = NOW.format("Lima")
    off = run(model, tok, asked, tools=(TIDE,), recall_declines=False)
    on = run(model, tok, asked, tools=(TIDE,), recall_declines=True)
    assert on.text == off.text and on.calls == off.calls and not any("recalled" in u for u in on.ungrounded)


def test_the_summary_counts_recalled_answers_and_those_taken_back():
    from eval.runner import ungrounded_counts
    from runtime.models.base import Prediction

    kept = {"recalled": "The weather in Lisbon is sunny.", "tools": ["get_weather"], "min_p": 0.9}
    back = {"recalled": "I can't search the web.", "tools": ["web_search"], "min_p": 0.01, "taken_back": True}
    diverted = {"call": {"name": "get_time", "arguments": {}}, "diverted": True, "min_p": 0.0, "taken_back": True}
    counts = ungrounded_counts([Prediction([], details={"ungrounded": [kept]}),
                                Prediction([], details={"ungrounded": [back, diverted]})])
    assert counts["recalled_answers"] == 2 and counts["recalled_taken_back"] == 1 and counts["diverted_calls"] == 1
