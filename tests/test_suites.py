import json

import pytest

from toolcore.errors import ToolkitError
from toolcore.suites import load_suite


def test_builtin_hackathon_suite_loads():
    cases = load_suite("hackathon30")
    assert len(cases) == 30
    assert {c.difficulty for c in cases} == {"easy", "medium", "hard"}
    assert all(c.expected_calls and c.tools for c in cases)


def write(tmp_path, lines):
    f = tmp_path / "suite.jsonl"
    f.write_text("\n".join(lines) + "\n")
    return f


GOOD = json.dumps({"id": "a", "difficulty": "easy", "messages": [{"role": "user", "content": "hi"}],
                   "tools": [{"name": "f", "parameters": {"type": "object", "properties": {}}}], "expected_calls": []})


def test_malformed_line_is_named(tmp_path):
    f = write(tmp_path, [GOOD, '{"id": "b", "messages": ['])
    with pytest.raises(ToolkitError, match=rf"{f}:2: malformed JSON"):
        load_suite(f)


def test_unknown_tool_in_expected_calls_is_named(tmp_path):
    bad = json.loads(GOOD) | {"id": "b", "expected_calls": [{"name": "g", "arguments": {}}]}
    f = write(tmp_path, [GOOD, json.dumps(bad)])
    with pytest.raises(ToolkitError) as e:
        load_suite(f)
    assert f"{f}:2" in str(e.value) and "expected_calls[0].name" in str(e.value) and "'g'" in str(e.value)


def test_tools_by_registered_name_and_unknown_name(tmp_path):
    case = json.loads(GOOD) | {"tools": ["get_weather"],
                               "expected_calls": [{"name": "get_weather", "arguments": {"location": "Oslo"}}]}
    assert load_suite(write(tmp_path, [json.dumps(case)]))[0].tools[0].name == "get_weather"
    case["tools"] = ["get_wether"]
    with pytest.raises(ToolkitError, match=r"tools\[0\].*unknown tool 'get_wether'"):
        load_suite(write(tmp_path, [json.dumps(case)]))


@pytest.mark.parametrize("change, field", [({"difficulty": 3}, "difficulty"), ({"messages": []}, "messages")])
def test_bad_fields(tmp_path, change, field):
    with pytest.raises(ToolkitError, match=f"field '{field}'"):
        load_suite(write(tmp_path, [json.dumps(json.loads(GOOD) | change)]))


def test_missing_file():
    with pytest.raises(ToolkitError, match="does not exist"):
        load_suite("nope.jsonl")
