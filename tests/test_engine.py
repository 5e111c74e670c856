"""The generation engine with a live tool loop, on a tiny llama trained here for a few seconds.

The task can only be solved by reading the tool's result: the user asks about the sky in a city,
the model must call `check_sky`, the tool answers with a condition drawn at random, and the final
answer must name that condition. A model that ignored the result would be right a third of the time.
"""

from __future__ import annotations

import random
import time

import pytest
import torch

from runtime.engine import GenerationConfig, ToolLoopEngine
from toolcore.conversation import Conversation, Message
from toolcore.executors import EXECUTORS, ToolResult
from toolcore.formats import get_format
from toolcore.schema import Tool, ToolCall

from .tiny_models import tiny_llama, tiny_tokenizer, train_chats

CITIES = ["Oslo", "Lima", "Rome", "Kyiv"]
SKIES = ["sunny", "rainy", "cloudy"]
FMT = get_format("generic")
SKY = Tool("check_sky", "Look at the sky in a city",
           {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, executor="test_sky")
SLOW = Tool("slow_tool", "Takes forever", {"type": "object", "properties": {}}, executor="test_slow")
BROKEN = Tool("broken_tool", "Raises", {"type": "object", "properties": {}}, executor="test_broken")
SALT = ["0"]
HOME, HOME_CITY = "how is the sky at home?", "Turin"
STEPS_GUESSER = 250


def sky_executor(args, ctx):
    """The sky depends on the city and a salt the test changes: not predictable from the prompt."""
    return ToolResult(True, {"sky": random.Random(f"{args.get('city')}/{SALT[0]}").choice(SKIES)})


def slow_executor(args, ctx):
    time.sleep(3)
    return ToolResult(True, {"ok": True})


def broken_executor(args, ctx):
    raise RuntimeError("kaboom")


EXECUTORS.update({"test_sky": sky_executor, "test_slow": slow_executor, "test_broken": broken_executor})


def episode(city: str, sky: str, tool: Tool = SKY, asked: str = "") -> Conversation:
    call = ToolCall(tool.name, {"city": city})
    return Conversation([Message.text("user", asked or f"how is the sky in {city}?"), Message("assistant", [], [call]),
                         Message.text("tool", f'{{"sky": "{sky}"}}', name=tool.name),
                         Message.text("assistant", f"It is {sky} in {city}.")], [tool])


def train_tiny(convs: list[Conversation], steps: int = 150):
    return train_chats(convs, FMT, steps=steps)


@pytest.fixture(scope="module")
def trained():
    return train_tiny([episode(c, s) for c in CITIES for s in SKIES])


@pytest.fixture(scope="module")
def guesser():
    """Also learned that "at home" is Turin: a value the request never states, as a tuned model guesses one."""
    return train_tiny([episode(c, s) for c in CITIES for s in SKIES] + [episode(HOME_CITY, s, asked=HOME) for s in SKIES],
                      steps=STEPS_GUESSER)


def user_case(city: str, tools=(SKY,)) -> Conversation:
    return Conversation([Message.text("user", f"how is the sky in {city}?")], list(tools))


def test_live_loop_runs_the_tool_and_the_answer_uses_its_result(trained):
    model, tok = trained
    engine = ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=40, batch_size=4))
    outs = []
    for salt in ("a", "b", "c"):
        SALT[0] = salt
        outs += engine.run([user_case(c) for c in CITIES])
    assert len({o.tool_events[0].result["sky"] for o in outs}) > 1
    for city, out in zip(CITIES * 3, outs):
        assert out.calls == [ToolCall("check_sky", {"city": city})], out.text
        assert len(out.tool_events) == 1 and out.tool_events[0].error is None
        sky = out.tool_events[0].result["sky"]
        assert out.stop_reason == "end_of_turn"
        assert out.text.endswith(f"It is {sky} in {city}.<|im_end|>"), out.text   # the answer reads the result
        assert '<|tool_response_start|>{"sky": "' + sky in out.text
        assert out.first_call_ms is not None and out.first_call_ms <= out.latency_ms
    assert engine.timing.continuation_s > 0 and engine.timing.prefill_s > 0


def test_batched_equals_one_by_one_and_reprefill_equals_cache(trained):
    model, tok = trained
    convs = [user_case(c) for c in CITIES]

    def texts(**kw):
        return [o.text for o in ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=40, **kw)).run(convs)]

    batched = texts(batch_size=4)
    assert batched == texts(batch_size=1)
    assert batched == texts(batch_size=4, continuation="reprefill")


def test_streaming_yields_text_calls_and_results_in_order(trained):
    model, tok = trained
    engine = ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=40))
    events = list(engine.stream(user_case("Rome")))
    kinds = [e.kind for e in events]
    assert kinds[0] == "text" and kinds[-1] == "done"
    assert kinds.index("call") < kinds.index("result") < len(kinds) - 1
    streamed = "".join(e.text for e in events if e.kind == "text")
    out = events[-1].output
    assert streamed and streamed in out.text.replace(FMT.continuation([Message.text("tool", "x", name="check_sky")]), "")\
        or out.calls


def test_tool_timeout_and_exception_become_results(trained):
    model, tok = trained
    engine = ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=30, tool_timeout_s=0.2))
    conv = user_case("Oslo")
    slow = engine._execute(ToolCall("slow_tool", {}), Conversation(conv.messages, [SLOW]))
    assert "timed out" in slow.error and slow.ms < 2000
    broken = engine._execute(ToolCall("broken_tool", {}), Conversation(conv.messages, [BROKEN]))
    assert "kaboom" in broken.error
    unknown = engine._execute(ToolCall("nope", {}), conv)
    assert "unknown tool" in unknown.error


def test_stateful_models_reprefill():  # (recognised by has_recurrent_state)
    from transformers import Lfm2Config, Lfm2ForCausalLM

    cfg = Lfm2Config(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, layer_types=["conv", "full_attention"], block_auto_adjust_ff_dim=False)
    tok = tiny_tokenizer(["hello there how are you"] * 10, extra_special=FMT.tool_tokens, vocab_size=300)
    model = Lfm2ForCausalLM(cfg).eval()
    engine = ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=6))
    assert engine.reprefill
    convs = [Conversation([Message.text("user", t)], []) for t in ("hi", "how are you there", "hello")]
    assert [o.text for o in engine.run(convs)] == [o.text for o in ToolLoopEngine(
        model, tok, FMT, GenerationConfig(max_new_tokens=6, batch_size=1)).run(convs)]


def test_device_follows_the_model_and_a_missing_gpu_is_a_clear_error(trained):
    """Inputs are built on the CPU and moved to wherever the model lives (measured on an H100: the
    same code trains, validates and evaluates there); asking for a GPU that is not there fails early."""
    from toolcore.errors import ToolkitError
    from toolcore.hub import resolve_device

    model, tok = trained
    engine = ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=4))
    assert engine.device == next(model.parameters()).device
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(ToolkitError, match="no CUDA GPU") as err:
            resolve_device("cuda:0")
        assert err.value.field == "model.device"


def mixed_cases() -> list[Conversation]:
    """Rows that finish at different steps: tool-loop cases end at their answer, tool-less ones at the limit."""
    return [user_case(c) for c in CITIES] + [user_case(c, tools=()) for c in CITIES[:3]]


def test_refill_equals_fixed_batches_and_one_by_one(trained):
    """Finished rows are replaced by waiting conversations (their prompts prefilled and merged into the
    running cache): the same greedy tokens as fixed batches and as one conversation at a time."""
    model, tok = trained
    convs = mixed_cases()

    def run(**kw):
        engine = ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=30, prefix_cache_tokens=0, **kw))
        return [o.output_ids for o in engine.run(convs)], engine.timing.steps

    alone, _ = run(batch_size=1, refill=False)
    fixed, fixed_steps = run(batch_size=2, refill=False)
    refilled, refill_steps = run(batch_size=2, prefill_group=1)
    assert len({len(o) for o in alone}) > 1           # rows really finish at different steps
    assert refilled == fixed == alone
    assert refill_steps < fixed_steps                 # the batch stayed full instead of waiting for its longest


def test_prefix_reuse_gives_the_same_tokens(trained):
    """Prompts that share their start (the system prompt with the tool list) reuse its stored keys and
    values: the same tokens as computing every prompt whole, also from a warm store on a second run."""
    from toolcore.tokenize import encode_prompt

    model, tok = trained
    convs = mixed_cases()
    plain = [o.output_ids for o in ToolLoopEngine(model, tok, FMT, GenerationConfig(
        max_new_tokens=30, batch_size=3, prefix_cache_tokens=0)).run(convs)]
    engine = ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=30, batch_size=3))
    assert [o.output_ids for o in engine.run(convs)] == plain
    first = engine.store.hits
    prompts = [encode_prompt(tok, FMT, c) for c in convs[:4]]
    shared = min(next(n for n in range(len(p)) if p[n] != prompts[0][n] or n == len(p) - 1) for p in prompts[1:])
    assert first >= 3 * shared > 0                    # rows after the first reused the shared system prompt
    assert [o.output_ids for o in engine.run(convs)] == plain       # a warm store: whole prompts come from it
    assert engine.store.hits - first >= sum(len(encode_prompt(tok, FMT, c)) - 1 for c in convs)


def test_recurrent_state_is_recognised_from_the_model_not_its_name():
    from transformers import LlamaConfig, LlamaForCausalLM, Lfm2Config, Lfm2ForCausalLM

    from runtime.engine import has_recurrent_state

    lfm2 = Lfm2ForCausalLM(Lfm2Config(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2,
                                      layer_types=["conv", "full_attention"], block_auto_adjust_ff_dim=False))
    assert has_recurrent_state(lfm2)
    lfm2.config.model_type = "some_new_hybrid"        # a name no list knows: still recognised
    assert has_recurrent_state(lfm2)
    llama = tiny_llama(300)
    assert not has_recurrent_state(llama)
    hybrid = LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2)
    hybrid.layer_types = ["linear_attention", "full_attention"]     # Qwen3-Next-style layer list
    assert has_recurrent_state(LlamaForCausalLM(hybrid))
    engine = ToolLoopEngine(llama, tiny_tokenizer(["a b c"] * 5, extra_special=FMT.tool_tokens, vocab_size=300), FMT)
    assert not engine.reprefill and engine.store is not None


def test_autocast_prefill_runs_and_mostly_agrees(trained):
    """bf16 autocast (opt-in) prefills in bf16 and decodes on in fp32 from the cast cache."""
    model, tok = trained
    convs = [user_case(c) for c in CITIES]
    fp32 = ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=30)).run(convs)
    amp = ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=30, autocast=True)).run(convs)
    assert all(o.stop_reason for o in amp)
    assert sum(a.calls == b.calls for a, b in zip(amp, fp32)) >= 3


def test_the_default_returns_the_models_own_call_and_runs_it(guesser):
    """The model learned to guess Turin for "at home": a value the request never states. The default
    decoding (the call grammar and nothing else) returns that call as the model wrote it and runs it, with
    no assist record, batched beside other rows, with the cache and with re-prefill; the grammar only keeps
    the call valid, so unconstrained decoding writes the same call."""
    model, tok = guesser
    home = Conversation([Message.text("user", HOME)], [SKY])
    convs = [user_case("Oslo"), home, user_case("Lima"), home]

    def run(**kw):
        return ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=40, batch_size=4, **kw)).run(convs)

    free = run(constrained=False)
    for outs in (run(), run(continuation="reprefill"), free):
        for k in (1, 3):
            assert outs[k].calls == [ToolCall("check_sky", {"city": HOME_CITY})], outs[k].text
            assert [e.call for e in outs[k].tool_events] == outs[k].calls
        assert [o.calls for o in outs] == [o.calls for o in free] and not any(o.assists for o in outs)
    events = [e.kind for e in ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=40)).stream(home)]
    assert "rewind" not in events and "call" in events          # nothing is taken back while streaming


def test_next_call_p_opens_another_call_right_after_one_closes(trained):
    """The model learned one call per request and ends its turn after it. A floor above what it gives a
    second call changes nothing; a floor below it opens a second call right after the first closes (and
    another after that, until a limit ends the case; the grammar keeps every call valid), and each call it
    opened where the model would have stopped carries a record."""
    model, tok = trained
    convs = [user_case("Oslo"), user_case("Lima")]

    def run(p):
        return ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=60, batch_size=2, next_call_p=p)).run(convs)

    greedy, high, low = run(0.0), run(0.999), run(1e-12)
    assert [o.text for o in high] == [o.text for o in greedy] and all(len(o.calls) == 1 for o in greedy)
    assert not any(o.assists for o in greedy + high)
    for o, g in zip(low, greedy):
        assert o.calls[0] == g.calls[0] and o.text.count(FMT.call_start) >= 2
        assert f"{FMT.call_end}{FMT.call_start}" in o.text       # in the same turn, right after the first
        assert o.assists and all(a["assist"] == "next_call_p" and 0 < a["p"] < 0.5 for a in o.assists)
        assert o.assists[0]["after_calls"] == 1
    forced = [Conversation(c.messages, c.tools, meta={"tool_choice": "required"}) for c in convs]
    engine = ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=60, batch_size=2, next_call_p=1e-12))
    assert all(len(o.calls) == 1 for o in engine.run(forced))     # a forced call ends the turn as before


def test_assists_refuse_bad_settings():
    with pytest.raises(ValueError, match="next_call_p"):
        GenerationConfig(next_call_p=1.5)
    with pytest.raises(ValueError, match="divert_repeats"):
        GenerationConfig(divert_repeats=True, constrained=False)
