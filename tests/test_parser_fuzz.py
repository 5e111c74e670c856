"""Hostile and broken text never crashes a format's parser.

What users bring and what small models emit (degenerate repetition is common) can be anything: deep
nesting, megabytes of repetition, NaN / Infinity / 1e999999, duplicate keys, lone surrogates, a call
cut off anywhere. Every format's `parse` returns within a bounded time, records the problem as a
failure, and hands back only calls that can be saved as UTF-8 JSON (finite numbers, valid text).
"""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolcore.formats import FORMATS, get_format
from toolcore.formats.base import ParseResult
from toolcore.schema import ToolCall

from .test_formats import calls as call_lists

JSON_FORMATS = [n for n in FORMATS if n != "lfm2"]
# generous: the machine is shared; a parser that backtracks or recurses badly takes far longer
SECONDS = 5.0


def parse_checked(fmt, text: str) -> ParseResult:
    """`fmt.parse(text)`, checked for what every result must hold, whatever the text."""
    started = time.perf_counter()
    result = fmt.parse(text)
    assert time.perf_counter() - started < SECONDS, f"{len(text)} characters took too long"
    for call in result.calls:   # saveable as predictions.jsonl is: no inf/NaN, no lone surrogates
        json.dumps(call.to_dict(), allow_nan=False, ensure_ascii=False).encode("utf-8")
    assert all(isinstance(f, str) and f and "\n" not in f for f in result.failures), result.failures
    return result


def one_call_body(fmt, call: ToolCall) -> str:
    rendered = fmt.render_calls([call])
    return rendered[len(fmt.call_start):len(rendered) - len(fmt.call_end)]


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("opener", ["[", "{", '{"a": ', "(", "f(a=", '{"name": "f", "arguments": '])
@pytest.mark.parametrize("depth", [100, 1_000, 200_000])
def test_deep_nesting_is_a_failure(name, opener, depth):
    fmt = get_format(name)
    for text in (fmt.call_start + opener * depth, fmt.call_start + opener * depth + fmt.call_end):
        result = parse_checked(fmt, text)
        assert result.failures and not result.calls


@pytest.mark.parametrize("name", list(FORMATS))
def test_megabytes_of_repetition_parse_in_bounded_time(name):
    fmt = get_format(name)
    good = fmt.render_calls([ToolCall("get-weather", {"city": "Paris", "days": [1, 2]})])
    assert len(parse_checked(fmt, good * 10_000).calls) == 10_000
    body = good[len(fmt.call_start):-len(fmt.call_end)]
    for text in (fmt.call_start + body * 20_000 + fmt.call_end,          # one block, the body repeated
                 fmt.call_start + body * 20_000,                          # ... and never closed
                 fmt.call_start * 200_000, fmt.call_end * 200_000,        # markers alone
                 fmt.call_start + '"' * 1_000_000 + fmt.call_end,          # quotes alone
                 fmt.call_start + "\\" * 1_000_001 + fmt.call_end):
        assert parse_checked(fmt, text).failures


NON_FINITE_JSON = ["NaN", "Infinity", "-Infinity", "1e999999", "-1e400", "1" + "0" * 5000]
NON_FINITE_PYTHON = ["1e999999", "-1e999", 'float("nan")', 'float("inf")', "1e999j", "1" + "0" * 5000]


@pytest.mark.parametrize("name", JSON_FORMATS)
@pytest.mark.parametrize("number", NON_FINITE_JSON)
def test_json_numbers_out_of_range_are_failures(name, number):
    fmt = get_format(name)
    for body in ('{"name": "f", "arguments": {"x": %s}}', '{"name": "f", "arguments": {"x": [1, {"y": %s}]}}',
                 '{"name": "f", "arguments": "{\\"x\\": %s}"}'):
        result = parse_checked(fmt, fmt.call_start + body % number + fmt.call_end)
        assert result.failures and not result.calls


@pytest.mark.parametrize("number", NON_FINITE_PYTHON)
def test_python_numbers_out_of_range_are_failures(number):
    fmt = get_format("lfm2")
    for body in ("[f(x=%s)]", '[f(x=[1, {"y": %s}])]'):
        result = parse_checked(fmt, fmt.call_start + body % number + fmt.call_end)
        assert result.failures and not result.calls


@pytest.mark.parametrize("name, body", [
    *((n, b) for n in JSON_FORMATS for b in (
        '{"name": "f", "name": "g", "arguments": {}}',
        '{"name": "f", "arguments": {"a": 1, "a": 2}}',
        '{"name": "f", "arguments": {"a": {"b": 1, "b": 1}}}',
        '{"name": "f", "arguments": "{\\"a\\": 1, \\"a\\": 2}"}')),
    ("lfm2", "[f(a=1, a=2)]"),
    ("lfm2", '[f(a={"b": 1, "b": 2})]'),
    ("lfm2", '[f(a=[{"b": 1, "b": 1}])]'),
])
def test_duplicate_keys_are_failures(name, body):
    fmt = get_format(name)
    result = parse_checked(fmt, fmt.call_start + body + fmt.call_end)
    assert result.failures and not result.calls


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("surrogate", ["\ud800", "\udfff", "\\ud800", "\\udc00x"])
def test_lone_surrogates_are_failures(name, surrogate):
    fmt = get_format(name)
    body = one_call_body(fmt, ToolCall("f", {"city": "SURROGATE", "nested": {"k": ["SURROGATE"]}}))
    result = parse_checked(fmt, fmt.call_start + body.replace("SURROGATE", surrogate) + fmt.call_end)
    assert result.failures and not result.calls


@pytest.mark.parametrize("name", JSON_FORMATS)
def test_an_escaped_surrogate_pair_is_one_character(name):
    """In JSON a valid pair ("\\ud83d\\ude00", as json.dumps writes 😀) is text, not a failure. (In a Python
    literal, LFM2's syntax, the same escapes are two lone surrogates: a failure, as tested above.)"""
    fmt = get_format(name)
    body = one_call_body(fmt, ToolCall("f", {"face": "EMOJI"})).replace("EMOJI", "\\ud83d\\ude00")
    assert parse_checked(fmt, fmt.call_start + body + fmt.call_end).calls == [ToolCall("f", {"face": "😀"})]


@pytest.mark.parametrize("name", list(FORMATS))
@settings(max_examples=40, deadline=None)
@given(calls=call_lists)
def test_a_call_cut_anywhere_is_a_failure(name, calls):
    fmt = get_format(name)
    rendered = fmt.render_calls(calls[:1])
    for cut in range(len(rendered)):
        result = parse_checked(fmt, rendered[:cut])
        if cut >= len(fmt.call_start):   # the call has begun: its loss is recorded
            assert result.failures and not result.calls, rendered[:cut]
        # the end marker right after the cut (a model that stops early): never a call it did not write
        result = parse_checked(fmt, rendered[:cut] + fmt.call_end)
        assert result.failures or result.calls in ([], calls[:1])


@pytest.mark.parametrize("name", list(FORMATS))
@settings(max_examples=25, deadline=None)
@given(calls=call_lists, cut=st.integers(0, 10**6))
def test_several_calls_cut_anywhere_keep_only_whole_calls(name, calls, cut):
    fmt = get_format(name)
    rendered = fmt.render_calls(calls)
    result = parse_checked(fmt, rendered[:cut % (len(rendered) + 1)])
    assert result.calls == calls[:len(result.calls)]


# the pieces hostile text is made of: markers, JSON and Python syntax, numbers out of range, escapes
FRAGMENTS = st.sampled_from([
    "<tool_call>", "</tool_call>", "<|tool_call_start|>", "<|tool_call_end|>", "<|im_end|>", "Crop [", "Crop [1,2,3,4]",
    "[", "]", "{", "}", "(", ")", ",", ":", "=", '"', "'", '"""', "\\", "\\u", "\\ud800", "\ud800", "\udc00", "\x00",
    '{"name": ', '"f"', '"arguments": ', "f(", "get-weather(", "math.factorial(", "a=", "x=1", "NaN", "Infinity",
    "-1e999999", "1e999999", "None", "True", "null", "true", "0" * 50, "é", "😀", " ", "\n"])
hostile = st.lists(st.one_of(FRAGMENTS, st.text(max_size=8)), max_size=60).map("".join)


@pytest.mark.parametrize("name", list(FORMATS))
@settings(max_examples=300, deadline=None)
@given(text=hostile)
def test_hostile_text_never_raises(name, text):
    fmt = get_format(name)
    for t in (text, fmt.call_start + text, fmt.call_start + text + fmt.call_end, text * 50):
        parse_checked(fmt, t)
