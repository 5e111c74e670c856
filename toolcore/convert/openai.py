"""OpenAI chat format, as TRL and axolotl read it: `messages` (role / content; assistant turns with
`tool_calls` [{"id", "type": "function", "function": {"name", "arguments"}}], arguments a JSON string
or an object; tool turns with `tool_call_id` and/or `name`) and `tools` ([{"type": "function",
"function": {...}}] or plain definitions, or a JSON string of that list). Also the legacy single
`function_call` and role `function`, and data_gen's own rows (calls as {"name", "arguments"})."""

from __future__ import annotations

from typing import Any, Mapping

from ..conversation import Message
from ..schema import Tool
from .rows import Reject, RowContext, parse_json, result_text, text_of, turn_list

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
         "tool": "tool", "function": "tool"}


def assistant_calls(m: Mapping[str, Any], ctx: RowContext) -> list[tuple[Any, Any]]:
    """(call id, ToolCall) for each call of an assistant turn."""
    raw = m.get("tool_calls") or []
    if m.get("function_call"):
        raw = [{"function": m["function_call"]}]
    raw = parse_json(raw, "malformed_call")
    if not isinstance(raw, list):
        raise Reject("malformed_call", "tool_calls is not a list")
    out = []
    for c in raw:
        fn = c.get("function", c) if isinstance(c, Mapping) else None
        if not isinstance(fn, Mapping):
            raise Reject("malformed_call", "a call is not an object")
        out.append((c.get("id"), ctx.call(fn.get("name"), fn.get("arguments", fn.get("parameters")))))
    return out


def read(row: Mapping[str, Any], ctx: RowContext) -> tuple[list[Message], list[Tool]]:
    tools = ctx.tools(row.get("tools"))
    messages, by_id, pending = [], {}, []
    for m in turn_list(row, "messages"):
        role = ROLES.get(m.get("role")) if isinstance(m.get("role"), str) else None
        if role is None:
            raise Reject("unknown_role", f"role {str(m.get('role'))[:40]!r}")
        if role == "assistant":
            calls = assistant_calls(m, ctx)
            text = text_of(m.get("content"))
            if "<tool_call>" in text:
                raise Reject("call_in_text", "an assistant turn writes <tool_call> as text: the hermes layout?")
            by_id.update({cid: c.name for cid, c in calls if isinstance(cid, str)})
            pending = [c.name for _, c in calls]
            messages.append(Message.text("assistant", text, tool_calls=[c for _, c in calls]))
        elif role == "tool":
            cid = m.get("tool_call_id")
            name = m.get("name") if isinstance(m.get("name"), str) else by_id.get(cid) if isinstance(cid, str) else None
            if name is None and pending:
                name = pending[0]
            if name in pending:
                pending.remove(name)
            messages.append(Message.text("tool", result_text(m.get("content")), name=name))
        else:
            messages.append(Message.text(role, text_of(m.get("content"))))
    return messages, tools
