"""What every model-family format does: render a conversation to training text, parse calls back.

A format renders a `Conversation` into `Segment`s: runs of text flagged `trainable` when they are
the assistant's own output (calls, final answers and the end-of-turn marker after them). The
trainer builds its label mask from these flags and the evaluator builds its prompt from the same
`render(..., add_generation_prompt=True)`, so training and serving text cannot drift apart.

In a tool-calling episode the assistant writes its calls in one turn and ends it; the results come
back as a tool turn; the assistant answers. The `continuation()` of a format is the exact text the
live loop inserts after the model stops, and it equals what `render` writes for the same
conversation. (Ovis crops are the exception: generation pauses right after the call and the cropped
image is fed back inside the same turn.)
"""

from __future__ import annotations

import json
import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..conversation import Conversation, Message
from ..schema import Tool, ToolCall


@dataclass(frozen=True)
class Segment:
    text: str
    trainable: bool = False
    role: str = ""


@dataclass
class ParseResult:
    """Calls found in generated text, the prose around them, and every failure (never an exception)."""

    calls: list[ToolCall] = field(default_factory=list)
    content: str = ""
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def dumps(obj: Any) -> str:
    """JSON as the model sees it: compact separators would save tokens but all reference templates
    (Qwen, LFM2) use the default `json.dumps` spacing, so we keep it."""
    return json.dumps(obj, ensure_ascii=False)


class ChatFormat(ABC):
    """Base for ChatML-style formats (`<|im_start|>role\\n...<|im_end|>\\n`)."""

    name: str = ""
    #: tokens the tokenizer must hold as single tokens (added as special tokens when missing)
    tool_tokens: tuple[str, ...] = ()
    #: generation stops when a sequence emits one of these (the live tool loop pauses there)
    call_end: str = ""
    turn_end: str = "<|im_end|>"
    bos: str = ""
    default_system: str = ""

    # ----- rendering -------------------------------------------------------------------------
    def render(self, conv: Conversation, *, add_generation_prompt: bool = False) -> list[Segment]:
        segs: list[Segment] = [Segment(self.bos)] if self.bos else []
        msgs = list(conv.messages)
        system = msgs.pop(0).content if msgs and msgs[0].role == "system" else self.default_system
        sys_text = self.system_text(system, conv.tools)
        if sys_text:
            segs.append(Segment(f"<|im_start|>system\n{sys_text}{self.turn_end}\n", role="system"))
        i, inline = 0, False
        while i < len(msgs):
            m = msgs[i]
            if m.role == "tool":
                j = i
                while j < len(msgs) and msgs[j].role == "tool":
                    j += 1
                inline = self.is_inline(msgs[i:j])
                segs.extend(self.render_inline(msgs[i:j]) if inline else self.render_tool_turn(msgs[i:j]))
                i = j
                continue
            if m.role == "assistant":
                if not inline:
                    segs.append(Segment(self.assistant_header(), role="assistant"))
                nxt = msgs[i + 1:i + 2]
                if nxt and nxt[0].role == "tool" and self.is_inline(nxt):
                    # the result is fed back inside this same turn (Ovis crop): no end-of-turn yet
                    segs.append(Segment(self.assistant_body(m), trainable=True, role="assistant"))
                else:
                    segs.append(Segment(self.assistant_body(m) + self.turn_end, trainable=True, role="assistant"))
                    segs.append(Segment("\n", role="assistant"))
            else:
                segs.append(Segment(f"<|im_start|>{m.role}\n{self.user_body(m)}{self.turn_end}\n", role=m.role))
            inline = False
            i += 1
        if add_generation_prompt:
            segs.append(Segment(self.assistant_header(), role="assistant"))
        return segs

    def render_text(self, conv: Conversation, *, add_generation_prompt: bool = False) -> str:
        return "".join(s.text for s in self.render(conv, add_generation_prompt=add_generation_prompt))

    def prompt(self, conv: Conversation) -> str:
        """The text a model is given to answer the last user turn of `conv`."""
        return self.render_text(conv.up_to_last_user(), add_generation_prompt=True)

    def assistant_header(self) -> str:
        return "<|im_start|>assistant\n"

    def user_body(self, m: Message) -> str:
        return "".join(p.text if p.type == "text" else self.media_placeholder(p.type) for p in m.parts)

    def media_placeholder(self, kind: str) -> str:
        return f"<{kind}>"

    def assistant_body(self, m: Message) -> str:
        calls = self.render_calls(m.tool_calls) if m.tool_calls else ""
        return calls + m.content if calls else m.content

    def render_tool_turn(self, results: Sequence[Message]) -> list[Segment]:
        body = "".join(self.render_result(r) for r in results)
        return [Segment(f"<|im_start|>tool\n{body}{self.turn_end}\n", role="tool")]

    def is_inline(self, results: Sequence[Message]) -> bool:
        """Whether these tool results are fed back inside the assistant's turn (no new turn)."""
        return False

    def render_inline(self, results: Sequence[Message]) -> list[Segment]:
        raise NotImplementedError

    def pauses_after(self, call: ToolCall) -> bool:
        """Whether generation stops right after this call (its result is fed back inside the turn,
        as Ovis does with crops). Otherwise tools run when the assistant's turn ends."""
        return False

    def continuation_segments(self, results: Sequence[Message]) -> list[Segment]:
        """What the live tool loop appends once the model has stopped - after its end-of-turn marker
        (or right after an inline call): the tool turn and the next assistant header. These are the
        segments `render` writes for the same conversation, so tokenization matches training too."""
        if self.is_inline(results):
            return self.render_inline(results)
        return [Segment("\n"), *self.render_tool_turn(results), Segment(self.assistant_header())]

    def continuation(self, results: Sequence[Message]) -> str:
        return "".join(s.text for s in self.continuation_segments(results))

    @abstractmethod
    def system_text(self, system: str, tools: Sequence[Tool]) -> str: ...

    @abstractmethod
    def render_calls(self, calls: Sequence[ToolCall]) -> str: ...

    @abstractmethod
    def render_result(self, result: Message) -> str: ...

    # ----- parsing ---------------------------------------------------------------------------
    @abstractmethod
    def parse(self, text: str) -> ParseResult:
        """Calls in generated assistant text. Malformed or truncated calls become failures."""

    def call_grammar(self, tools: Sequence[Tool]) -> str | None:
        """The EBNF grammar of a valid call body (between `call_start` and `call_end`) for
        schema-constrained decoding, or None where calls are not constrained. See `formats.grammar`."""
        return None

    def roundtrip_ok(self, calls: Sequence[ToolCall]) -> bool:
        parsed = self.parse(self.render_calls(calls))
        return parsed.ok and parsed.calls == list(calls)


def split_blocks(text: str, start: str, end: str) -> tuple[list[str], str, list[str]]:
    """Bodies between `start`/`end` markers, the text outside them, and failures for broken blocks."""
    bodies, outside, failures = [], [], []
    pos = 0
    while True:
        i = text.find(start, pos)
        if i < 0:
            outside.append(text[pos:])
            break
        outside.append(text[pos:i])
        j = text.find(end, i + len(start))
        if j < 0:
            failures.append(f"truncated: {start} without {end}")
            break
        bodies.append(text[i + len(start):j])
        pos = j + len(end)
    stray = sum(o.count(end) for o in outside)
    if stray:
        failures.append(f"unbalanced: {end} without {start}")
    return bodies, "".join(outside).strip(), failures


def partial_marker(text: str, markers: Sequence[str]) -> int:
    """How many characters at the end of `text` may be the start of one of `markers` (a stream holds
    them back until the next piece decides)."""
    return max((k for m in markers for k in range(1, len(m)) if text.endswith(m[:k])), default=0)


# lone surrogates: a str holds one after a JSON escape such as "\ud800" or a broken decode, never from text
SURROGATE = re.compile("[\ud800-\udfff]")


def _refuse_constant(word: str) -> Any:
    raise ValueError(f"{word} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):    # 1e999999 reads as inf: no argument can carry it
        raise ValueError(f"number {text[:20]} is out of range")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:    # json.loads would keep the last one silently
            raise ValueError(f"duplicate key {key!r}")
        seen.add(key)
    return dict(pairs)


def loads_strict(text: str) -> Any:
    """`json.loads` that refuses what a call cannot carry: NaN/Infinity, numbers beyond float range,
    duplicate keys. Raises ValueError (JSONDecodeError is one) or RecursionError (deep nesting)."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float, object_pairs_hook=_unique_keys)


def json_value_problem(value: Any) -> str | None:
    """Why `value` cannot be a call's name or argument, or None: JSON types only, finite numbers, text
    that is valid Unicode (a lone surrogate cannot be written as UTF-8: saving predictions would fail).
    Iterative, so any depth a parser let through is checked without recursion."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                return "an object key is not a string"
            stack += [*v.keys(), *v.values()]
        elif isinstance(v, list):
            stack += v
        elif isinstance(v, str):
            if SURROGATE.search(v):
                return "text with a lone surrogate (invalid Unicode)"
        elif isinstance(v, float):
            if not math.isfinite(v):
                return f"number {v} is not finite"
        elif not (v is None or isinstance(v, (bool, int))):
            return f"a {type(v).__name__} is not a JSON value"
    return None


def _json_failure(e: Exception) -> str:
    if isinstance(e, RecursionError):
        return "nested too deeply"
    return getattr(e, "msg", None) or str(e)


def parse_json_call(body: str) -> tuple[ToolCall | None, str | None]:
    """A call written as JSON {"name": ..., "arguments": {...}} (also "parameters", or args as a string)."""
    try:
        obj = loads_strict(body)
    except (ValueError, RecursionError) as e:
        return None, f"invalid JSON in call: {_json_failure(e)}"
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return None, "call JSON has no string 'name'"
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = loads_strict(args)
        except (ValueError, RecursionError):
            return None, "call arguments are a string that is not JSON"
    if not isinstance(args, dict):
        return None, "call arguments are not an object"
    problem = json_value_problem([obj["name"], args])
    if problem:
        return None, f"call JSON holds {problem}"
    return ToolCall(obj["name"], args), None
