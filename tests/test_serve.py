"""`python -m serve` against the official `openai` client: real uvicorn servers on 127.0.0.1 (free ports),
started as subprocesses the way a user starts them. A tiny from-config Llama with the generic format
(random weights: with tool_choice=required the constrained engine still writes a schema-valid call),
the symbolic model (parallel calls), and one test with the real SmolLM2.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

openai = pytest.importorskip("openai")

from toolcore.conversation import Conversation  # noqa: E402
from toolcore.formats import get_format  # noqa: E402
from toolcore.schema import Tool  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                    "unit": {"enum": ["c", "f"]}}, "required": ["city"]}}}
TIMER = {"type": "function", "function": {
    "name": "set_timer", "description": "Set a timer",
    "parameters": {"type": "object", "properties": {"minutes": {"type": "integer"}}, "required": ["minutes"]}}}
# enum-only arguments: a random model's call is bounded (a free string could run past max_tokens)
UNIT = {"type": "function", "function": {
    "name": "set_unit", "description": "Choose the temperature unit",
    "parameters": {"type": "object", "properties": {"unit": {"enum": ["c", "f"]}}, "required": ["unit"]}}}
MODE = {"type": "function", "function": {
    "name": "set_mode", "description": "Choose a mode",
    "parameters": {"type": "object", "properties": {"mode": {"enum": ["eco", "max"]}, "on": {"type": "boolean"}},
                   "required": ["mode", "on"]}}}
MUSIC = {"type": "function", "function": {
    "name": "play_music", "description": "Play a song",
    "parameters": {"type": "object", "properties": {"song": {"type": "string"}}, "required": ["song"]}}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(*overrides: str, timeout: float = 240.0):
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.Popen([sys.executable, "-m", "serve", f"port={port}", "log_level=warning", *overrides],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stdout.read()}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("server did not start")


def stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def health(url: str) -> dict:
    with urllib.request.urlopen(url + "/health") as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    """A tiny Llama with a real byte-level BPE and the generic format's tool tokens, saved as a folder."""
    from tests.tiny_models import tiny_llama, tiny_tokenizer

    fmt = get_format("generic")
    texts = ["What is the weather in Paris today?", "Set a timer for five minutes.", '{"name": "get_weather"}',
             "The answer is 42.", "city unit minutes song"] * 20
    tok = tiny_tokenizer(texts, extra_special=fmt.tool_tokens, vocab_size=400)
    folder = tmp_path_factory.mktemp("tiny")
    tok.save_pretrained(folder)
    tiny_llama(len(tok)).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny(tiny_dir):
    proc, url = start_server("model=hf", f"model.path={tiny_dir}", "model.format=generic", "model.device=cpu",
                             "model.name=tiny", "context_length=512", "batch_window_ms=50", "default_max_tokens=12")
    yield openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0), url
    stop(proc)


@pytest.fixture(scope="module")
def symbolic():
    proc, url = start_server("model=symbolic")
    yield openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
    stop(proc)


def ask(client, **kw):
    return client.chat.completions.create(**{"model": "tiny", "max_tokens": 12, **kw})


USER = [{"role": "user", "content": "What is the weather in Paris?"}]


def test_models_and_plain_chat(tiny):
    client, _ = tiny
    assert [m.id for m in client.models.list()] == ["tiny"]
    r = ask(client, messages=USER)
    msg = r.choices[0].message
    assert msg.role == "assistant" and isinstance(msg.content, str) and not msg.tool_calls
    assert r.choices[0].finish_reason in ("stop", "length")
    assert r.usage.prompt_tokens > 0 and 0 < r.usage.completion_tokens <= 12
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_required_and_named_tool_choice_give_schema_valid_calls(tiny):
    client, _ = tiny
    for choice, name in (("required", None), ({"type": "function", "function": {"name": "set_mode"}}, "set_mode")):
        r = ask(client, messages=USER, tools=[UNIT, MODE], tool_choice=choice, max_tokens=60)
        assert r.choices[0].finish_reason == "tool_calls"
        calls = r.choices[0].message.tool_calls
        assert calls and calls[0].id.startswith("call_") and calls[0].type == "function"
        tool = Tool.from_schema({"set_unit": UNIT, "set_mode": MODE}[calls[0].function.name])
        assert tool.validation_errors(json.loads(calls[0].function.arguments)) == []   # constrained decoding
        if name:
            assert {c.function.name for c in calls} == {name}


def test_tool_choice_none_never_calls(tiny):
    client, _ = tiny
    r = ask(client, messages=USER, tools=[WEATHER], tool_choice="none")
    assert not r.choices[0].message.tool_calls and r.choices[0].finish_reason != "tool_calls"


def test_tool_result_round_trip_continues_the_conversation(tiny, tiny_dir):
    from transformers import AutoTokenizer

    from toolcore.tokenize import encode_segments

    client, _ = tiny
    messages = USER + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 21}'}]
    r = ask(client, messages=messages, tools=[WEATHER])
    assert r.choices[0].message.role == "assistant"
    # the prompt the server decoded from is the format's rendering of the whole conversation, result included
    conv = Conversation.from_dict({"messages": [{**m, "name": "get_weather"} if m["role"] == "tool" else m
                                                for m in messages], "tools": [WEATHER]})
    fmt, tok = get_format("generic"), AutoTokenizer.from_pretrained(tiny_dir)
    assert r.usage.prompt_tokens == len(encode_segments(tok, fmt.render(conv, add_generation_prompt=True))[0])


def test_streaming_text_equals_the_plain_answer_and_streams_calls(tiny):
    client, _ = tiny
    plain = ask(client, messages=USER).choices[0].message.content
    chunks = list(ask(client, messages=USER, stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == plain
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
    chunks = list(ask(client, messages=USER, tools=[UNIT], tool_choice="required", stream=True, max_tokens=60))
    deltas = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert deltas and deltas[0].function.name == "set_unit" and json.loads(deltas[0].function.arguments)["unit"] in "cf"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"


def test_concurrent_requests_share_a_batch(tiny):
    client, url = tiny
    results, errors = [], []

    def one(i):
        try:
            results.append(ask(client, messages=[{"role": "user", "content": f"Request number {i}"}], max_tokens=6))
        except Exception as e:     # noqa: BLE001 - counted below
            errors.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 6
    assert health(url)["largest_batch"] > 1


def test_server_side_tool_runs_and_the_answer_lists_it(tiny_dir):
    proc, url = start_server("model=hf", f"model.path={tiny_dir}", "model.format=generic", "model.device=cpu",
                             "model.name=tiny", "server_tools=[get_time]")
    try:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        r = ask(client, messages=[{"role": "user", "content": "What time is it?"}],
                tool_choice={"type": "function", "function": {"name": "get_time"}}, max_tokens=40)
        msg = r.choices[0].message
        executed = msg.model_extra["executed_tool_calls"]
        assert executed[0]["function"]["name"] == "get_time" and "time" in executed[0]["result"]   # the real clock
        assert not msg.tool_calls          # run here, not handed to the client
    finally:
        stop(proc)


def test_parallel_calls_and_parallel_tool_calls_false(symbolic):
    messages = [{"role": "user", "content": "Set a timer for 5 minutes and play some jazz"}]
    r = symbolic.chat.completions.create(model="symbolic", messages=messages, tools=[TIMER, MUSIC])
    calls = r.choices[0].message.tool_calls
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("set_timer", {"minutes": 5}), ("play_music", {"song": "jazz"})]
    assert len({c.id for c in calls}) == 2 and r.choices[0].finish_reason == "tool_calls"
    r = symbolic.chat.completions.create(model="symbolic", messages=messages, tools=[TIMER, MUSIC],
                                         parallel_tool_calls=False)
    assert len(r.choices[0].message.tool_calls) == 1


@pytest.mark.parametrize("kw, status, param", [
    ({"model": "gpt-5"}, 404, "model"),
    ({"messages": [{"role": "robot", "content": "hi"}]}, 400, "messages[0].role"),
    ({"messages": []}, 400, "messages"),
    ({"messages": USER + [{"role": "tool", "content": "x"}]}, 400, "messages[1].tool_call_id"),
    ({"messages": USER + [{"role": "assistant", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{oops"}}]}, {"role": "user", "content": "?"}]},
     400, "messages[1].tool_calls[0].function.arguments"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "strng"}}}}}]}, 400, "tools[0].function.f.parameters.properties.a.type"),
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "nope"}}}, 400, "tool_choice.function.name"),
    ({"messages": [{"role": "user", "content": "weather " * 600}]}, 400, "messages"),
])
def test_bad_requests_get_openai_errors_naming_the_field(tiny, kw, status, param):
    client, _ = tiny
    with pytest.raises(openai.APIStatusError) as info:
        ask(client, **{"messages": USER, **kw})
    assert info.value.status_code == status
    err = info.value.body
    assert err["param"] == param and err["type"] == "invalid_request_error" and err["message"]


def test_a_malformed_call_is_a_normal_message():
    """What the server makes of a turn whose call does not parse: the text, no tool_calls, no error."""
    from serve.protocol import TurnText

    turn = TurnText(get_format("generic"), ["<|endoftext|>"])
    streamed = "".join(turn.add(p) for p in ["Sure", ". ", "<|tool_call_start|>", '{"name": "get_weather", ',
                                             '"arguments": {"city": ', "<|tool_call_end|>", "<|im_end|>"])
    content, calls, failures = turn.final()
    assert streamed == "Sure. " and calls == [] and failures
    assert content == 'Sure. <|tool_call_start|>{"name": "get_weather", "arguments": {"city": <|tool_call_end|>'


def test_a_withdrawn_call_is_taken_back_and_the_words_after_it_stream():
    """The engine's `rewind` event (a call withdrawn by the grounding check): the turn's text loses the
    call, streaming goes on with the answer the model writes instead, and no call is returned."""
    from serve.protocol import TurnText

    turn = TurnText(get_format("generic"), ["<|endoftext|>"])
    call = ["<|tool_call_start|>", '{"name": "get_weather", "arguments": {"city": "Oslo"}}', "<|tool_call_end|>"]
    streamed = "".join(turn.add(p) for p in ["Sure", ". ", *call])
    turn.rewind("".join(call))
    streamed += "".join(turn.add(p) for p in ["I can't", " check that.", "<|im_end|>"])
    content, calls, _ = turn.final()
    assert streamed == content == "Sure. I can't check that." and calls == []


def test_smollm2_chat_and_a_forced_call():
    """The real offline default model behind the server."""
    proc, url = start_server("model=smollm2", "model.device=cpu", "default_max_tokens=16", timeout=400)
    try:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        r = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Say hello."}])
        assert r.choices[0].message.content and r.usage.completion_tokens <= 16
        r = client.chat.completions.create(model="smollm2", messages=USER, tools=[WEATHER])
        for call in r.choices[0].message.tool_calls or []:    # the base model rarely calls; any call is valid
            assert Tool.from_schema(WEATHER).validation_errors(json.loads(call.function.arguments)) == []
        # the base model has no single call-marker token: a forced call cannot be enforced, and it says so
        with pytest.raises(openai.BadRequestError) as info:
            client.chat.completions.create(model="smollm2", messages=USER, tools=[WEATHER], tool_choice="required")
        assert info.value.body["param"] == "tool_choice"
    finally:
        stop(proc)
