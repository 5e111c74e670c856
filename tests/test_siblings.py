"""Look-alike tool names: the one whose differing word the request does not say is left out of the call
grammar (`said_siblings`, runtime/siblings.py), on a tiny llama trained here to call only one of the two."""

from __future__ import annotations

import pytest
import torch

from runtime.engine import GenerationConfig, ToolLoopEngine
from runtime.siblings import unsaid_siblings
from toolcore.conversation import Conversation, Message
from toolcore.schema import Tool, ToolCall

from .test_engine import CITIES, FMT, SKIES, episode, train_tiny


def tool(name: str) -> Tool:
    return Tool(name, f"{name} in a city", {"type": "object", "properties": {"city": {"type": "string"}},
                                          "required": ["city"]}, executor="test_sky")


CITY_SKY, CITY_TIDE = tool("city_sky"), tool("city_tide")


def left_out(request: str, *names: str, called: tuple[str, ...] = ()) -> set[str]:
    return unsaid_siblings([tool(n) for n in names], request, called)


def test_the_sibling_whose_word_the_request_does_not_say_is_left_out():
    assert left_out("Pan right 30 degrees", "pan_left", "pan_right") == {"pan_left"}
    assert left_out("Turn the camera 45 degrees to the left", "pan_right", "pan_left", "get_time") == {"pan_right"}
    assert left_out("how windy is it in Oslo?", "city_sky", "city_tide", "city_wind") == {"city_sky", "city_tide"}
    assert left_out("the potential of the solar farm", "windFarm.potential", "solarFarm.potential") == \
        {"windFarm.potential"}


def test_nothing_is_left_out_where_the_request_says_both_words_or_neither():
    assert left_out("pan left 10 degrees, then right 20", "pan_left", "pan_right") == set()
    assert left_out("turn the camera 30 degrees", "pan_left", "pan_right") == set()


def test_names_alike_only_by_an_action_word_or_of_other_lengths_are_not_siblings():
    # "whether I need a jacket" asks for the weather without the word: get_weather must stay
    assert left_out("do I need a jacket in Leipzig, and what's the time?", "get_weather", "get_time") == set()
    assert left_out("get an alarm going for 7 am", "set_alarm", "get_alarm") == set()   # differ by one
    assert left_out("the sky in Oslo", "city_sky", "city_sky_week") == set()       # not as many words


def test_a_left_out_sibling_comes_back_once_the_said_one_is_called():
    request = "pan right 20 degrees, then back the other way"
    assert left_out(request, "pan_left", "pan_right") == {"pan_left"}
    assert left_out(request, "pan_left", "pan_right", called=("pan_right",)) == set()


@pytest.fixture(scope="module")
def sky_caller():
    """Offered city_sky and city_tide, calls city_sky for the sky and for the tide alike: the habit of a
    small adapter that picks between look-alike tools by which it saw more."""
    torch.manual_seed(0)
    convs = []
    for c in CITIES:
        for s in SKIES:
            for asked in (f"how is the sky in {c}?", f"how is the tide in {c}?"):
                e = episode(c, s, tool=CITY_SKY, asked=asked)
                convs.append(Conversation(e.messages, [CITY_SKY, CITY_TIDE]))
    return train_tiny(convs)


def test_a_model_that_calls_one_sibling_by_habit_calls_the_one_the_request_says(sky_caller):
    model, tok = sky_caller

    def run(asked: str, **cfg):
        engine = ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=40, batch_size=2, **cfg))
        return engine.run([Conversation([Message.text("user", asked)], [CITY_SKY, CITY_TIDE])])[0]

    def first_name(out) -> str:
        return FMT.parse(out.text).calls[0].name

    tide = "how is the tide in Rome?"
    assert first_name(run(tide, said_siblings=False)) == "city_sky"               # its habit
    assert run(tide).calls == [ToolCall("city_tide", {"city": "Rome"})]           # on by default
    assert run("how is the sky in Rome?").calls == [ToolCall("city_sky", {"city": "Rome"})]
    # unconstrained decoding has no grammar to leave a tool out of
    assert first_name(run(tide, constrained=False)) == "city_sky"
