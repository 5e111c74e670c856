"""The built-in `not_verbatim` suite: requests whose right value is not said word for word (codes and
tickers for names, exonyms and native scripts, numbers and durations in words and other languages,
negated flags, relative dates, values only the system prompt gives, typos the model should not copy, a
draft that must not be sent). A tiny llama trained here writes each case's correct calls; the default
decoding must return exactly those calls on every case, with no assist record, and the call grammar must
accept every one of them (the same calls come back without it).
"""

from __future__ import annotations

import pytest

from runtime.engine import GenerationConfig, ToolLoopEngine
from toolcore.conversation import Conversation, Message
from toolcore.formats import get_format
from toolcore.suites import load_suite

from .tiny_models import train_chats

FMT = get_format("generic")


@pytest.fixture(scope="module")
def cases():
    return load_suite("not_verbatim")


def episode(case) -> Conversation:
    """The case answered as it should be: its calls (or, with none expected, words), a result, an answer."""
    conv = case.conversation
    if not case.expected_calls:
        return Conversation(conv.messages + [Message.text("assistant", "I can't do that with these tools.")], conv.tools)
    return Conversation(conv.messages + [Message("assistant", [], list(case.expected_calls)),
                                         Message.text("tool", '{"ok": true}', name=case.expected_calls[0].name),
                                         Message.text("assistant", "Done.")], conv.tools)


@pytest.fixture(scope="module")
def writer(cases):
    return train_chats([episode(c) for c in cases], FMT, steps=160, hidden=96, vocab_size=800, lr=5e-3, max_loss=0.05)


def test_the_suite_covers_what_it_says(cases):
    labels = [set(c.difficulty.split(",")) for c in cases]
    assert len(cases) >= 40
    for kind in ("code", "name", "number", "time", "duration", "negation", "date", "system", "typo", "no-call"):
        assert sum(kind in lab for lab in labels) >= 1, kind
    languages = {x for lab in labels for x in lab if len(x) == 2}
    assert len(languages) >= 8, languages             # de, fr, es, ja, ru, ar, ko, el, hi, zh, ...
    # the point of the suite: most calls hold a value the request does not say as written (the rest are
    # native-script names said inside a word, with no space around them, and calls that must not be made)
    unsaid = 0
    for c in cases:
        text = " ".join(m.content for m in c.conversation.messages if m.role == "user")
        unsaid += any(str(v).lower() not in text.lower() for call in c.expected_calls for v in call.arguments.values())
    assert unsaid >= 35, unsaid


def test_the_default_decoding_returns_the_models_correct_calls_unchanged(cases, writer):
    model, tok = writer
    convs = [c.conversation for c in cases]
    default = ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=80, batch_size=16)).run(convs)
    free = ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=80, batch_size=16,
                                                            constrained=False)).run(convs)
    # the model learned every case (else this test would say nothing about the decoding)
    assert [o.calls for o in free] == [c.expected_calls for c in cases]
    wrong = [(c.id, o.calls) for c, o in zip(cases, default) if o.calls != c.expected_calls]
    assert not wrong
    assert not any(o.assists for o in default)
    assert all(o.constrained_tokens > 0 for c, o in zip(cases, default) if c.expected_calls)
    # the calls that ran are the calls returned
    assert all([e.call for e in o.tool_events] == o.calls for o in default)
