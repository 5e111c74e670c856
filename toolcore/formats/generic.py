"""Generic format for chat models without tool tokens (SmolLM2 and other ChatML models).

Calls are JSON between two new special tokens, `<|tool_call_start|>` and `<|tool_call_end|>`;
results sit between `<|tool_response_start|>`/`<|tool_response_end|>` in a `tool` turn. The trainer
adds the four tokens to the tokenizer and trains only their embedding rows.

Tools are listed as one-line signatures instead of JSON schemas:
    send_message(recipient: string, message: string): Send a message to a contact | recipient: ...
which says the same (names, types, optional `?`, enums, descriptions) in about half the tokens.
Small models have small contexts, and in training every prompt token costs compute: with JSON
schemas the tool list was 69% of an average example's tokens.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from ..conversation import Message
from ..schema import Tool, ToolCall, resolve_local_ref
from .base import ChatFormat, ParseResult, dumps, parse_json_call, split_blocks
from .grammar import json_calls_ebnf

INSTRUCTION = ("You can call tools. To call one, write <|tool_call_start|>{\"name\": ..., \"arguments\": {...}}"
               "<|tool_call_end|>. Tools:")


def type_text(spec: Any, root: Mapping[str, Any] | None = None, seen: frozenset[str] = frozenset()) -> str:
    """A property's type in a few words: `string`, `integer|null`, `"c"|"f"`, `array of number`.
    Local `$ref`s are read from `root` (the tool's parameters); one met again inside itself is `any`."""
    if not isinstance(spec, Mapping):
        return "any"
    if "$ref" in spec:
        target = resolve_local_ref(root or {}, spec["$ref"])
        return "any" if target is None or spec["$ref"] in seen else type_text(target, root, seen | {spec["$ref"]})
    if "const" in spec:
        return json.dumps(spec["const"], ensure_ascii=False)
    if "enum" in spec:
        return "|".join(json.dumps(v, ensure_ascii=False) for v in spec["enum"])
    alternatives = spec.get("anyOf") or spec.get("oneOf")    # Pydantic's Optional[str]: string|null
    if isinstance(alternatives, list):
        return "|".join(type_text(s, root, seen) for s in alternatives)
    kind = spec.get("type", "any")
    if isinstance(kind, list):
        return "|".join(kind)
    if kind == "array":
        return f"array of {type_text(spec.get('items', {}), root, seen)}"
    if kind == "object" and spec.get("properties"):
        return json.dumps(spec, ensure_ascii=False)
    return kind


def signature(tool: Tool) -> str:
    """`name(arg: type, opt?: type): description | arg: what it is; ...`"""
    required = set(tool.required)
    args = ", ".join(f"{k}{'' if k in required else '?'}: {type_text(v, tool.parameters)}"
                     for k, v in tool.properties.items())
    line = f"{tool.name}({args}): {tool.description}"
    notes = "; ".join(f"{k}: {v['description']}" for k, v in tool.properties.items()
                      if isinstance(v, Mapping) and v.get("description"))
    return f"{line} | {notes}" if notes else line


class GenericFormat(ChatFormat):
    name = "generic"
    tool_tokens = ("<|tool_call_start|>", "<|tool_call_end|>", "<|tool_response_start|>", "<|tool_response_end|>")
    call_start, call_end = "<|tool_call_start|>", "<|tool_call_end|>"

    def system_text(self, system: str, tools: Sequence[Tool]) -> str:
        if not tools:
            return system
        listing = INSTRUCTION + "".join("\n- " + signature(t) for t in tools)
        return f"{system}\n{listing}" if system else listing

    def render_calls(self, calls: Sequence[ToolCall]) -> str:
        return "".join(f"{self.call_start}{dumps(c.to_dict())}{self.call_end}" for c in calls)

    def render_result(self, result: Message) -> str:
        return f"<|tool_response_start|>{result.content}<|tool_response_end|>"

    def call_grammar(self, tools: Sequence[Tool]) -> str:
        return json_calls_ebnf(tools)

    def parse(self, text: str) -> ParseResult:
        bodies, content, failures = split_blocks(text, self.call_start, self.call_end)
        result = ParseResult(content=content, failures=failures)
        for body in bodies:
            call, err = parse_json_call(body.strip())
            if call is not None:
                result.calls.append(call)
            else:
                result.failures.append(err or "unparseable call")
        return result
