"""Optional choices no one asked for (runtime/choices.py): an optional enum member or boolean the user's
words do not name is dropped from a call by grounding; one they name, in any of its words, is kept; an
optional enum the call leaves out gets the one member the request names together with its parameter."""

from __future__ import annotations

import pytest

from runtime.choices import mentioned_flag, named_flag, named_member, names_choice, read_flag, unasked_choice
from runtime.grounding import StatedValues, ground_call
from toolcore.schema import Tool, ToolCall, flag_phrases

CHARGING = Tool("find_charging_station", "Find electric vehicle charging stations", {
    "type": "object", "required": ["city"], "properties": {
        "city": {"type": "string", "description": "City name"},
        "connector": {"type": "string", "enum": ["CCS", "CHAdeMO", "Type 2", "Tesla"],
                      "description": "Connector type"}}})
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


WATERING = Tool("watering_schedule", "Suggest how often to water a plant", {
    "type": "object", "required": ["plant"], "properties": {
        "plant": {"type": "string", "description": "Plant name"},
        "climate": {"type": "string", "enum": ["dry", "temperate", "humid"], "description": "Local climate"}}})
SERVERS = Tool("list_servers", "List the servers of an environment", {
    "type": "object", "required": [], "properties": {
        "type": {"type": "string", "enum": ["all", "postgres", "openai"], "description": "Kind of server"}}})


@pytest.mark.parametrize("tool, key, request_text, member", [
    (WATERING, "climate", "how often to water a plant local climate: dry, plant name orchid", "dry"),
    (WATERING, "climate", "water my basil, with the local climate set to humid", "humid"),
    (MASKED, "p_4z0", "log a running session, unit system imperial", "imperial"),    # masked: the description
    (CHARGING, "connector", "stations in Orlando, connector Type 2", "Type 2"),       # a member of two words
])
def test_an_enum_member_named_with_its_parameter_is_read(tool, key, request_text, member):
    assert named_member(key, tool, request_text) == member


@pytest.mark.parametrize("tool, key, request_text", [
    (WATERING, "climate", "water my orchid, it is dry today"),                         # the parameter unsaid
    (WATERING, "climate", "orchid in a dry climate, then basil in a humid climate"),   # two members: which call?
    (WATERING, "climate", "water the orchid in my climate-controlled room"),           # no member
    (SERVERS, "type", "list all server types"),                                        # "all" is how one speaks
    (MASKED, "p_kind", "log a running session"),                                       # required: the model's
    (CHARGING, "connector", "stations in Orlando for my Teslas"),                      # not the whole word
])
def test_no_member_is_read_without_both_the_member_and_its_parameter(tool, key, request_text):
    assert named_member(key, tool, request_text) is None


def test_grounding_adds_the_named_member_and_records_it():
    text = "suggest how often to water a plant local climate: dry, with the plant name set to orchid"
    grounded = ground_call(ToolCall("watering_schedule", {"plant": "orchid"}), [WATERING],
                           StatedValues.of([text], said=[text]))
    assert grounded.call == ToolCall("watering_schedule", {"plant": "orchid", "climate": "dry"})
    assert grounded.record(ToolCall("watering_schedule", {"plant": "orchid"}))["added"] == {"climate": "dry"}
    # times not read (read_times=false): the call is left as written
    plain = ground_call(ToolCall("watering_schedule", {"plant": "orchid"}), [WATERING],
                        StatedValues.of([text], said=[text]), read=False)
    assert plain.call == ToolCall("watering_schedule", {"plant": "orchid"})


# a flag whose name is masked: its description's noun ("verbose output") is how data_gen says it
MASKED_FLAG = Tool("f_k2q", "Export a report", {
    "type": "object", "required": ["p_r1"], "properties": {
        "p_r1": {"type": "string", "description": "Report name"},
        "p_9x": {"type": "boolean", "description": "Verbose output"}}})


@pytest.mark.parametrize("value", [True, False])
@pytest.mark.parametrize("tool, key, noun", [(PHARMACY, "open_now", "open now"),
                                             (QUOTES, "include_volume", "include volume"),
                                             (MASKED_FLAG, "p_9x", "verbose output")])
def test_a_flag_said_in_any_phrasing_data_gen_writes_is_read(tool, key, noun, value):
    for phrase in flag_phrases(noun, value):
        assert named_flag(key, tool, f"Please do it for Leipzig, {phrase.upper()}, thanks") is value, phrase


@pytest.mark.parametrize("tool, key, request_text", [
    (PHARMACY, "open_now", "find pharmacies in Tampa"),                                 # not said
    (PHARMACY, "open_now", "is a pharmacy in Tampa open now?"),                         # said, no value given
    (PHARMACY, "open_now", "pharmacies in Tampa with open now, then in Oslo without open now"),   # both ways
    (PHARMACY, "location", "location enabled"),                                         # not a boolean
    (MASKED_FLAG, "p_9x", "export the sales report, p 9x enabled"),                     # a masked name says nothing
    (QUOTES, "include_volume", "quotes for KO without volumes"),                        # not the noun
])
def test_no_flag_is_read_without_its_noun_and_one_value(tool, key, request_text):
    assert named_flag(key, tool, request_text) is None


def test_grounding_adds_the_named_flag_and_records_it_but_keeps_a_written_one():
    text = "find pharmacies open near a location open now turned on and city or area Leipzig"
    stated = StatedValues.of([text], said=[text])
    written = ToolCall("find_pharmacy", {"location": "Leipzig"})
    grounded = ground_call(written, [PHARMACY], stated)
    assert grounded.call == ToolCall("find_pharmacy", {"location": "Leipzig", "open_now": True})
    assert grounded.record(written)["added"] == {"open_now": True}
    assert ground_call(written, [PHARMACY], stated, read=False).call == written
    # written the other way round: the request's value, recorded as read
    opposite = ToolCall("find_pharmacy", {"location": "Leipzig", "open_now": False})
    grounded = ground_call(opposite, [PHARMACY], stated)
    assert grounded.call == ToolCall("find_pharmacy", {"location": "Leipzig", "open_now": True})
    assert grounded.record(opposite)["read"] == {"open_now": False}
    assert ground_call(opposite, [PHARMACY], stated, read=False).call == opposite


FOREST = Tool("forest_growth_forecast", "Predicts the forest growth over the next N years", {
    "type": "object", "required": ["location", "details"], "properties": {
        "location": {"type": "string", "description": "Where"},
        "include_human_impact": {"type": "boolean", "description": "Whether to include the impact of humans"},
        "closed_status": {"type": "boolean", "description": "The status to verify"},
        "details": {"type": "boolean", "description": "True if need the detail info"},
        "forest": {"type": "boolean", "description": "A name of the tool's own words"},
        "p_9x": {"type": "boolean", "description": "Verbose output"},
        "human": {"type": "string", "description": "Not a boolean"}}})


@pytest.mark.parametrize("key, request_text", [
    ("include_human_impact", "Predict the growth in Yellowstone for 5 years including human impact."),
    ("include_human_impact", "forest growth in Oslo, and consider the impact of humans"),
    ("closed_status", "check case 1234 and verify if it's already closed"),      # "status": a generic word
    ("details", "give me the detailed forecast for Oslo"),                       # required flags too
])
def test_a_flag_the_request_mentions_is_meant_on(key, request_text):
    assert mentioned_flag(key, FOREST, request_text) and read_flag(key, FOREST, request_text) is True


@pytest.mark.parametrize("key, request_text", [
    ("include_human_impact", "forest growth in Oslo, no human impact"),           # a negation before
    ("include_human_impact", "forest growth in Oslo without any human impact"),
    ("include_human_impact", "forest growth in Oslo, human impact turned off"),   # "off" after
    ("include_human_impact", "Oslo with human impact, then Bergen with human impact disabled"),   # both ways
    ("include_human_impact", "forest growth in Oslo with impact"),                # one word not said
    ("closed_status", "a person with few closed cases"),
    ("forest", "predict forest growth in Oslo"),                                  # the tool's own word
    ("p_9x", "forest growth in Oslo, p 9x please"),                               # a code says nothing
    ("human", "growth in Oslo, human"),                                           # not a boolean
])
def test_a_flag_the_request_does_not_mention_as_wanted_is_not_read_on(key, request_text):
    assert not mentioned_flag(key, FOREST, request_text)
    assert read_flag(key, FOREST, request_text) is not True


def test_grounding_reads_a_mentioned_flag_into_the_call_over_the_written_value():
    text = "Predict the forest growth in Yellowstone including human impact, with details"
    stated = StatedValues.of([text], said=[text])
    written = ToolCall("forest_growth_forecast", {"location": "Yellowstone", "details": False})
    grounded = ground_call(written, [FOREST], stated)
    assert grounded.call == ToolCall("forest_growth_forecast",
                                     {"location": "Yellowstone", "details": True, "include_human_impact": True})
    assert grounded.record(written)["read"] == {"details": False}
    assert grounded.record(written)["added"] == {"include_human_impact": True}
    # a request that says a flag off keeps it off, also over a written true
    text = "Predict the forest growth in Yellowstone without human impact, with details"
    written = ToolCall("forest_growth_forecast", {"location": "Yellowstone", "details": True,
                                                  "include_human_impact": True})
    grounded = ground_call(written, [FOREST], StatedValues.of([text], said=[text]))
    assert grounded.call.arguments["include_human_impact"] is False


def test_eval_counts_the_members_grounding_added():
    from eval.runner import ungrounded_counts
    from runtime.models.base import Prediction

    text = "water the basil, local climate: humid"
    grounded = ground_call(ToolCall("watering_schedule", {"plant": "basil"}), [WATERING],
                           StatedValues.of([text], said=[text]))
    record = grounded.record(ToolCall("watering_schedule", {"plant": "basil"}))
    counts = ungrounded_counts([Prediction([grounded.call], details={"ungrounded": [record]}), Prediction([])])
    assert counts["added_values"] == 1 and counts["trimmed_calls"] == counts["withdrawn_calls"] == 0
