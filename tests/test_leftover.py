"""runtime/leftover.py: the parts of a request that no call made so far serves."""

from runtime.leftover import leftover_parts, named_tools, schema_stems, serves_left_over, split_parts
from toolcore.schema import Tool, ToolCall

OFFERED = ["get_weather", "get_time", "pan_right", "set_timer", "send_message", "locatePharmacy"]


def call(name, **arguments):
    return ToolCall(name, arguments)


def test_requests_split_at_joining_words_but_never_inside_a_number():
    assert split_parts("check Oslo, then also for Köln. Finally Turku") == ["check Oslo", "for Köln", "Turku"]
    assert split_parts("round 1,277 and pan right one hundred and seventy-five degrees") == \
        ["round 1,277", "pan right one hundred and seventy-five degrees"]


def test_a_part_whose_value_no_call_uses_is_left_over():
    text = "i need to locate pharmacy in Limassol, then also for Köln, and then do the same for in Turku"
    got = leftover_parts(text, [call("locatePharmacy", location="Limassol"), call("locatePharmacy", location="Turku")], OFFERED)
    assert got == ["for Köln"]
    both = [call("locatePharmacy", location=c) for c in ("Limassol", "Köln", "Turku")]
    assert leftover_parts(text, both, OFFERED) == []


def test_numbers_are_read_spelled_out_and_as_durations():
    text = "pan right by forty degrees, then turn right one hundred and seventy-five degrees"
    assert leftover_parts(text, [call("pan_right", degrees=40)], OFFERED) == ["turn right one hundred and seventy-five degrees"]
    assert leftover_parts(text, [call("pan_right", degrees=40), call("pan_right", degrees=175)], OFFERED) == []
    assert leftover_parts("put two hours on the timer", [call("set_timer", minutes=120)], OFFERED) == []


def test_a_part_without_values_is_served_by_a_call_to_its_tool_and_left_over_when_it_names_another():
    text = "what time is it, and what do you see to your right"
    assert leftover_parts(text, [call("get_time")], OFFERED) == ["what do you see to your right"]
    assert leftover_parts(text, [call("get_time"), call("pan_right")], OFFERED) == []
    # filler and words no tool is named by are never a part of their own
    assert leftover_parts("hey there, get the weather in Oslo thanks a lot", [call("get_weather", location="Oslo")], OFFERED) == []


def test_clock_times_and_dates_are_not_values_to_serve_and_no_calls_means_no_opinion():
    text = "remind me at 8:00 PM on June 3rd, 2025 to call Mum"
    assert leftover_parts(text, [call("create_reminder", title="call Mum", time="20:00")], OFFERED) == []
    # a part that states only a clock time is served by a call to its tool, whatever hour it wrote
    assert leftover_parts("set an alarm for 5 AM", [call("set_alarm", hour=15, minute=0)], OFFERED + ["set_alarm"]) == []
    assert leftover_parts("what is the weather in Oslo", [], OFFERED) == []
    # a capitalised word that names an offered tool is not a value to serve
    assert leftover_parts("play Taylor Swift, and on Spotify", [call("spotify.play", artist="Taylor Swift")], ["spotify.play"]) == []
    # a possessive names the person the call has
    assert leftover_parts("pull up Olivia's details", [call("search_contacts", query="Olivia")], OFFERED) == []


def test_what_counts_the_values_or_is_too_small_to_be_one_is_no_value_to_serve():
    gcd = Tool("math.gcd", "Calculate the greatest common divisor of two integers.", {"type": "object", "properties": {
        "num1": {"type": "integer", "description": "The first number."},
        "num2": {"type": "integer", "description": "The second number."}}, "required": ["num1", "num2"]})
    text = "Find the Greatest Common Divisor of two numbers, say 36 and 48."
    both = [call("math.gcd", num1=36, num2=48)]
    assert leftover_parts(text, both, ["math.gcd"], schema_stems([gcd])) == []
    # without the schema, "two" and "Greatest Common Divisor" read as values no call holds
    assert leftover_parts(text, both, ["math.gcd"]) == ["Find the Greatest Common Divisor of two numbers"]
    # a count of what the schema does not name is a value: "two hours"
    assert leftover_parts("set a timer, and two hours", [call("set_timer", minutes=5)], OFFERED, schema_stems([gcd])) \
        == ["two hours"]
    # zero is no value; "(1,2)" is two numbers, not 12; two capitals are a value a call can hold
    assert leftover_parts("a fall from 150 m, and initial velocity zero", [call("fall", height=150)], OFFERED) == []
    assert leftover_parts("distance from A(3,4) to B(1,2)", [call("dist", a=[3, 4], b=[1, 2])], OFFERED) == []
    assert leftover_parts("shares of AMD, and ticker symbol KO", [call("quote", symbol="AMD")], OFFERED) == \
        ["ticker symbol KO"]
    both = [call("quote", symbol="AMD"), call("quote", symbol="KO")]
    assert leftover_parts("shares of AMD, and ticker symbol KO", both, OFFERED) == []


def test_a_call_opened_for_a_left_over_part_serves_it_or_was_made_up():
    text = "Find art exhibitions for the upcoming month in the Museum of Modern Art, New York."
    first = call("exhibition_info", museum_name="Museum of Modern Art", month=1)
    parts = leftover_parts(text, [first], ["exhibition_info"])
    assert parts == ["New York"]
    again = call("exhibition_info", museum_name="Museum of Modern Art")
    assert not serves_left_over(text, [first], again, parts, ["exhibition_info"])
    there = call("exhibition_info", museum_name="Museum of Modern Art", location="New York")
    assert serves_left_over(text, [first], there, parts, ["exhibition_info"])


def test_the_tools_a_left_over_part_names_by_a_word_of_their_names():
    tools = [Tool(n, "", {"type": "object", "properties": {}}) for n in
             ["send_message", "get_weather", "set_alarm", "create_reminder", "locatePharmacy", "set_timer", "get_time"]]
    text = "Text Emma saying good night, check the weather in Chicago, and set an alarm for 5 AM."
    parts = leftover_parts(text, [call("send_message", recipient="Emma", message="good night"),
                                  call("set_alarm", hour=5, minute=0)], [t.name for t in tools])
    assert parts == ["check the weather in Chicago"]
    assert [t.name for t in named_tools(parts, tools)] == ["get_weather"]
    assert [t.name for t in named_tools(["remind me to stretch at 4:00 PM"], tools)] == ["create_reminder"]
    assert [t.name for t in named_tools(["the nearest pharmacy in Leeds"], tools)] == ["locatePharmacy"]
    # "timer" and "time" share a stem: both stay open, and the grammar lets the model choose
    assert [t.name for t in named_tools(["a timer for 5 minutes"], tools)] == ["set_timer", "get_time"]
    assert named_tools(["and for Köln"], tools) == [] and named_tools([], tools) == []
