"""Values the request pairs with their parameters (runtime/pairing.py): two look-alike values written into
each other's places are put back where the request's words put them, and nothing moves on less."""

from __future__ import annotations

import pytest

from runtime.grounding import StatedValues, ground_call
from runtime.pairing import read_pairs
from toolcore.schema import Tool, ToolCall


def tool(name: str, description: str, **params: str) -> Tool:
    """A tool whose parameters are strings, or numbers where the description says "(number)"."""
    props = {k: {"type": "number" if "(number)" in d else "string", "description": d.replace(" (number)", "")}
             for k, d in params.items()}
    return Tool(name, description, {"type": "object", "properties": props, "required": list(props)})


VISA = tool("get_visa_requirements", "Look up visa requirements for a trip",
            passport_country="Country that issued the passport", destination_country="Country to visit")
PORTS = tool("sailing_distance", "Get the sailing distance between two ports",
             port_a="First port city", port_b="Second port city")
SOIL = tool("soil_ph_advice", "Advise how to correct soil acidity",
            current_ph="Measured soil pH (number)", target_ph="Desired soil pH (number)")
ZONES = tool("convert_timezone", "Translate a time from one city's time zone to another's",
             from_city="City the time is in", to_city="City and country, e.g. Lyon, France")
WATER = tool("watering_schedule", "Suggest how often to water a plant", plant="Plant name", climate="Local climate")
CLAIM = tool("statute_of_limitations", "Get the filing deadline for a type of claim in a country",
             claim_type="Type of claim", country="Country")
REMIND = tool("create_reminder", "Create a reminder", title="Reminder title", time="Time for the reminder (e.g. 3:00 PM)")


@pytest.mark.parametrize("t, request_text, written, read", [
    (VISA, "visa requirements, destination country poland and passport country finland",
     {"passport_country": "Poland", "destination_country": "Finland"},
     {"passport_country": "Finland", "destination_country": "Poland"}),
    (PORTS, "sailing distance between two ports second port city = philadelphia and with uh, first port city haifa",
     {"port_a": "Philadelphia", "port_b": "Haifa"}, {"port_a": "Haifa", "port_b": "Philadelphia"}),
    (SOIL, "correct soil acidity desired soil ph 463 and the measured soil ph being 446.3",
     {"current_ph": 463, "target_ph": 446.3}, {"current_ph": 446.3, "target_ph": 463}),
    (ZONES, "convert 9:00 from london to paris", {"from_city": "Paris", "to_city": "London"},
     {"from_city": "London", "to_city": "Paris"}),
])
def test_values_the_request_pairs_the_other_way_round_are_swapped(t, request_text, written, read):
    assert read_pairs(written, t, request_text) == read
    assert read_pairs(read, t, request_text) == {}                 # written right: left alone


@pytest.mark.parametrize("t, request_text, written", [
    # the value before its parameter's name ("rose as the plant name") pairs it too
    (WATER, "suggest how often to water a plant using rose as the plant name, in dry local climate!",
     {"plant": "rose", "climate": "dry"}),
    # words copied from the tool's description say what it does, not where a value goes
    (CLAIM, "get the filing deadline for a type of claim in a country in fraud kind of claim, for portugal.",
     {"claim_type": "fraud", "country": "Portugal"}),
    # a phrase and a clock time: one could not stand in the other's place
    (REMIND, "remind me about the meeting at 3:00 pm", {"title": "meeting", "time": "3:00 PM"}),
    (REMIND, "remind me about the meeting at 3:00 pm", {"title": "3:00 PM", "time": "meeting"}),
    # both pairings said (two calls' values): the model's call stands
    (VISA, "passport country finland and passport country portugal, destination finland",
     {"passport_country": "Portugal", "destination_country": "Finland"}),
    (PORTS, "sailing distance from haifa to philadelphia", {"port_a": "Philadelphia", "port_b": "Haifa"}),  # no anchor
])
def test_nothing_moves_without_a_clear_pairing(t, request_text, written):
    assert read_pairs(written, t, request_text) == {}


def test_grounding_reads_the_pairing_and_records_it():
    text = "Get visa requirements: destination country Poland, and passport country Finland"
    call = ToolCall("get_visa_requirements", {"passport_country": "Poland", "destination_country": "Finland"})
    g = ground_call(call, [VISA], StatedValues.of([text], said=[text]))
    assert g.call == ToolCall("get_visa_requirements", {"passport_country": "Finland", "destination_country": "Poland"})
    assert g.read == {"passport_country": "Poland", "destination_country": "Finland"}
    assert ground_call(call, [VISA], StatedValues.of([text], said=[text]), read=False).call == call


def test_no_value_is_swapped_into_a_type_its_schema_refuses():
    """BFCL simple_python_41: the request says 5 near "charge" and the description of
    `medium_permittivity` says its default, 8.854e-12; swapping them put a float into an integer."""
    force = Tool("electromagnetic_force", "Calculate the electromagnetic force between two charges", {
        "type": "object", "properties": {
            "charge1": {"type": "integer", "description": "The magnitude of the first charge in coulombs."},
            "medium_permittivity": {"type": "number", "description": "The relative permittivity of the medium."
                                    " Default is 8.854e-12 (Vacuum Permittivity)."}},
        "required": ["charge1"]})
    written = {"charge1": 5, "medium_permittivity": 8.854e-12}
    text = "the relative permittivity of the medium 5, and the magnitude of the first charge 8.854e-12"
    assert read_pairs(written, force, text) == {}
    loose = Tool(force.name, force.description, {**force.parameters, "properties": {
        **force.properties, "charge1": {**force.properties["charge1"], "type": "number"}}})
    assert read_pairs(written, loose, text) == {"charge1": 8.854e-12, "medium_permittivity": 5}
