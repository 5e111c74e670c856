"""Schema-constrained decoding: every call written under the grammar is valid for the offered tools.

Property tests over random schemas and calls (a schema is inferred from a random call, then widened
with optional keys): the rendered call is accepted token by token in every format and ends at the
format's end marker; a wrong name, an extra key or a wrongly typed value is refused; a random walk
over the allowed tokens always yields a call that parses and validates. Then the engine with a
tiny llama whose head is biased towards the call marker: unconstrained it writes garbage calls,
constrained every call is valid, and a case without tools never starts one.
"""

from __future__ import annotations

import json
import random
import re

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.constrained import CallConstraint
from runtime.engine import GenerationConfig, ToolLoopEngine
from toolcore.conversation import Conversation, Message
from toolcore.formats import get_format
from toolcore.schema import Tool, ToolCall

from .tiny_models import tiny_llama, tiny_tokenizer

FORMATS = ["generic", "qwen2_5", "lfm2"]
TOOL_TOKENS = ["<|tool_call_start|>", "<|tool_call_end|>", "<tool_call>", "</tool_call>"]
CORPUS = ['{"name": "set_mode", "arguments": {"mode": "eco", "on": true}}', "get_weather(location=\"Paris\")",
          "hello there, how are you? 12345 [1, 2.5, -3e-05] null None True False {} \\n \\u00e9 é ü 東京"] * 20

identifier = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True).filter(lambda s: s not in ("True", "None"))
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
scalar = st.one_of(text, st.integers(-10**9, 10**9), st.floats(-1e6, 1e6, allow_nan=False).filter(lambda f: f != int(f)),
                   st.booleans(), st.none())
value = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, min_size=1, max_size=3),
                                                     st.dictionaries(identifier, inner, min_size=1, max_size=3)),
                     max_leaves=5)


def schema_of(v, draw_enum: bool) -> dict:
    """A schema that `v` satisfies: its JSON type (arrays and objects recursively); strings sometimes
    as an enum member."""
    if isinstance(v, bool):
        return {"type": "boolean"}
    if v is None:
        return {"type": "null"}
    if isinstance(v, int):
        return {"type": "integer"}
    if isinstance(v, float):
        return {"type": "number"}
    if isinstance(v, str):
        # (xgrammar writes enum members with control characters such as DEL escaped, json.dumps does
        # not: enums of printable text only)
        return {"type": "string", "enum": ["zz", v]} if draw_enum and v.isprintable() else {"type": "string"}
    if isinstance(v, list):
        items = [schema_of(x, False) for x in v]
        return {"type": "array", "items": items[0] if all(i == items[0] for i in items) else {"anyOf": items}}
    return {"type": "object", "properties": {k: schema_of(x, draw_enum) for k, x in v.items()}, "required": list(v)}


@st.composite
def tool_and_call(draw):
    args = draw(st.dictionaries(identifier, value, max_size=4))
    enum = draw(st.booleans())
    props = {k: schema_of(v, enum) for k, v in args.items()}
    required = [k for k in args if draw(st.booleans())]
    for extra in draw(st.lists(identifier.filter(lambda k: k not in args), max_size=2, unique=True)):
        props[extra] = {"type": "string"}           # optional keys the call leaves out
    name = draw(identifier)
    tool = Tool(name, "a tool", {"type": "object", "properties": props, "required": required})
    other = Tool(name + "_other", "another tool", {"type": "object", "properties": {"x": {"type": "integer"}},
                                                   "required": ["x"]})
    return [tool, other], ToolCall(name, args)


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer(CORPUS, extra_special=TOOL_TOKENS, vocab_size=400)


@pytest.fixture(scope="module")
def constraints(tok):
    return {name: CallConstraint(tok, get_format(name), len(tok)) for name in FORMATS}


def body_ids(tok, fmt, call: ToolCall) -> list[int]:
    """The tokens a model writes after the call-start marker, up to and with the end marker."""
    rendered = fmt.render_calls([call])
    body = rendered[len(fmt.call_start):len(rendered) - len(fmt.call_end)]
    return tok.encode(body, add_special_tokens=False) + [tok.convert_tokens_to_ids(fmt.call_end)]


def accepts(constraint, tools, ids) -> bool:
    m = constraint.start(tools)
    return all(m.accept_token(i) for i in ids) and m.is_terminated()


@pytest.mark.parametrize("name", FORMATS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=tool_and_call())
def test_valid_calls_are_accepted_and_end_at_the_marker(name, case, tok, constraints):
    tools, call = case
    fmt = get_format(name)
    assert not tools[0].validation_errors(call.arguments)
    assert accepts(constraints[name], tools, body_ids(tok, fmt, call))


@pytest.mark.parametrize("name", FORMATS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=tool_and_call())
def test_invalid_calls_are_refused(name, case, tok, constraints):
    tools, call = case
    fmt, c = get_format(name), constraints[name]
    assert not accepts(c, tools, body_ids(tok, fmt, ToolCall(call.name + "_unknown", call.arguments)))
    assert not accepts(c, tools, body_ids(tok, fmt, ToolCall(call.name, call.arguments | {"zz_not_a_key": 1})))
    wrong = {k: 7 for k, spec in tools[0].properties.items() if spec.get("type") == "string"}
    if wrong:
        assert not accepts(c, tools, body_ids(tok, fmt, ToolCall(call.name, call.arguments | wrong)))
    missing = [k for k in tools[0].required]
    if missing:
        args = {k: v for k, v in call.arguments.items() if k != missing[0]}
        assert not accepts(c, tools, body_ids(tok, fmt, ToolCall(call.name, args)))


@pytest.mark.parametrize("name", FORMATS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=tool_and_call(), seed=st.integers(0, 10**6))
def test_a_random_walk_under_the_grammar_writes_a_valid_call(name, case, seed, tok, constraints):
    tools, _ = case
    fmt, c = get_format(name), constraints[name]
    rng = random.Random(seed)
    m = c.start(tools)
    ids = []
    for _ in range(400):
        logits = torch.zeros(1, len(tok))
        c.mask(logits, [m], [False])
        allowed = torch.nonzero(logits[0] == 0).flatten().tolist()
        tid = rng.choice(allowed)
        assert m.accept_token(tid)
        ids.append(tid)
        if m.is_terminated():
            break
    else:
        return    # a long string or number: nothing invalid was written, but it did not end in time
    parsed = fmt.parse(fmt.call_start + tok.decode(ids, skip_special_tokens=False))
    assert parsed.ok and parsed.calls, parsed.failures
    offered = {t.name: t for t in tools}
    for got in parsed.calls:
        assert got.name in offered
        assert not offered[got.name].validation_errors(got.arguments)


MODE = Tool("set_mode", "Switch the mode", {"type": "object", "properties": {
    "mode": {"type": "string", "enum": ["eco", "boost", "auto"]}, "on": {"type": "boolean"}}, "required": ["mode"]})
PING = Tool("ping", "Ping the robot", {"type": "object", "properties": {}})


@pytest.fixture(scope="module")
def eager_caller(tok):
    """A tiny llama whose head always prefers the call-start marker (a bias on that row): left free it
    starts calls and fills them with noise."""
    fmt = get_format("generic")
    model = tiny_llama(len(tok), seed=3)
    emb = model.get_input_embeddings().weight
    head = torch.nn.Linear(emb.shape[1], emb.shape[0], bias=True)
    with torch.no_grad():
        head.weight.copy_(emb)
        head.bias.zero_()
        head.bias[tok.convert_tokens_to_ids(fmt.call_start)] = 20.0
    model.lm_head = head
    model.config.tie_word_embeddings = False
    return model


def run(model, tok, conv, constrained, **kw):
    cfg = GenerationConfig(max_new_tokens=80, max_tool_calls=3, constrained=constrained, **kw)
    return ToolLoopEngine(model, tok, get_format("generic"), cfg).run([conv])[0]


def test_engine_writes_only_valid_calls_when_constrained(eager_caller, tok):
    conv = Conversation([Message.text("user", "hello")], [MODE, PING])
    free = run(eager_caller, tok, conv, constrained=False)
    assert free.parse_failures or any(c.name not in ("set_mode", "ping") for c in free.calls)   # the control
    out = run(eager_caller, tok, conv, constrained=True)
    # it calls back to back until the token budget cuts the last call: that truncation is the only failure
    assert out.calls and out.constrained_tokens > 0
    assert out.stop_reason == "max_new_tokens" and set(out.parse_failures) <= {
        "truncated: <|tool_call_start|> without <|tool_call_end|>"}
    for call in out.calls:
        tool = {"set_mode": MODE, "ping": PING}[call.name]
        assert not tool.validation_errors(call.arguments), call


def test_no_call_starts_when_no_tool_is_offered(eager_caller, tok):
    conv = Conversation([Message.text("user", "hello")], [])
    assert "<|tool_call_start|>" in run(eager_caller, tok, conv, constrained=False).text
    out = run(eager_caller, tok, conv, constrained=True)
    assert "<|tool_call_start|>" not in out.text and not out.calls


def test_a_call_repeated_in_its_turn_is_written_again_with_another_tool(eager_caller, tok):
    """The eager caller writes the same call back to back (the control: `divert_repeats` off, the
    default). With the switch on, the repeat is taken back as soon as it closes and written with its
    tool left out of the grammar, so the turn goes on to the other tool; the rewrite is recorded. With
    one tool offered there is nothing to turn to, and the repeats stay as they were."""
    pong = Tool("pong", "Pong the robot", {"type": "object", "properties": {}})
    conv = Conversation([Message.text("user", "hello")], [PING, pong])
    written = lambda out: [c["name"] for c in map(json.loads, re.findall(r'(\{"name".*?\}\})', out.text))]  # noqa: E731
    free = run(eager_caller, tok, conv, constrained=True)
    # the default returns what the model wrote: the repeats too
    assert written(free)[:2] == ["pong", "pong"] and [c.name for c in free.calls] == written(free)
    assert not free.assists
    on = run(eager_caller, tok, conv, constrained=True, divert_repeats=True)
    assert written(on)[:2] == ["pong", "ping"] and [c.name for c in on.calls][:2] == ["pong", "ping"]
    assert [u["call"] for u in on.assists if u["assist"] == "divert_repeats"][:1] == [{"name": "pong", "arguments": {}}]
    # kept only where the model itself gave every token of the rewrite enough probability: else the turn
    # ends after the calls before it
    shy = run(eager_caller, tok, conv, constrained=True, divert_repeats=True, divert_min_p=0.5)
    first_turn = shy.text.split("<|im_end|>")[0]
    assert first_turn.count("<|tool_call_start|>") == 1 and shy.calls[0].name == "pong"
    assert [u.get("taken_back") for u in shy.assists][:1] == [True]
    alone = run(eager_caller, tok, Conversation([Message.text("user", "hello")], [pong]), constrained=True,
                divert_repeats=True)
    assert written(alone)[:2] == ["pong", "pong"] and not alone.assists


def test_an_end_marker_of_several_tokens_ends_the_grammar_as_text():
    """A base model's tokenizer without tool tokens: the end marker is text the grammar spells out."""
    plain = tiny_tokenizer(CORPUS, vocab_size=400)
    fmt = get_format("generic")
    c = CallConstraint(plain, fmt, len(plain))
    assert c.end_id is None and c.end_text == fmt.call_end
    body = fmt.render_calls([ToolCall("set_mode", {"mode": "boost"})])[len(fmt.call_start):]
    m = c.start([MODE, PING])
    assert all(m.accept_token(i) for i in plain.encode(body, add_special_tokens=False))
    assert m.is_completed()
    m = c.start([MODE, PING])
    assert not all(m.accept_token(i) for i in plain.encode(body.replace("boost", "turbo"), add_special_tokens=False))


def test_call_grammars_are_compiled_once_per_tool_set(tok):
    c = CallConstraint(tok, get_format("lfm2"), len(tok))
    assert c.compiled([MODE, PING]) is c.compiled([MODE, PING])
    assert c.compiled([]) is None
    assert '"\\"mode\\": "' in get_format("generic").call_grammar([MODE])


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("lo,hi", [(4, 4), (0, 2), (2, None), (1, 3)])
def test_array_lengths_follow_min_and_max_items(name, lo, hi, tok, constraints):
    """A box is exactly 4 integers: the grammar refuses [32, 2] (found by the demo adapter on `crop`)."""
    spec = {"type": "array", "items": {"type": "integer"}, "minItems": lo} | ({"maxItems": hi} if hi is not None else {})
    tool = Tool("box", "a box", {"type": "object", "properties": {"b": spec}, "required": ["b"]})
    fmt = get_format(name)
    for n in range(0, 7):
        ok = lo <= n and (hi is None or n <= hi)
        call = ToolCall("box", {"b": list(range(1, n + 1))})
        assert accepts(constraints[name], [tool], body_ids(tok, fmt, call)) == ok, (n, lo, hi)


@pytest.mark.parametrize("name", FORMATS)
def test_numbers_have_a_bounded_number_of_digits(name, tok, constraints):
    """A model that reads "$1M" as 1 and then zeros is stopped at 19 integer digits (it ran on to
    max_new_tokens and lost the call); 24 digits after the point and three in a negative exponent."""
    tool = Tool("money", "an amount", {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}},
                                       "required": ["n"]})
    fmt = get_format(name)
    for n, x, ok in [(10**18, None, True), (-(10**18), None, True), (10**19, None, False),
                     (1, 0.00012345678901234567, True), (1, 1e-300, True), (1, 1.5e+300, True)]:
        call = ToolCall("money", {"n": n} | ({"x": x} if x is not None else {}))
        assert accepts(constraints[name], [tool], body_ids(tok, fmt, call)) == ok, (n, x)
    rendered = fmt.render_calls([ToolCall("money", {"n": 1, "x": 0.5})])
    body = rendered[len(fmt.call_start):len(rendered) - len(fmt.call_end)]
    for digits, ok in [(24, True), (25, False)]:
        for number in ("0." + "5" * digits, "1." + "5" * digits + "e+300"):     # both branches of `num`
            ids = tok.encode(body.replace("0.5", number), add_special_tokens=False)
            assert accepts(constraints[name], [tool], ids + [tok.convert_tokens_to_ids(fmt.call_end)]) == ok, number
    # and no prefix runs on: after "1." and 24 digits no further digit can be written
    m = constraints[name].start([tool])
    prefix = body[:body.index("0.5")] + "1." + "5" * 24
    assert all(m.accept_token(i) for i in tok.encode(prefix, add_special_tokens=False))
    assert not m.accept_token(tok.encode("5", add_special_tokens=False)[0])


@pytest.mark.parametrize("name", FORMATS)
def test_an_object_that_names_its_keys_only_as_required_needs_them(name, tok, constraints):
    """BFCL's waste_calculation writes `population` as {"type": "dict", "required": [...]} with no properties:
    the demo adapter wrote `{}` there, an invalid call that the grammar had allowed."""
    spec = {"type": "object", "required": ["adults", "children"]}
    tool = Tool("waste", "waste of a household", {"type": "object", "properties": {"population": spec},
                                                  "required": ["population"]})
    fmt = get_format(name)
    for population, ok in [({}, False), ({"adults": 2}, False), ({"adults": 2, "children": 1}, True)]:
        call = ToolCall("waste", {"population": population})
        assert accepts(constraints[name], [tool], body_ids(tok, fmt, call)) == ok, population
