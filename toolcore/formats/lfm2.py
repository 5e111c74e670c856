"""LFM2 / LFM2-Audio: tools listed between `<|tool_list_start|>`/`<|tool_list_end|>` in the system
prompt, calls in Pythonic form `<|tool_call_start|>[get_weather(location="Paris")]<|tool_call_end|>`,
results in a `tool` turn between `<|tool_response_start|>`/`<|tool_response_end|>`.
All six markers are single tokens in LFM2's tokenizer.

Calls are parsed with `ast.parse` (syntax only) and `ast.literal_eval` for argument values:
nothing the model writes is ever executed.
"""

from __future__ import annotations

import ast
import json
from typing import Any, Sequence

from ..conversation import Message
from ..schema import Tool, ToolCall
from .base import ChatFormat, ParseResult, Segment, dumps, split_blocks
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
        return "{" + ", ".join(f"{json.dumps(str(k))}: {py_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot render {type(value).__name__} as a literal")


def parse_pythonic(body: str) -> tuple[list[ToolCall], list[str]]:
    """`[f(a=1), g(b="x")]` (brackets optional) -> calls; anything else -> failures."""
    src = body.strip()
    if not src.startswith("["):
        src = f"[{src}]"
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as e:
        return [], [f"invalid call syntax: {e.msg}"]
    if not isinstance(tree.body, ast.List):
        return [], ["calls are not a list"]
    calls, failures = [], []
    for node in tree.body.elts:
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            failures.append("list item is not a call by name")
            continue
        if node.args:
            failures.append(f"{node.func.id}: positional arguments are not allowed")
            continue
        args: dict[str, Any] = {}
        try:
            for kw in node.keywords:
                if kw.arg is None:
                    raise ValueError("**kwargs")
                args[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, SyntaxError, TypeError) as e:
            failures.append(f"{node.func.id}: argument is not a literal ({e})")
            continue
        calls.append(ToolCall(node.func.id, args))
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
