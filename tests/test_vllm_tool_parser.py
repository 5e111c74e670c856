"""serve/vllm_tool_parser.py, loaded by vLLM's own plugin loader and run with vLLM's own classes.

vLLM's Python side comes from `make vllm-parser-env` (part of `make test`): the modules of the real
vLLM wheel, without its CUDA kernels, on PYTHONPATH in a subprocess. Where that folder is missing the
test is skipped and says how to make it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolcore.formats.generic import GenericFormat

ROOT = Path(__file__).resolve().parents[1]
SIDE = Path(os.environ.get("VLLM_PARSER_ENV", ROOT / ".venv" / "vllm-parser"))

OUTPUTS = [
    # one call, no prose
    '<|tool_call_start|>{"name": "get_weather", "arguments": {"location": "Paris"}}<|tool_call_end|>',
    # prose, then two calls (parallel), non-ASCII values
    'Sure, checking both.<|tool_call_start|>{"name": "get_weather", "arguments": {"location": "Zürich"}}'
    '<|tool_call_end|><|tool_call_start|>{"name": "get_weather", "arguments": {"location": "São Paulo"}}'
    '<|tool_call_end|>',
    # prose only, with a "<" that starts like a marker
    "The answer is 3 < 4, no tool needed.",
    # a malformed call stays text
    '<|tool_call_start|>{"name": "get_weather", "arguments": {"location": }<|tool_call_end|>',
    # a call cut off by the token limit
    'One moment.<|tool_call_start|>{"name": "get_weather", "argu',
]


@pytest.fixture(scope="module")
def checked():
    if not (SIDE / "ready").is_file():
        pytest.skip(f"vLLM's Python side is not at {SIDE}: run `make vllm-parser-env`")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SIDE / "site"), str(SIDE / "deps"), str(ROOT)]),
               VLLM_LOGGING_LEVEL="ERROR")
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "vllm_parser_check.py"),
                          str(ROOT / "serve" / "vllm_tool_parser.py")], input=json.dumps(OUTPUTS),
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_the_plugin_registers_and_keeps_the_call_markers(checked):
    assert checked["registered"]
    assert checked["keeps_special_tokens"]     # else vLLM strips <|tool_call_start|> before parsing


@pytest.mark.parametrize("k", range(len(OUTPUTS)))
def test_whole_and_streamed_outputs_give_the_formats_calls(checked, k):
    case, parsed = checked["cases"][k], GenericFormat().parse(OUTPUTS[k])
    expected = [{"name": c.name, "arguments": c.arguments} for c in parsed.calls]
    for got in (case["whole"]["calls"], case["stream"]["calls"]):
        assert [{"name": c["name"], "arguments": json.loads(c["arguments"])} for c in got] == expected
        assert all(c["id"] for c in got) and len({c["id"] for c in got}) == len(got)
    assert case["whole"]["tools_called"] == bool(expected)
    if expected:
        assert case["whole"]["content"] == (parsed.content or None)
        assert case["stream"]["content"].strip() == parsed.content
        assert case["stream"]["unstreamed"] == ""
    elif k == 4:      # cut off inside a call: the prose before it streams, the broken call never does
        assert case["stream"]["content"] == "One moment."
        assert case["whole"]["content"] == OUTPUTS[k]
    else:             # prose or a malformed call: all of it is content, whole or streamed
        assert case["whole"]["content"] == OUTPUTS[k]
        assert case["stream"]["content"] == OUTPUTS[k]
