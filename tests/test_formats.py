import keyword
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcore.conversation import Conversation, Message, Part
from toolcore.formats import FORMATS, get_format
from toolcore.formats.generic import signature
from toolcore.schema import Tool, ToolCall

MARKERS = ["<tool_call>", "</tool_call>", "<|tool_call_start|>", "<|tool_call_end|>", "<tool_response>",
           "</tool_response>", "<|tool_response_start|>", "<|tool_response_end|>", "<|im_end|>", "<|im_start|>"]

# every name a tool may have (toolcore.schema.TOOL_NAME): get-weather, math.factorial, 2fa, class, True
tool_name = st.from_regex(r"[A-Za-z0-9_.-]{1,64}", fullmatch=True)
# argument keys: identifiers, Python keywords (`from`, `class`) and the same characters as names
arg_key = st.one_of(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True), st.sampled_from(keyword.kwlist),
                    st.from_regex(r"[A-Za-z0-9_.-]{1,20}", fullmatch=True))
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40).filter(
    lambda s: not any(m in s for m in MARKERS))
scalar = st.one_of(text, st.integers(-10**12, 10**12), st.floats(allow_nan=False, allow_infinity=False),
                   st.booleans(), st.none(), st.sampled_from(["celsius", "fahrenheit", "Zürich"]))   # enum members
# nested objects take any text as keys (they are written as string literals in every format)
value = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(st.one_of(arg_key, text), inner, max_size=3)),
                     max_leaves=8)
call = st.builds(ToolCall, tool_name, st.dictionaries(arg_key, value, max_size=4))
calls = st.lists(call, min_size=1, max_size=3)


@pytest.mark.parametrize("name", list(FORMATS))
@settings(max_examples=150, deadline=None)
@given(calls=calls)
def test_parse_render_roundtrip(name, calls):
    fmt = get_format(name)
    parsed = fmt.parse(fmt.render_calls(calls))
    assert parsed.ok, parsed.failures
    assert parsed.calls == calls


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("tool", ["get-weather", "math.factorial", "2fa", "class", "True", "None", "-", "..",
                                  "a.b-c_d.9"])
def test_names_that_are_not_python_roundtrip(name, tool):
    fmt = get_format(name)
    wild = [ToolCall(tool, {"from": "Oslo", "class": None, "on": True}), ToolCall(tool, {})]
    rendered = fmt.render_calls(wild)
    assert tool in rendered
    assert fmt.parse(rendered).calls == wild


def test_lfm2_writes_wild_names_verbatim():
    rendered = get_format("lfm2").render_calls([ToolCall("math.factorial", {"n": 5}), ToolCall("get-weather", {})])
    assert rendered == "<|tool_call_start|>[math.factorial(n=5), get-weather()]<|tool_call_end|>"


@settings(max_examples=100, deadline=None)
@given(box=st.lists(st.integers(0, 4000), min_size=4, max_size=4))
def test_ovis_crop_roundtrip(box):
    fmt = get_format("ovis2_5")
    c = [ToolCall("crop", {"bbox": box})]
    rendered = fmt.render_calls(c)
    assert rendered == f"<tool_call>Crop [{box[0]},{box[1]},{box[2]},{box[3]}]</tool_call>"
    assert fmt.parse(rendered).calls == c


@pytest.mark.parametrize("name", list(FORMATS))
@settings(max_examples=200, deadline=None)
@given(garbage=st.text(alphabet=string.printable + "<|>[](){}\"'", max_size=80))
def test_parsing_never_raises(name, garbage):
    fmt = get_format(name)
    prefix = fmt.call_start
    for t in (garbage, prefix + garbage, prefix + garbage + fmt.call_end):
        fmt.parse(t)   # must not raise


@pytest.mark.parametrize("name, text, failure", [
    ("qwen2_5", '<tool_call>\n{"name": "f", "arguments": {"a": 1}', "truncated"),
    ("qwen2_5", "<tool_call>\n{name: f}\n</tool_call>", "invalid JSON"),
    ("qwen2_5", 'hi </tool_call>', "unbalanced"),
    ("lfm2", '<|tool_call_start|>[f(a=1), g(b=os.system("x"))]<|tool_call_end|>', "not a literal"),
    ("lfm2", "<|tool_call_start|>[f(1)]<|tool_call_end|>", "positional"),
    ("lfm2", '<|tool_call_start|>[f(a="x"', "truncated"),
    ("generic", '<|tool_call_start|>{"arguments": {}}<|tool_call_end|>', "no string 'name'"),
    ("ovis2_5", "<tool_call>Crop [1,2,3]</tool_call>", "malformed Crop"),
])
def test_malformed_output_becomes_recorded_failure(name, text, failure):
    res = get_format(name).parse(text)
    assert any(failure in f for f in res.failures), res.failures


def test_lfm2_keeps_good_calls_next_to_bad_ones():
    res = get_format("lfm2").parse('<|tool_call_start|>[f(a=1), g(b=os.system("x"))]<|tool_call_end|>')
    assert res.calls == [ToolCall("f", {"a": 1})] and len(res.failures) == 1


def test_ovis_crop_without_a_box_of_four_integers_is_written_as_json():
    fmt = get_format("ovis2_5")
    for args in ({"bbox": [1, 2, 3]}, {"bbox": "1,2,3,4"}, {"bbox": [1, 2, 3, 4.5]}, {"bbox": [1, 2, 3, 4], "z": 1}):
        c = [ToolCall("crop", args)]
        assert "Crop [" not in fmt.render_calls(c) and fmt.parse(fmt.render_calls(c)).calls == c


def episode(registry):
    call = ToolCall("get_weather", {"location": "Paris"})
    return Conversation([
        Message.text("user", "Weather in Paris?"),
        Message("assistant", [], [call]),
        Message.text("tool", '{"temperature_c": 18}', name="get_weather"),
        Message.text("assistant", "It's 18°C in Paris."),
    ], [registry["get_weather"]])


GOLDEN = {
    "qwen2_5": (
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n\n"
        "You may call one or more functions to assist with the user query.\n\nYou are provided with function "
        "signatures within <tools></tools> XML tags:\n<tools>\n"
        '{"type": "function", "function": {"name": "get_weather", "description": "Get current weather for a location", '
        '"parameters": {"type": "object", "properties": {"location": {"type": "string", "description": "City name"}}, '
        '"required": ["location"]}}}\n</tools>\n\nFor each function call, return a json object with function name and '
        "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n"
        '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call><|im_end|>\n'
        '<|im_start|>user\n<tool_response>\n{"temperature_c": 18}\n</tool_response><|im_end|>\n'
        "<|im_start|>assistant\nIt's 18°C in Paris.<|im_end|>\n"),
    "lfm2": (
        "<|startoftext|><|im_start|>system\nList of tools: <|tool_list_start|>"
        '[{"name": "get_weather", "description": "Get current weather for a location", "parameters": {"type": "object", '
        '"properties": {"location": {"type": "string", "description": "City name"}}, "required": ["location"]}}]'
        "<|tool_list_end|><|im_end|>\n<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n"
        '<|tool_call_start|>[get_weather(location="Paris")]<|tool_call_end|><|im_end|>\n'
        '<|im_start|>tool\n<|tool_response_start|>{"temperature_c": 18}<|tool_response_end|><|im_end|>\n'
        "<|im_start|>assistant\nIt's 18°C in Paris.<|im_end|>\n"),
}


@pytest.mark.parametrize("name", list(GOLDEN))
def test_golden_render(registry, name):
    assert get_format(name).render_text(episode(registry)) == GOLDEN[name]


@pytest.mark.parametrize("name", list(FORMATS))
def test_live_loop_continuation_rebuilds_the_training_text(registry, name):
    """prompt + emitted call + continuation(result) + answer == what training renders."""
    fmt, conv = get_format(name), episode(registry)
    built = fmt.prompt(conv) + fmt.render_calls(conv.messages[1].tool_calls) + fmt.turn_end
    built += fmt.continuation([conv.messages[2]]) + conv.messages[3].content + fmt.turn_end + "\n"
    assert built == fmt.render_text(conv)


@pytest.mark.parametrize("name", list(FORMATS))
def test_only_assistant_output_is_trainable(registry, name):
    fmt, conv = get_format(name), episode(registry)
    segs = fmt.render(conv)
    trainable = "".join(s.text for s in segs if s.trainable)
    assert trainable == fmt.render_calls(conv.messages[1].tool_calls) + fmt.turn_end + "It's 18°C in Paris." + fmt.turn_end
    frozen = "".join(s.text for s in segs if not s.trainable)
    assert "Weather in Paris?" in frozen and '{"temperature_c": 18}' in frozen


def test_ovis_crop_result_is_fed_back_inside_the_turn():
    fmt = get_format("ovis2_5")
    crop = ToolCall("crop", {"bbox": [10, 20, 110, 220]})
    conv = Conversation([
        Message("user", [Part("image", ref="street.png"), Part("text", text="What is the person holding?")]),
        Message("assistant", [], [crop]),
        Message("tool", [Part("image", ref="crop.png")], name="crop"),
        Message.text("assistant", "An umbrella."),
    ])
    text = fmt.render_text(conv)
    assert "<tool_call>Crop [10,20,110,220]</tool_call><image>An umbrella.<|im_end|>" in text
    assert text.count("<|im_start|>assistant") == 1
    assert fmt.continuation([conv.messages[2]]) == "<image>" and fmt.pauses_after(crop)
    segs = fmt.render(conv)
    assert [s.text for s in segs if s.trainable] == ["<tool_call>Crop [10,20,110,220]</tool_call>",
                                                     "An umbrella.<|im_end|>"]


def test_generic_signature_reads_schemas_without_a_top_level_type():
    tool = Tool("get-forecast", "Forecast", {"type": "object", "$defs": {"Unit": {"enum": ["c", "f"]}, "Days": {
        "type": "array", "items": {"$ref": "#/$defs/Days"}}}, "properties": {
        "city": {"anyOf": [{"type": "string"}, {"type": "null"}]}, "unit": {"$ref": "#/$defs/Unit"},
        "v": {"const": 2}, "days": {"$ref": "#/$defs/Days"}}, "required": ["city"]})
    assert signature(tool) == 'get-forecast(city: string|null, unit?: "c"|"f", v?: 2, days?: array of any): Forecast'
