"""Hermes function calling (NousResearch/hermes-function-calling-v1, Qwen's own format): calls written
inside assistant text as `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, results as
`<tool_response>...</tool_response>` in tool turns. Turns come as ShareGPT (`conversations`:
from / value) or OpenAI (`messages`: role / content). The tools come from a `tools` column, or from
the system prompt's `<tools>...</tools>` (that system turn is then dropped: each model family's
format writes its own tool prompt)."""

from __future__ import annotations

import json
from typing import Any, Mapping

from ..conversation import Message
from ..formats.base import split_blocks
from ..schema import Tool
from .rows import Reject, RowContext, parse_json, result_text, text_of, turn_list

ROLES = {"system": "system", "human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant",
         "tool": "tool", "observation": "tool", "function": "tool"}


def tools_in_prompt(text: str) -> list[Any] | None:
    """The tools inside `<tools>...</tools>` (prompts also name the empty tags in their instructions): one
    JSON list, or JSON objects one after another (as Qwen's template writes them)."""
    bodies, _, failures = split_blocks(text, "<tools>", "</tools>")
    bodies = [b.strip() for b in bodies if b.strip()]
    if not bodies:
        return None
    if failures:
        raise Reject("bad_tool_schema", "<tools> without </tools> in the system prompt")
    found, decoder = [], json.JSONDecoder()
    for body in bodies:
        pos = 0
        while pos < len(body):
            try:
                obj, pos = decoder.raw_decode(body, pos)
            except ValueError as e:
                raise Reject("bad_tool_schema", f"tools in the system prompt are not JSON: {e}") from None
            found += obj if isinstance(obj, list) else [obj]
            while pos < len(body) and body[pos] in " \t\r\n,":
                pos += 1
    return found


def calls_in_text(text: str, ctx: RowContext) -> tuple[str, list]:
    bodies, rest, failures = split_blocks(text, "<tool_call>", "</tool_call>")
    if failures:
        raise Reject("call_not_json", failures[0])
    calls = []
    for body in bodies:
        obj = parse_json(body.strip(), "call_not_json")
        if not isinstance(obj, Mapping):
            raise Reject("malformed_call", "a <tool_call> body is not an object")
        calls.append(ctx.call(obj.get("name"), obj.get("arguments", obj.get("parameters"))))
    return rest, calls


def read(row: Mapping[str, Any], ctx: RowContext) -> tuple[list[Message], list[Tool]]:
    raw_tools = parse_json(row.get("tools"), "bad_tool_schema")
    messages, pending = [], []
    for turn in turn_list(row, "conversations", "messages"):
        who = turn.get("from", turn.get("role"))
        role = ROLES.get(who) if isinstance(who, str) else None
        if role is None:
            raise Reject("unknown_role", f"role {str(who)[:40]!r}")
        if turn.get("tool_calls"):
            raise Reject("mixed_layout", "structured tool_calls in a hermes row")
        value = turn.get("value", turn.get("content"))
        if role == "system" and not raw_tools and "<tools>" in text_of(value):
            raw_tools = tools_in_prompt(text_of(value))
            continue
        if role == "assistant":
            text, calls = calls_in_text(text_of(value), ctx)
            pending = [c.name for c in calls]
            messages.append(Message.text("assistant", text, tool_calls=calls))
        elif role == "tool":
            text = result_text(value)
            bodies, _, _ = split_blocks(text, "<tool_response>", "</tool_response>")
            for body in bodies or [text]:
                messages.append(Message.text("tool", body.strip(), name=pending.pop(0) if pending else None))
        else:
            messages.append(Message.text(role, text_of(value)))
    return messages, ctx.tools(raw_tools)
