"""Schema-driven data (data_gen/schema_driven): rows for tools known only by their schema."""

import json
import random
import re
import socket
import threading
import time
from collections import Counter

import pytest
from datasets import load_from_disk
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from data_gen.compose import Rejected
from data_gen.config import DataGenConfig
from data_gen.generate import generate
from data_gen.schema_driven.config import SchemaDataConfig, TeacherConfig
from data_gen.schema_driven.episodes import EpisodeBuilder, check, grounding_problem, kinds_said, near, prepare
from data_gen.schema_driven.library import LibTool, build_library, check_disjoint, name_key, unseen_library
from data_gen.schema_driven.realise import mention, value_pieces
from data_gen.schema_driven.samplers import Sampler, Unsupported, classify, forms
from data_gen.schema_driven.source import GeneralSource
from data_gen.schema_driven.unseen import write_suite
from data_gen.surface import SurfaceConfig
from toolcore.errors import ToolkitError
from toolcore.executors import ExecutionContext
from toolcore.formats import FORMATS, get_format
from toolcore.registry import load_registry
from toolcore.schema import Tool
from toolcore.suites import ConversationReader, load_suite
from toolcore.vocab import load_vocabulary

FMTS = [get_format(f) for f in FORMATS]


def source(**general) -> GeneralSource:
    cfg = DataGenConfig(schema_data=SchemaDataConfig(**{"share": 1.0, **general}))
    return GeneralSource(cfg, load_registry(), load_vocabulary())


@pytest.fixture(scope="module")
def drafts():
    src = source()
    out, reasons = [], Counter()
    for i in range(700):
        try:
            d = src.build(i, eval_pool=i % 10 == 0)
        except Rejected as r:
            reasons[r.reason] += 1
            continue
        reason = src.check(d)
        if reason:
            reasons[reason] += 1
        else:
            out.append(d)
    return src, out, reasons


def test_most_drafts_pass_and_rejections_are_counted(drafts):
    _, kept, reasons = drafts
    assert len(kept) >= 650
    assert all(r.startswith(("general:", "decontaminated:")) for r in reasons)


def test_every_call_validates_and_round_trips(drafts):
    src, kept, _ = drafts
    g = src.g
    for d in kept:
        offered = {t.name: t for t in d.conversation.tools}
        assert 1 <= len(offered) <= g.long_list_max
        for c in d.expected_calls:
            assert offered[c.name].validation_errors(c.arguments) == []
        if d.expected_calls:
            assert all(f.roundtrip_ok(d.expected_calls) for f in FMTS)


def test_values_are_said_in_the_request(drafts):
    src, kept, _ = drafts
    said = 0
    for d in kept:
        text = d.user_text.lower()
        for g in d.calls:
            for key, value in g.call.arguments.items():
                kind = g.prepared.kinds[key]
                assert not grounding_problem(kind, value, text, src.aliases, alone=False), (key, value, d.user_text)
                if isinstance(value, str) and kind.sem in ("city", "generic", "title", "query", "message", "enum"):
                    # plain strings are said verbatim (or as a listed alias), never paraphrased
                    assert any(f.lower() in text for f in forms(kind, value, src.aliases))
                    said += 1
    assert said > 200


def test_values_with_commas_are_said_whole(drafts):
    """A city whose description asks "City and state, e.g. Austin, TX" gets "Boston, MA" (or "Riga,
    Latvia"), addresses hold commas, and every such value is said whole in the request:
    the model learns to copy a value past its commas."""
    src, kept, _ = drafts
    qualified = comma_values = 0
    for d in kept:
        for g in d.calls:
            for key, value in g.call.arguments.items():
                kind = g.prepared.kinds[key]
                if kind.sem == "city" and kind.qualify:
                    assert ", " in value, (key, value, g.prepared.tool.parameters["properties"][key])
                    qualified += 1
                if isinstance(value, str) and ", " in value:
                    assert value.lower() in d.user_text.lower(), (value, d.user_text)
                    comma_values += 1
    assert qualified >= 5 and comma_values >= 20


def test_city_form_reads_the_description():
    sampler = Sampler(load_vocabulary(), holdout=0.0)
    rng = random.Random(0)
    for desc, form, pattern in [("City and state, e.g. Austin, TX", "state", r"^[^,]+, [A-Za-z ]+$"),
                                ("The city and its country, like Osaka, Japan", "country", r"^[^,]+, [A-Z][A-Za-z -]+$"),
                                ("City name", "", r"^[^,]+$")]:
        kind = classify("city", {"type": "string", "description": desc}, {})
        assert kind.qualify == form
        values = {sampler.draw(kind, rng, eval_pool=False) for _ in range(40)}
        assert all(re.match(pattern, v) for v in values), values
    us = {sampler.draw(classify("location", {"type": "string", "description": "City and state, e.g. Austin, TX"}, {}),
                       rng, eval_pool=False) for _ in range(300)}
    assert any(re.fullmatch(r".+, [A-Z]{2}", v) for v in us) and any(not re.fullmatch(r".+, [A-Z]{2}", v) for v in us)


def test_a_city_list_without_countries_gives_plain_values(tmp_path):
    """A user's cities.yaml with bare names replaces the built-in one: qualified cities and addresses
    fall back to what the list can say instead of failing."""
    (tmp_path / "cities.yaml").write_text("entries: [Ghent, Oslo, Quito]\n")
    sampler = Sampler(load_vocabulary([tmp_path]), holdout=0.0)
    rng = random.Random(0)
    city = classify("city", {"type": "string", "description": "City and state, e.g. Austin, TX"}, {})
    address = classify("address", {"type": "string", "description": "Street address"}, {})
    assert {sampler.draw(city, rng, eval_pool=False) for _ in range(20)} <= {"Ghent", "Oslo", "Quito"}
    assert all("," not in sampler.draw(address, rng, eval_pool=False) for _ in range(20))


def said_as(p, key: str, value, seeds: int = 200, bare: float = 0.0) -> list[str]:
    return ["".join(piece.text for piece in mention(p.kinds[key], value, random.Random(s), {}, bare=bare))
            for s in range(seeds)]


def test_parameters_said_alike_are_named_or_said_with_their_own_direction():
    """Two countries (or two numbers in years) in one tool: "for Poland" would fit either, so every
    mention names its parameter, or says the direction only it has ("to Poland" is the destination)."""
    visa = prepare(Tool("get_visa_requirements", "Look up visa requirements for a trip", {"type": "object", "properties": {
        "passport_country": {"type": "string", "description": "Country that issued the passport"},
        "destination_country": {"type": "string", "description": "Country to visit"}},
        "required": ["passport_country", "destination_country"]}), "travel", "visa", "library")
    assert all("passport country" in m for m in said_as(visa, "passport_country", "Poland"))
    dest = said_as(visa, "destination_country", "Poland")
    assert all("destination country" in m or re.match(r"(to|into) Poland$", m) for m in dest)
    assert any(re.match(r"(to|into) Poland$", m) for m in dest)
    decay = prepare(Tool("half_life", "Amount left after decay", {"type": "object", "properties": {
        "half_life_years": {"type": "number", "description": "Half-life in years"},
        "years": {"type": "number", "description": "Elapsed years"}}, "required": ["half_life_years", "years"]}),
        "science", "decay", "library")
    assert all("half-life" in m.lower() for m in said_as(decay, "half_life_years", 30.0))
    assert all("elapsed years" in m for m in said_as(decay, "years", 30.0))
    # one country alone keeps its short forms ("for Poland")
    alone = prepare(Tool("holidays", "List public holidays", {"type": "object", "properties": {
        "country": {"type": "string", "description": "Country name"}}, "required": ["country"]}), "travel", "h", "library")
    assert not alone.kinds["country"].alike and "for Poland" in said_as(alone, "country", "Poland")


def test_a_choice_or_a_year_is_said_bare_only_when_asked_and_never_where_another_parameter_could_take_it():
    """"in Celsius", "in 2020": with schema_data.bare_share, people say a choice or a year without its
    parameter's name, and the call still carries it. Not where another choice of the tool has that
    member, or another number could be the year."""
    weather = prepare(Tool("get_weather", "Get the weather for a city", {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"},
        "year": {"type": "integer", "description": "Year of the record"}}, "required": ["city"]}),
        "weather", "w", "library")
    assert all("unit" in m for m in said_as(weather, "unit", "celsius"))          # off by default
    assert all("year" in m for m in said_as(weather, "year", 2020))
    units = said_as(weather, "unit", "celsius", bare=0.35)
    assert any("unit" not in m for m in units) and any("unit" in m for m in units)
    years = said_as(weather, "year", 2020, bare=0.35)
    assert "in 2020" in years and any("year" in m for m in years)
    both = prepare(Tool("convert_temperature", "Convert a temperature", {"type": "object", "properties": {
        "value": {"type": "number", "description": "Temperature"},
        "from_unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Unit to convert from"},
        "to_unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Unit to convert to"}},
        "required": ["value"]}), "weather", "t", "library")
    assert all("unit" in m for key in ("from_unit", "to_unit") for m in said_as(both, key, "celsius", bare=1.0))
    span = prepare(Tool("compare_years", "Compare two years", {"type": "object", "properties": {
        "start_year": {"type": "integer", "description": "First year"},
        "end_year": {"type": "integer", "description": "Second year"}}, "required": ["start_year", "end_year"]}),
        "history", "y", "library")
    # named, or said with the direction only it has ("from 2019"), never "in 2019"
    assert all("year" in m or m == "from 2019" for m in said_as(span, "start_year", 2019, bare=1.0))


def test_units_come_from_the_description_in_order_and_a_rate_is_said_bare():
    assert classify("consumption", {"type": "number", "description": "Fuel use in liters per 100 km"}, {}).unit == []
    assert classify("price_per_liter", {"type": "number", "description": "Fuel price per liter"}, {}).unit == []
    assert "km" in classify("distance_km", {"type": "number", "description": "Trip distance in kilometers"}, {}).unit
    assert classify("to_base", {"type": "integer", "description": "Base to convert to"}, {}).role == "to"
    weight = prepare(Tool("bmi", "Body mass index", {"type": "object", "properties": {
        "weight_kg": {"type": "number", "description": "Weight in kilograms"}}, "required": ["weight_kg"]}), "h", "b", "library")
    # said without its noun ("for 70 kg"), a number keeps its unit: "for 70" would name nothing
    assert all("kg" in m or "kilos" in m or "weight" in m for m in said_as(weight, "weight_kg", 70.0))


@pytest.mark.parametrize("name, description, sem", [
    ("ip_address", "IPv4 address", "ip"),                   # was an address: "ip address of 45 Maple Avenue"
    ("event_id", "Event identifier", "id"), ("student_id", "Student number", "id"),    # were a venue, a person
    ("file_name", "Document to translate", "file"),          # was a person
    ("race_name", "Name of the race or grand prix", "title"),
    ("player_name", "Full name of the player", "person"), ("restaurant_name", "Restaurant name", "venue"),
    ("email_address", "Guest email", "email"), ("address", "Street address", "address"),
])
def test_the_head_word_of_a_compound_name_decides_what_it_names(name, description, sem):
    assert classify(name, {"type": "string", "description": description}, {}).sem == sem
    # a format says more than a name: a `user_id` that is a uuid stays one
    assert classify("user_id", {"type": "string", "format": "uuid"}, {}).sem == "uuid"


@pytest.mark.parametrize("name, description, sem", [
    ("rate", "Interest rate per period as a decimal (not per cent)", "fraction"),
    ("discount_rate", "Discount rate per period", "fraction"),
    ("annual_return", "Expected annual rate of return", "fraction"),
    ("p3", "Annual inflation rate as a fraction", "fraction"),      # masked: the description alone says it
    ("annual_rate", "Annual interest rate in percent", "percent"),
    ("tip_percent", "Tip in percent", "percent"),
    ("exchange_rate", "Rate to convert at", "number"),
    ("min_confidence", "Lowest confidence score to report", "fraction"),     # with minimum 0, maximum 1
])
def test_a_rate_the_schema_takes_as_a_decimal_is_a_fraction(name, description, sem):
    spec = {"type": "number", "description": description}
    if name == "min_confidence":
        assert classify(name, spec, {}).sem == "number"
        spec.update(minimum=0, maximum=1)
    assert classify(name, spec, {}).sem == sem


def test_a_share_between_0_and_1_is_drawn_in_bounds_and_said_as_a_percent():
    sampler = Sampler(load_vocabulary(), holdout=0.0)
    kind = classify("test_size", {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1,
                                  "description": "Share of rows held out for testing"}, {})
    values = [sampler.draw(kind, random.Random(s), False) for s in range(200)]
    assert all(0 < x < 1 for x in values) and len(set(values)) > 20
    assert not grounding_problem(kind, 0.35, "hold out 35% of rows", {})
    assert grounding_problem(kind, 0.35, "hold out 3.5% of rows", {})


def test_a_fraction_is_said_as_a_percent_and_a_percent_rate_as_itself():
    """A request says "4.5%" where the schema takes 0.045; a rate "in percent" takes 4.5 for "4.5%". Both
    are rates people quote (under 16%), and "5%" grounds 0.05 only for the fraction."""
    sampler = Sampler(load_vocabulary(), holdout=0.0)
    tool = Tool("loan", "Loan schedule", {"type": "object", "properties": {
        "annual_interest_rate": {"type": "number", "description": "Annual interest rate as a decimal, e.g. 0.045"},
        "annual_rate": {"type": "number", "description": "Annual interest rate in percent"}},
        "required": ["annual_interest_rate", "annual_rate"]})
    p = prepare(tool, "finance", "loan", "library")
    frac, pct = p.kinds["annual_interest_rate"], p.kinds["annual_rate"]
    as_percent = pct_said = 0
    for s in range(200):
        rng = random.Random(s)
        x, y = sampler.draw(frac, rng, False), sampler.draw(pct, rng, False)
        assert 0 < x < 0.16 and 0 < y < 16
        text = "".join(piece.text for piece in mention(frac, x, rng, {})).lower()
        assert not grounding_problem(frac, x, text, {}), text
        as_percent += "%" in text or "percent" in text
        said = "".join(piece.text for piece in mention(pct, y, rng, {})).lower()
        assert not grounding_problem(pct, y, said, {}), said
        pct_said += "%" in said or "percent" in said
    assert 120 <= as_percent < 200 and pct_said >= 120      # mostly a percent; the decimal as written sometimes
    assert grounding_problem(pct, 0.05, "at 5%", {}) and not grounding_problem(frac, 0.05, "at 5%", {})
    assert grounding_problem(frac, 5.0, "at 5%", {}) and grounding_problem(frac, 0.05, "at 15%", {})


def test_an_optional_flag_a_request_mentions_mostly_leaves_its_default():
    """People name a flag to change it: a mentioned flag of default false is mostly on, of default true
    mostly off, of no default mostly on; a required flag is either. The form-filling "x: yes" is not said."""
    sampler = Sampler(load_vocabulary(), holdout=0.0)
    tool = Tool("route", "Plan a route", {"type": "object", "properties": {
        "avoid_tolls": {"type": "boolean", "default": False}, "show_traffic": {"type": "boolean", "default": True},
        "include_images": {"type": "boolean"}, "metric": {"type": "boolean"}}, "required": ["metric"]})
    p = prepare(tool, "travel", "route", "library")
    on: Counter = Counter()
    for s in range(400):
        args = sampler.draw_fields(p.kinds, ["metric"], random.Random(s), False, optional_share=1.0)
        on.update(k for k, v in args.items() if v)
    assert 280 <= on["avoid_tolls"] <= 360 and 40 <= on["show_traffic"] <= 120
    assert 280 <= on["include_images"] <= 360 and 150 <= on["metric"] <= 250
    said = {"".join(piece.text for piece in mention(p.kinds["include_images"], True, random.Random(s), {}))
            for s in range(200)}
    assert "including images" in said and not any(":" in x for x in said)


def test_list_items_with_commas_are_kept_apart_by_semicolons():
    kind = classify("cities", {"type": "array", "items": {"type": "string"}, "description": "City and country of each stop"}, {})
    assert kind.items.qualify == "country"
    text = "".join(p.text for p in value_pieces(kind, ["Riga, Latvia", "Lyon, France", "Osaka, Japan"],
                                                random.Random(1), {}))
    assert "Riga, Latvia; Lyon, France" in text, text


def test_comma_separated_strings_are_said_as_lists(drafts):
    """A string described as "Comma-separated ticker symbols" gets "AAPL,TSLA", said item by item ("AAPL
    and TSLA"), and verification checks every item; library variants take some string lists that way."""
    src, kept, _ = drafts
    seen = 0
    for d in kept:
        for g in d.calls:
            for key, value in g.call.arguments.items():
                kind = g.prepared.kinds[key]
                if kind.sem == "csv":
                    items = value.split(",")
                    assert len(items) >= 2 and all(i.strip() == i and i for i in items), value
                    assert all(any(f.lower() in d.user_text.lower() for f in forms(kind.items, i, src.aliases))
                               for i in items), (value, d.user_text)
                    assert grounding_problem(kind, value + ",Zanzibar Quartet", d.user_text.lower(), src.aliases)
                    seen += 1
    assert seen >= 3
    kind = classify("symbols", {"type": "string", "description": "Comma-separated stock ticker symbols"}, {})
    assert (kind.sem, kind.items.sem) == ("csv", "ticker")
    assert classify("symbol", {"type": "string", "description": "Stock ticker symbol"}, {}).sem == "ticker"


def test_a_dropped_value_is_caught(drafts):
    src, kept, _ = drafts
    d = next(d for d in kept if d.shape == "simple" and any(isinstance(v, str) and len(v) > 3
                                                           for v in d.calls[0].call.arguments.values()))
    value = next(v for v in d.calls[0].call.arguments.values() if isinstance(v, str) and len(v) > 3)
    text = d.user_text.lower().replace(value.lower(), "it")
    for alias in src.aliases.get(value, []):
        text = text.replace(alias.lower(), "it")
    assert check(d, text, FMTS, src.aliases) == "general:ungrounded"


def test_optional_parameters_are_sometimes_left_out(drafts):
    _, kept, _ = drafts
    present, absent = 0, 0
    for d in kept:
        for g in d.calls:
            for key in g.prepared.tool.properties:
                if key not in g.prepared.tool.required:
                    present += key in g.call.arguments
                    absent += key not in g.call.arguments
    assert present > 50 and absent > 50


def test_masked_names_only_in_masked_rows(drafts):
    src, kept, _ = drafts
    names = {t.tool.name for t in src.library}
    masked = [d for d in kept if d.masked]
    assert len(masked) > 50
    for d in kept:
        offered = {t.name for t in d.conversation.tools}
        if d.masked:
            assert not offered & names
            assert all(c.name not in names and not set(c.arguments) & set(g.call.arguments)
                       for c, g in zip(d.expected_calls, d.calls) if c.arguments)
            assert d.meta["id_suffix"].endswith(".masked")
        else:
            assert offered <= names and "masked" not in d.meta["id_suffix"]


def test_every_bfcl_shape_is_there(drafts):
    _, kept, _ = drafts
    by_shape = Counter(d.shape for d in kept)
    assert set(by_shape) == {"simple", "multiple", "parallel", "parallel_multiple", "irrelevance"}
    for d in kept:
        names = [c.name for c in d.expected_calls]
        offered = d.conversation.tools
        if d.shape == "simple":
            assert len(offered) == 1 and len(names) == 1
        elif d.shape == "multiple":
            assert len(offered) >= 2 and len(names) == 1
        elif d.shape == "parallel":
            assert len(names) >= 2 and len(set(names)) == 1
        elif d.shape == "parallel_multiple":
            assert len(names) >= 2 and len(set(names)) >= 2
        else:
            assert names == [] and d.category == "unavailable"
            msgs = d.conversation.messages
            assert [m.role for m in msgs] == ["user", "assistant"] and not msgs[-1].tool_calls
            assert any(w in msgs[-1].content.lower() for w in ("can't", "not able", "don't have"))


def test_parallel_values_said_as_one_list_are_one_call_each():
    """coordinate_share=1: a "parallel" row asks once, the values that differ listed ("for Oslo and
    Bergen"): the calls differ in that one parameter and nothing but a list separator stands between its
    values. At 0 each call has its own clause or "the same for X"."""
    def listed(share: float) -> int:
        n = 0
        for d in verified(source(shapes={"parallel": 1.0}, coordinate_share=share), 120):
            args = [c.call.arguments for c in d.calls]
            assert len({c.call.name for c in d.calls}) == 1 and len(args) >= 2
            differing = {k for a in args for k in a if any(a.get(k) != b.get(k) for b in args)}
            said = [str(a[k]) for k in differing for a in args]
            if len(differing) == 1 and all(v in d.user_text for v in said):    # said as written
                at = [d.user_text.index(v) for v in said]
                gaps = [d.user_text[a + len(v):b] for a, v, b in zip(at, said, at[1:])]
                n += all(re.fullmatch(r"\s*(,|;)?\s*(and|&)?\s*", g) for g in gaps)
        return n

    assert listed(1.0) >= 40 and listed(0.0) <= 2


def test_max_calls_lets_a_request_ask_for_four_and_five_calls():
    """max_calls=5: parallel rows make 2..5 calls of one tool, parallel_multiple rows 2..5 calls over 2+
    tools, a repeated tool right after its first call; every row still passes the checks. At 3 no row
    makes more than 3, as before the option."""
    def counts(max_calls: int) -> Counter:
        out: Counter = Counter()
        for d in verified(source(shapes={"parallel": 0.5, "parallel_multiple": 0.5}, max_calls=max_calls), 200):
            names = [c.call.name for c in d.calls]
            if d.shape == "parallel_multiple":
                assert len(set(names)) >= 2
                # above 3, a tool asked again comes right after its own first call
                assert max_calls == 3 or all(names.index(n) == i or names[i - 1] == n for i, n in enumerate(names))
            out[d.shape, len(names)] += 1
        return out

    five, three = counts(5), counts(3)
    assert max(n for _, n in three) == 3
    # at 3 the key changes nothing, so datasets made before it stay current
    from data_gen.generate import config_fingerprint
    fingerprint = [config_fingerprint(DataGenConfig(schema_data=SchemaDataConfig(max_calls=n))) for n in (3, 5)]
    assert fingerprint[0] == config_fingerprint(DataGenConfig()) != fingerprint[1]
    for shape in ("parallel", "parallel_multiple"):
        assert five[shape, 4] >= 10 and five[shape, 5] >= 10, five
        assert not any(n > 5 for _, n in five)


def test_train_library_is_hundreds_of_tools_over_many_domains():
    lib = build_library(400)
    assert len(lib) == 400 and len({t.tool.name for t in lib}) == 400
    assert len({t.domain for t in lib}) >= 15


def test_unseen_library_is_disjoint_and_the_check_bites():
    train, unseen = build_library(400), unseen_library()
    check_disjoint(train, unseen)
    assert not {t.domain for t in train} & {t.domain for t in unseen}
    assert not {name_key(t.tool.name) for t in train} & {name_key(t.tool.name) for t in unseen}
    clash = LibTool(Tool("finance.convertCurrency", "x", {"type": "object", "properties": {}}), "astronomy", "c")
    with pytest.raises(ToolkitError, match="convertCurrency"):
        check_disjoint(train, unseen + [clash])
    with pytest.raises(ToolkitError, match="finance"):
        check_disjoint(train, [LibTool(clash.tool, "finance", "c")])


def test_unseen_suite_loads_as_an_eval_suite(tmp_path):
    info = write_suite(tmp_path / "unseen.jsonl", 40)
    cases = load_suite(tmp_path / "unseen.jsonl")
    assert len(cases) == 40 and info["cases"] == 40
    assert {c.difficulty for c in cases} == {"simple", "multiple", "parallel", "parallel_multiple", "irrelevance"}
    train = {t.tool.name for t in build_library(400)}
    assert not {t.name for c in cases for t in c.tools} & train


def test_end_to_end_with_only_user_tools_and_no_generation_section(tmp_path):
    tools = tmp_path / "my_tools"
    tools.mkdir()
    (tools / "lights.yaml").write_text(
        "name: set_lights\ndescription: Turn the lights in a room on or off\nparameters:\n  type: object\n"
        "  properties:\n    room: {type: string, description: Room name}\n"
        "    state: {type: string, enum: ['on', 'off'], description: Desired state}\n"
        "    brightness: {type: integer, minimum: 1, maximum: 100, description: Brightness in percent}\n"
        "  required: [room, state]\n")
    (tools / "tickets.json").write_text(json.dumps({"name": "buy-tickets", "description": "Buy concert tickets",
        "parameters": {"type": "object", "properties": {
            "artist": {"type": "string", "description": "Performing artist"},
            "seats": {"type": "integer", "description": "How many seats"}}, "required": ["artist", "seats"]}}))
    cfg = DataGenConfig(output_dir=str(tmp_path / "ds"), num_conversations=120, shard_size=60, tool_paths=[str(tools)],
                        schema_data=SchemaDataConfig(share=1.0, library_size=0, bfcl_paths=[]))
    manifest = generate(cfg, progress=False)
    dd = load_from_disk(cfg.output_dir)
    g = manifest["schema_data"]
    assert g["rows"] == 120 and g["by_source"] == {"builtin": 0, "user": 120}
    assert sorted(g["user_tools"]) == ["buy-tickets", "set_lights"]
    assert set(g["by_shape"]) == {"simple", "multiple", "parallel", "parallel_multiple", "irrelevance"}
    reader = ConversationReader()
    for row in dd["train"]:
        conv = reader(row)                      # what train and eval read
        assert "-g." in row["id"]
        if not row["id"].endswith(".masked"):
            assert {t.name for t in conv.tools} <= {"buy-tickets", "set_lights"}
    # resumable and deterministic: a second run into another folder gives the same rows
    again = generate(DataGenConfig(**{**cfg.__dict__, "output_dir": str(tmp_path / "ds2")}), progress=False)
    assert again["splits"] == manifest["splits"]
    assert load_from_disk(str(tmp_path / "ds2"))["train"]["user_text"] == dd["train"]["user_text"]


def test_mixed_dataset_counts_both_sources(tmp_path):
    cfg = DataGenConfig(output_dir=str(tmp_path / "mix"), num_conversations=200, shard_size=100,
                        schema_data=SchemaDataConfig(share=0.4))
    m = generate(cfg, progress=False)
    g = m["schema_data"]
    assert g["by_source"]["builtin"] > 60 and g["by_source"]["library"] > 40
    assert sum(g["by_shape"].values()) == g["rows"]
    assert g["library_size"] == 400 and len(g["library_by_domain"]) >= 15
    assert not any(k.startswith("teacher:") for k in m["rejections"])


def test_bfcl_questions_are_decontaminated(tmp_path, drafts):
    _, kept, _ = drafts
    text = kept[0].user_text
    bfcl = tmp_path / "BFCL_v4_simple.json"
    bfcl.write_text(json.dumps({"id": "simple_0", "question": [[{"role": "user", "content": text}]],
                                "function": []}) + "\n")
    src = source(bfcl_paths=[str(tmp_path), str(tmp_path / "absent")])
    assert src.bfcl_files == [bfcl]
    assert src.bfcl_reason(text) == "decontaminated:bfcl_exact"


def test_bad_config_and_bad_user_tools_are_named(tmp_path):
    with pytest.raises(ToolkitError, match="schema_data.shapes"):
        SchemaDataConfig(shapes={"poetry": 1.0})
    with pytest.raises(ToolkitError, match="schema_data.lookalike"):
        SchemaDataConfig(lookalike=1.5)
    with pytest.raises(ToolkitError, match="teacher"):
        SchemaDataConfig(teacher=TeacherConfig(url="http://127.0.0.1:1/v1"))
    with pytest.raises(ToolkitError, match="schema_data.max_calls"):
        SchemaDataConfig(max_calls=2)
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: f\ndescription: x\nparameters:\n  type: object\n  properties:\n"
                   "    blob: {type: object, description: anything}\n  required: [blob]\n")
    cfg = DataGenConfig(tool_paths=[str(bad)], schema_data=SchemaDataConfig(share=1.0, library_size=0))
    with pytest.raises(ToolkitError, match=r"bad.yaml.*f.parameters"):
        GeneralSource(cfg, load_registry([str(bad)]), load_vocabulary())


# ----- the teacher, against a live OpenAI-compatible server on 127.0.0.1 ---------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def teacher_server():
    """A small OpenAI-compatible app standing in for the large model: even requests come back reworded
    with every value kept, odd ones with the values dropped."""
    import uvicorn
    from fastapi import FastAPI

    app = FastAPI()
    seen = {"n": 0}

    @app.post("/v1/chat/completions")
    def chat(body: dict):
        prompt = body["messages"][-1]["content"]
        request = prompt.split("\n")[0].removeprefix("Request: ")
        seen["n"] += 1
        text = f"Hi! {request}" if seen["n"] % 2 else "please just do the thing I said"
        return {"id": f"c{seen['n']}", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(100):
        if server.started:
            break
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/v1"
    server.should_exit = True
    thread.join(timeout=5)


def verified(src: GeneralSource, n: int) -> list:
    """The drafts of the first n training builds that pass verification."""
    out = []
    for i in range(n):
        try:
            d = src.build(i, eval_pool=False)
        except Rejected:
            continue
        if src.check(d) is None:
            out.append(d)
    return out


def test_teacher_rewrites_are_verified_again(teacher_server):
    src = source(teacher=TeacherConfig(url=teacher_server, model="stand-in", share=1.0))
    kept = verified(src, 40)
    counts = src.drain()
    assert counts["teacher:accepted"] >= 5
    assert counts["teacher:rejected:ungrounded"] >= 5          # the reply that dropped the values
    rewritten = [d for d in kept if d.user_text.startswith("Hi! ")]
    assert len(rewritten) == counts["teacher:accepted"]
    for d in rewritten:
        assert d.conversation.messages[0].content == d.user_text
        assert check(d, d.user_text, FMTS, src.aliases) is None
    assert not any(d.user_text == "please just do the thing I said" for d in kept)


def test_teacher_counts_land_in_the_manifest(tmp_path, teacher_server):
    cfg = DataGenConfig(output_dir=str(tmp_path / "t"), num_conversations=30, shard_size=20, verify_formats=["qwen3"],
                        schema_data=SchemaDataConfig(share=1.0, teacher=TeacherConfig(url=teacher_server, model="m", share=1.0)))
    m = generate(cfg, progress=False)
    t = m["schema_data"]["teacher"]
    assert t["teacher:accepted"] > 0 and t["teacher:rejected:ungrounded"] > 0
    assert not any(k.startswith("teacher:") for k in m["rejections"])


def test_an_unreachable_teacher_keeps_the_original_wording():
    src = source(teacher=TeacherConfig(url=f"http://127.0.0.1:{free_port()}/v1", model="m", share=1.0, timeout=2))
    d = src.build(3, eval_pool=False)
    before = d.user_text
    assert src.check(d) is None and d.user_text == before
    assert any(k.startswith("teacher:error:") for k in src.drain())


# ----- any schema --------------------------------------------------------------------------------------
NAMES = st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True)
TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)


def scalar_schema():
    return st.one_of(
        st.fixed_dictionaries({"type": st.just("string")}, optional={"description": TEXT, "format": st.sampled_from(
            ["date", "date-time", "email", "uri", "time"]), "maxLength": st.integers(0, 30), "pattern": st.sampled_from(
            ["^[A-Z]{3}$", "^\\d+$", "["])}),
        st.fixed_dictionaries({"type": st.sampled_from(["integer", "number"])}, optional={
            "description": TEXT, "minimum": st.integers(-50, 50), "maximum": st.integers(-50, 500),
            "multipleOf": st.sampled_from([1, 2, 5, 0.5])}),
        st.fixed_dictionaries({"type": st.just("boolean")}, optional={"description": TEXT}),
        st.fixed_dictionaries({"enum": st.lists(st.one_of(TEXT, st.integers(), st.none()), min_size=1, max_size=4)},
                              optional={"type": st.just("string"), "description": TEXT}),
    )


def param_schema():
    return st.recursive(scalar_schema(), lambda inner: st.one_of(
        st.fixed_dictionaries({"type": st.just("array"), "items": inner}, optional={
            "minItems": st.integers(0, 3), "maxItems": st.integers(0, 4), "description": TEXT}),
        st.builds(lambda props, req, d: {"type": "object", "properties": props,
                                         "required": [k for k in props if req], "description": d},
                  st.dictionaries(NAMES, inner, max_size=3), st.booleans(), TEXT)), max_leaves=4)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(props=st.dictionaries(NAMES, param_schema(), max_size=4), required=st.data(), name=NAMES, desc=TEXT,
       seed=st.integers(0, 2**16))
def test_any_schema_gives_verified_rows_or_counted_rejections(props, required, name, desc, seed):
    import random

    try:
        req = required.draw(st.lists(st.sampled_from(sorted(props)), unique=True)) if props else []
        tool = Tool(name, desc, {"type": "object", "properties": props, "required": req})
    except ToolkitError:
        return                     # not a valid tool schema in the first place: the loader says so
    sampler = SAMPLER[0]
    try:
        p = prepare(tool, "any", name, "user")
    except Unsupported as u:
        assert u.reason
        return
    other = prepare(Tool("zz_other", "Get the time in a city", {"type": "object", "properties": {
        "city": {"type": "string", "description": "City"}}, "required": ["city"]}), "other", "zz", "library")
    builder = EpisodeBuilder(sampler, SurfaceConfig(), shapes=SchemaDataConfig().shapes, max_offered=3,
                             optional_share=0.5, mask_share=0.3, spoken_share=0.1, aliases=sampler.alias)
    rng = random.Random(seed)
    for _ in range(4):
        try:
            d = builder.build(rng, False, [p, other], ExecutionContext(rng=rng))
        except Rejected as r:
            assert r.reason.startswith("general:")
            continue
        reason = check(d, d.user_text, FMTS, sampler.alias)
        if reason is None:
            offered = {t.name: t for t in d.conversation.tools}
            for c in d.expected_calls:
                assert offered[c.name].validation_errors(c.arguments) == []
        else:
            assert reason.startswith("general:")


SAMPLER = [Sampler(load_vocabulary(), 0.15)]


@pytest.mark.parametrize("hard", [0.0, 1.0])
def test_hard_irrelevance_offers_tools_of_the_request_domain_never_a_near_family(hard):
    import random

    from data_gen.schema_driven.episodes import near

    src = source(mask_share=0.0, hard_irrelevance=hard)
    pool = src.pools[False]
    by_name = {p.tool.name: p for p in pool}
    same, total = 0, 0
    for i in range(150):
        try:
            d = src.builder.irrelevance(random.Random(i), False, pool, ExecutionContext(), False)
        except Rejected:
            continue
        wanted = d.meta["wanted"].prepared
        offered = [by_name[t.name] for t in d.conversation.tools]
        assert not any(near(o.family, wanted.family) for o in offered)      # nothing offered could serve it
        same += any(o.domain == wanted.domain for o in offered)
        total += 1
    assert total > 100
    assert (same == 0) if hard == 0.0 else (same / total > 0.9)
    assert near("get_exchange_rate", "convert_currency") and not near("convert_currency", "compound_interest")


def test_a_lookalike_takes_the_requests_kinds_of_values_and_nothing_else():
    builder = EpisodeBuilder(Sampler(load_vocabulary(), 0.1), SurfaceConfig(), shapes={"simple": 1.0}, max_offered=3,
                             optional_share=0.5, mask_share=0.0, spoken_share=0.0, aliases={}, lookalike=1.0)
    is_prime = tool_of("is_prime", "Check whether a number is prime",
                       {"number": {"type": "integer", "description": "The number to test"}})
    fib = tool_of("fibonacci_number", "Get the nth Fibonacci number",
                  {"n": {"type": "integer", "description": "Position in the sequence"}})
    gcd = tool_of("compute_gcd", "Compute the greatest common divisor of two integers",
                  {"first": {"type": "integer", "description": "First integer"},
                   "second": {"type": "integer", "description": "Second integer"}})
    weather = tool_of("get_weather", "Get the weather in a city", {"city": {"type": "string", "description": "City"}})
    one_number = kinds_said([(is_prime, {"number": 17})])
    assert builder.fits(fib, one_number)                       # n can take the 17 the request says
    assert not builder.fits(gcd, one_number)                   # two integers needed, one said
    local_time = tool_of("get_local_time", "Get the local time in a city",
                         {"city": {"type": "string", "description": "City name"}})
    assert builder.fits(weather, kinds_said([(local_time, {"city": "Lyon"})]))
    assert not builder.fits(weather, one_number)
    assert near("convert_units", "convert_temperature")         # a unit converter can serve a temperature request


@pytest.mark.parametrize("shape", ["irrelevance", "multiple"])
def test_lookalike_distractors_are_offered_when_the_request_has_them(shape):
    """With `lookalike` on, far more rows offer a same-domain tool whose required parameters the request's
    values could fill, and it never is a near family (one that could serve)."""
    counts = {}
    for lookalike in (0.0, 1.0):
        src = source(mask_share=0.0, hard_irrelevance=1.0, lookalike=lookalike, shapes={shape: 1.0})
        pool = src.pools[False]
        by_name = {p.tool.name: p for p in pool}
        fit = total = 0
        for i in range(200):
            try:
                d = src.builder.build(random.Random(i), False, pool, ExecutionContext())
            except Rejected:
                continue
            if src.check(d) is not None:      # verification rejects a row now and then, as everywhere
                continue
            needed = [g.prepared for g in d.calls] or [d.meta["wanted"].prepared]
            said = kinds_said([(g.prepared, g.call.arguments) for g in d.calls] if d.calls else
                              [(needed[0], d.meta["wanted"].call.arguments)])
            others = [by_name[t.name] for t in d.conversation.tools if by_name[t.name] not in needed]
            assert not any(near(o.family, n.family) for o in others for n in needed)
            fit += any(o.domain == needed[0].domain and src.builder.fits(o, said) for o in others)
            total += 1
        assert total > 150
        counts[lookalike] = fit / total
    assert counts[1.0] > 2 * counts[0.0] and counts[1.0] > (0.4 if shape == "irrelevance" else 0.2)


def test_for_is_never_doubled(drafts):
    """"the same for" + a mention that opens with "for" / "of" ("for Köln", "of 40 km") drops the second,
    and so does a re-described tool ("Search for flights" -> "Look for flights", not "Look for for")."""
    _, kept, _ = drafts
    assert not [d.user_text for d in kept if re.search(r"\bfor (?:for|of) ", d.user_text)]


def tool_of(name: str, description: str, props: dict, required: list[str] | None = None):
    return prepare(Tool(name, description, {"type": "object", "properties": props,
                                            "required": required if required is not None else list(props)}),
                   "test", name, "library")


def inlined(p, args: dict, seeds: int = 60) -> list[str]:
    builder = EpisodeBuilder(Sampler(load_vocabulary(), 0.1), SurfaceConfig(), shapes={"simple": 1.0}, max_offered=3,
                             optional_share=0.5, mask_share=0.0, spoken_share=0.0, aliases={}, inline_share=1.0)
    return ["".join(piece.text for piece in builder.clause(p, args, random.Random(s), first=True)[0])
            for s in range(seeds)]


def test_a_value_stands_where_the_description_names_its_thing():
    """"Get the capital city of a country" asked as people ask it: "what is the capital city of Brazil?",
    never "... of a country, country Brazil"; a knowledge question whose tool is offered is a call."""
    capital = tool_of("country_capital", "Get the capital city of a country",
                      {"country": {"type": "string", "description": "Country name"}})
    said = inlined(capital, {"country": "Brazil"})
    assert all(re.search(r"capital city of Brazil", s) and "a country" not in s for s in said), said[:5]
    assert any(s.startswith(("what is", "what's")) for s in said)
    # a label keeps its word ("order A16071"); a person's name does not ("stats of LeBron James")
    order = tool_of("order_status", "Check the status of an order", {"order_id": {"type": "string"}})
    said = [s for s in inlined(order, {"order_id": "A16071"}) if "status of" in s]   # not "order status ..."
    assert said and all("status of order A16071" in s for s in said)
    stats = tool_of("player_stats", "Get the current stats of a given player",
                    {"player_name": {"type": "string", "description": "Full name of the player"}})
    said = inlined(stats, {"player_name": "LeBron James"})
    assert all("stats of LeBron James" in s for s in said)
    assert any(s.startswith("what are") for s in said) and not any(s.startswith(("what is", "what's")) for s in said)


@pytest.mark.parametrize("description, key", [
    ("Book a dog walker", "dog_name"),                      # "a dog" is half of "a dog walker"
    ("Convert an amount of money between currencies", "amount"),    # "250 of money"
    ("Find flights between a city and another city", "origin_city"),
])
def test_no_value_stands_in_a_phrase_it_cannot_replace(description, key):
    p = tool_of("t", description, {key: {"type": "string" if key != "amount" else "number"},
                                   "destination_city": {"type": "string"}} if "city" in key else
                {key: {"type": "string" if key != "amount" else "number"}})
    value = 250.0 if key == "amount" else "Rex" if key == "dog_name" else "Oslo"
    said = inlined(p, {key: value, **({"destination_city": "Rome"} if "city" in key else {})}, seeds=20)
    assert not any(description.lower().split(" a")[0] + " " + str(value).replace(".0", "") in s.lower()
                   for s in said), said[:3]
    assert all(re.search(r"\ba dog walker\b|an amount of money|a city and another city", s) for s in said)


def test_large_sums_are_said_in_words_and_money_with_its_sign():
    revenue = classify("year2_revenue", {"type": "number", "description": "Revenue in the second year"}, {})
    assert revenue.sem == "amount"
    said = forms(revenue, 1200000.0)
    assert {"1.2 million", "$1.2M", "$1.2 million", "$1,200,000"} <= set(said) and "1.2M" not in said
    population = classify("population", {"type": "integer", "description": "Number of residents"}, {})
    assert "250 thousand" in forms(population, 250000) and not any("$" in f or f.endswith("k")
                                                                    for f in forms(population, 250000))
    assert forms(revenue, 1234567.0) == ["1234567", "1,234,567", "$1,234,567"]    # not round: no words
    drawn = [Sampler(load_vocabulary(), 0.1).number(revenue, random.Random(s)) for s in range(300)]
    assert any(x >= 1e6 for x in drawn) and any(x < 2001 for x in drawn)
    request = "what is the year over year growth with revenue of $1.2M in the second year"
    assert not grounding_problem(revenue, 1200000.0, request.lower(), {})
    assert grounding_problem(revenue, 1200.0, request.lower(), {})
