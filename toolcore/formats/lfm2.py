"""LFM2 / LFM2-Audio: tools listed between `<|tool_list_start|>`/`<|tool_list_end|>` in the system
prompt, calls in Pythonic form `<|tool_call_start|>[get_weather(location="Paris")]<|tool_call_end|>`,
results in a `tool` turn between `<|tool_response_start|>`/`<|tool_response_end|>`.
All six markers are single tokens in LFM2's tokenizer.

Tool names are written verbatim (`get-weather(...)`, `math.factorial(...)`), although they are not
always Python: names and keys are read with patterns, argument values with `ast.parse` (syntax only)
and `ast.literal_eval`. Nothing the model writes is ever executed.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Sequence

from ..conversation import Message
from ..schema import Tool, ToolCall
from .base import ChatFormat, ParseResult, Segment, dumps, json_value_problem, split_blocks
from .grammar import pythonic_calls_ebnf


def py_literal(value: Any) -> str:
    """A Python literal for a JSON value (strings in double quotes, as LFM2's template writes them)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(py_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        # keys as the strings they are: an ASCII-escaped key would write "𐀀" as the JSON pair "\ud800\udc00",
        # which Python reads as two lone surrogates
        return "{" + ", ".join(f"{py_literal(str(k))}: {py_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot render {type(value).__name__} as a literal")


# A call is `name(key=value, ...)`. Tool names may hold '-' and '.' (get-weather, math.factorial) or
# start with a digit, which are not Python: the name and the keys are read by these patterns, and only
# each value goes through `ast` (parsed, never run) as a Python literal.
CALL_HEAD = re.compile(r"\s*([\w.\-]+)\s*\(")
KEYWORD = re.compile(r"\s*([\w.\-]+)\s*=(?!=)")
# where a comma or bracket might matter; quotes start a string literal, skipped whole (STRING)
SYNTAX = re.compile(r"""["'()\[\]{},]""")


def _string_literal(quote: str) -> str:
    """The pattern of a Python string literal between `quote`s (one or three quote characters)."""
    q = quote[0]
    if len(quote) == 3:    # may span lines and hold lone quotes
        return rf"{quote}(?:[^{q}\\]|\\.|{q}(?!{q}{q}))*{quote}"
    return rf"{q}(?:[^{q}\\\n]|\\.)*{q}"


STRING = re.compile("|".join(_string_literal(q) for q in ('"""', "'''", '"', "'")), re.S)
CLOSER = {"(": ")", "[": "]", "{": "}"}


def split_top_level(src: str) -> list[str] | None:
    """`src` cut at the commas outside brackets and string literals; None when a bracket or a quote
    is unbalanced. One pass of regex searches: linear in the length, any nesting depth."""
    pieces, closers, start, pos = [], [], 0, 0
    while (m := SYNTAX.search(src, pos)):
        char, pos = m.group(), m.end()
        if char in "\"'":
            string = STRING.match(src, m.start())
            if not string:
                return None
            pos = string.end()
        elif char in CLOSER:
            closers.append(CLOSER[char])
        elif char != ",":
            if not closers or closers.pop() != char:
                return None
        elif not closers:
            pieces.append(src[start:m.start()])
            start = pos
    return None if closers else [*pieces, src[start:]]


def comma_list(src: str) -> list[str] | None:
    """The items of a comma-separated list (a trailing comma allowed, as in Python); [] for blank text."""
    items = split_top_level(src)
    if items and not items[-1].strip():
        items.pop()
    return items


def python_literal(text: str) -> tuple[Any, str | None]:
    """The JSON value a Python literal writes (`"x"`, `-1.5`, `[1, {"a": None}]`), or why it is not one."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
        for node in ast.walk(tree):
            keys = [k.value for k in getattr(node, "keys", []) if isinstance(k, ast.Constant)]
            if isinstance(node, ast.Dict) and len(set(keys)) < len(keys):
                return None, "duplicate key in a dict"
        value = ast.literal_eval(tree)
    # MemoryError: CPython's parser reports some deep nesting as out of memory
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError) as e:
        reason = (str(e).splitlines() or [type(e).__name__])[0]
        # literal_eval names the refused node as "<ast.Call object at 0x...>": say what it is instead
        return None, "an expression" if reason.startswith("malformed node") else reason[:120]
    return value, json_value_problem(value)


def parse_pythonic_call(item: str) -> tuple[ToolCall | None, str | None]:
    """One `name(key=value, ...)`; positional arguments, repeated keys and non-literals are failures."""
    head, body = CALL_HEAD.match(item), item.rstrip()
    if not head or not body.endswith(")"):
        return None, "list item is not a call by name"
    name = head.group(1)
    pieces = comma_list(body[head.end():-1])
    if pieces is None:    # the name's "(" does not close at the end: `f(a=1) + g()`
        return None, f"{name}: invalid call syntax"
    args: dict[str, Any] = {}
    for piece in pieces:
        key = KEYWORD.match(piece)
        if not key:
            return None, f"{name}: positional arguments are not allowed"
        if key.group(1) in args:
            return None, f"{name}: argument {key.group(1)!r} is given twice"
        value, problem = python_literal(piece[key.end():])
        if problem:
            return None, f"{name}: argument {key.group(1)!r} is not a literal ({problem})"
        args[key.group(1)] = value
    return ToolCall(name, args), None


def parse_pythonic(body: str) -> tuple[list[ToolCall], list[str]]:
    """`[f(a=1), get-weather(city="x")]` (brackets optional) -> calls; anything else -> failures."""
    src = body.strip()
    if src.startswith("["):
        if not src.endswith("]"):
            return [], ["invalid call syntax: '[' without ']'"]
        src = src[1:-1]
    items = comma_list(src)
    if items is None:
        return [], ["invalid call syntax: unbalanced brackets or quotes"]
    if not items:    # `[]`: the block was opened, but nothing called
        return [], ["no call between the call markers"]
    calls, failures = [], []
    for item in items:
        call, failure = parse_pythonic_call(item)
        if call is not None:
            calls.append(call)
        else:
            failures.append(failure or "unparseable call")
    return calls, failures


class LFM2Format(ChatFormat):
    name = "lfm2"
    tool_tokens = ("<|tool_list_start|>", "<|tool_list_end|>", "<|tool_call_start|>", "<|tool_call_end|>",
                   "<|tool_response_start|>", "<|tool_response_end|>")
    call_start, call_end = "<|tool_call_start|>", "<|tool_call_end|>"
    bos = "<|startoftext|>"

    def system_text(self, system: str, tools: Sequence[Tool]) -> str:
        if not tools:
            return system
        listing = "List of tools: <|tool_list_start|>[" + ", ".join(dumps(t.to_schema()) for t in tools) + "]<|tool_list_end|>"
        return f"{system}\n{listing}" if system else listing

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        inner = ", ".join(f"{c.name}(" + ", ".join(f"{k}={py_literal(v)}" for k, v in c.arguments.items()) + ")"
                          for c in calls)
        return f"{self.call_start}[{inner}]{self.call_end}"

    def render_result(self, result: Message) -> str:
        return f"<|tool_response_start|>{result.content}<|tool_response_end|>"

    def call_grammar(self, tools: Sequence[Tool]) -> str:
        return pythonic_calls_ebnf(tools)

    def render_tool_turn(self, results: Sequence[Message]) -> list[Segment]:
        return [Segment(f"<|im_start|>tool\n{self.render_result(r)}{self.turn_end}\n", role="tool") for r in results]

    def parse(self, text: str) -> ParseResult:
        bodies, content, failures = split_blocks(text, self.call_start, self.call_end)
        result = ParseResult(content=content, failures=failures)
        for body in bodies:
            calls, errs = parse_pythonic(body)
            result.calls += calls
            result.failures += errs
        return result
