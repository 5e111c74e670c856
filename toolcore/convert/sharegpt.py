"""ShareGPT with tools, as LLaMA-Factory reads it: `conversations` [{"from", "value"}] with turns
human / gpt / function_call (a call, or a list of calls, as JSON) / observation (a tool result) /
system, a `tools` column (a JSON string of function definitions) and an optional `system` column."""

from __future__ import annotations

from typing import Any, Mapping

from ..conversation import Message
from ..schema import Tool
from .rows import Reject, RowContext, parse_json, result_text, text_of, turn_list

ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system",
         "function_call": "call", "observation": "tool", "tool": "tool"}


def read(row: Mapping[str, Any], ctx: RowContext) -> tuple[list[Message], list[Tool]]:
    tools = ctx.tools(row.get("tools"))
    messages, pending = [], []
    system = row.get("system")
    if isinstance(system, str) and system.strip():
        messages.append(Message.text("system", system))
    for turn in turn_list(row, "conversations", "messages"):
        role = ROLES.get(turn.get("from")) if isinstance(turn.get("from"), str) else None
        value = turn.get("value")
        if role is None:
            raise Reject("unknown_role", f"from {str(turn.get('from'))[:40]!r}")
        if role == "call":
            raw = parse_json(value, "call_not_json")
            raw = raw if isinstance(raw, list) else [raw]
            if not all(isinstance(c, Mapping) for c in raw):
                raise Reject("malformed_call", "a call is not an object")
            calls = [ctx.call(c.get("name"), c.get("arguments", c.get("parameters"))) for c in raw]
            pending = [c.name for c in calls]
            messages.append(Message.text("assistant", "", tool_calls=calls))
        elif role == "tool":
            messages.append(Message.text("tool", result_text(value), name=pending.pop(0) if pending else None))
        else:
            text = text_of(value)
            if role == "assistant" and "<tool_call>" in text:
                raise Reject("call_in_text", "a gpt turn writes <tool_call> as text: the hermes layout?")
            messages.append(Message.text(role, text))
    return messages, tools
