"""Optional choices no one asked for (runtime/choices.py): an optional enum member or boolean the user's
words do not name is dropped from a call by grounding; one they name, in any of its words, is kept."""

from __future__ import annotations

import pytest

from runtime.choices import names_choice, unasked_choice
from runtime.grounding import StatedValues, ground_call
from toolcore.schema import Tool, ToolCall

CHARGING = Tool("find_charging_station", "Find electric vehicle charging stations", {
    "type": "object", "required": ["city"], "properties": {
        "city": {"type": "string", "description": "City name"},
        "connector": {"type": "string", "enum": ["CCS", "CHAdeMO", "Type 2", "Tesla"], "description": "Connector type"}}})
QUOTES = Tool("get_stock_quotes", "Get quotes for several stocks at once", {
    "type": "object", "required": ["symbols"], "properties": {
        "symbols": {"type": "string", "description": "Comma-separated stock ticker symbols"},
        "include_volume": {"type": "boolean", "description": "Include trading volume"}}})
PHARMACY = Tool("find_pharmacy", "Find pharmacies open near a location", {
    "type": "object", "required": ["location"], "properties": {
        "location": {"type": "string", "description": "City or area"},
        "open_now": {"type": "boolean", "description": "Only pharmacies open now"}}})
# a tool whose names say nothing (the masked variants data_gen makes): only the description speaks
MASKED = Tool("f_a0u", "Log a workout session", {
    "type": "object", "required": ["p_kind"], "properties": {
        "p_kind": {"type": "string", "enum": ["running", "cycling"], "description": "Type of workout"},
        "p_4z0": {"type": "string", "enum": ["metric", "imperial"], "description": "Unit system"}}})


@pytest.mark.parametrize("tool, key, value, request_text", [
    (CHARGING, "connector", "Type 2", "find charging stations in Orlando"),
    (CHARGING, "connector", "Tesla", "find charging stations in Orlando and Tampa"),
    (QUOTES, "include_volume", True, "stock quotes for KO and BAC please"),
    (QUOTES, "include_volume", False, "get quotes for KO"),
    # "pharmacies" is the tool's own word: it says nothing of this parameter
    (PHARMACY, "open_now", True, "find pharmacies in Tampa"),
    (MASKED, "p_4z0", "imperial", "log a running session of 26 minutes"),
])
def test_a_choice_the_request_does_not_name_is_unasked(tool, key, value, request_text):
    assert unasked_choice(key, value, tool, [request_text])


@pytest.mark.parametrize("tool, key, value, request_text", [
    (CHARGING, "connector", "Tesla", "find a tesla charger in Orlando"),                 # the member's word
    (CHARGING, "connector", "CCS", "charging stations in Orlando with a CCS plug"),
    (CHARGING, "connector", "Type 2", "charging stations in Orlando, connector: type two"),   # the key's word
    (QUOTES, "include_volume", True, "quotes for KO with the traded volume"),          # key word, 4 letters
    (QUOTES, "include_volume", True, "quotes for KO, and what was trading like"),      # description word
    (PHARMACY, "open_now", True, "find pharmacies open now in Tampa"),
    (PHARMACY, "open_now", False, "find pharmacies in Tampa, not only the ones open right now"),
    (MASKED, "p_4z0", "imperial", "log a running session in imperial units"),
    (MASKED, "p_4z0", "metric", "log a running session, use the metric system"),
])
def test_a_choice_named_in_any_of_its_words_is_kept(tool, key, value, request_text):
    assert names_choice(key, value, tool, [request_text])
    assert not unasked_choice(key, value, tool, [request_text])


def test_required_choices_and_said_values_are_not_judged_here():
    assert not unasked_choice("p_kind", "cycling", MASKED, ["log a session"])       # required: the schema's
    assert not unasked_choice("city", "Orlando", CHARGING, ["stations please"])     # a string, not a choice
    assert not unasked_choice("connector", "Type 3", CHARGING, ["stations please"])  # not a member: the constraint's


def test_grounding_drops_an_unasked_choice_and_keeps_the_rest():
    stated = StatedValues.of(["find charging stations in Orlando"], said=["find charging stations in Orlando"])
    grounded = ground_call(ToolCall("find_charging_station", {"city": "Orlando", "connector": "Type 2"}),
                           [CHARGING], stated)
    assert grounded.call == ToolCall("find_charging_station", {"city": "Orlando"})
    assert grounded.dropped == ["connector"]
    asked = StatedValues.of(["stations in Orlando for a Tesla"], said=["stations in Orlando for a Tesla"])
    call = ToolCall("find_charging_station", {"city": "Orlando", "connector": "Tesla"})
    assert ground_call(call, [CHARGING], asked).call == call
