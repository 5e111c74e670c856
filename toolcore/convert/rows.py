"""What every layout reader shares: turning loose JSON (strings or objects, as Arrow hands them back)
into toolkit messages, tools and calls, and the checks that decide whether a conversation is kept.

A reader raises `Reject(reason, detail)` for a row it cannot take; the converter counts the reason
(a short fixed word: the manifest's keys never carry user text) and keeps the first detail as an
example. Nothing a row holds is ever evaluated: JSON is parsed with `json`, schemas with `jsonschema`.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping, Sequence

from ..conversation import Conversation, Message
from ..formats import ChatFormat
from ..schema import Tool, ToolCall
from ..verify import call_problem, roundtrip_problem
from .writer import make_record

MAX_DEPTH = 64          # nesting deeper than this in a kept conversation is refused ("too_deep")


class Reject(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason)
        self.reason, self.detail = reason, detail


def parse_json(value: Any, reason: str) -> Any:
    """A JSON string parsed; anything else (already an object, as Arrow gives it) as it is."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError as e:
        raise Reject(reason, f"not JSON: {e}") from None


def prune_nulls(value: Any) -> Any:
    """Drop object keys whose value is null. Arrow fills a key that other rows have with null, so a
    null there cannot be told from an absent key; in a tool schema or an argument object it is absent."""
    if isinstance(value, Mapping):
        return {k: prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [prune_nulls(v) for v in value]
    return value


def text_of(content: Any) -> str:
    """Message content as text: a string, null, or a list of {"type": "text", "text": ...} parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, Mapping) and p.get("type") == "text"
                                         and isinstance(p.get("text"), str) for p in content):
        return "".join(p["text"] for p in content)
    raise Reject("unsupported_content", f"content of type {type(content).__name__} is not text")


def result_text(content: Any) -> str:
    """A tool result: text, or an object / list written as JSON."""
    if isinstance(content, (Mapping, list)) and not (isinstance(content, list) and content
                                                      and all(isinstance(p, Mapping) and "type" in p for p in content)):
        return json.dumps(content, ensure_ascii=False)
    return text_of(content)


def value_problem(value: Any) -> str | None:
    """Why a decoded value cannot be kept: non-finite numbers, strings that are not valid Unicode,
    nesting deeper than MAX_DEPTH, or a type JSON does not have. Iterative: any depth is safe."""
    stack = [(value, 0)]
    while stack:
        x, depth = stack.pop()
        if depth > MAX_DEPTH:
            return "too_deep"
        if isinstance(x, str):
            try:
                x.encode("utf-8")
            except UnicodeEncodeError:
                return "invalid_unicode"
        elif isinstance(x, float):
            if not math.isfinite(x):
                return "non_finite_number"
        elif isinstance(x, Mapping):
            if not all(isinstance(k, str) for k in x):
                return "malformed_row"
            stack += [(k, depth + 1) for k in x] + [(v, depth + 1) for v in x.values()]
        elif isinstance(x, (list, tuple)):
            stack += [(v, depth + 1) for v in x]
        elif not (x is None or isinstance(x, (bool, int))):
            return "malformed_row"
    return None


def category_for(num_calls: int) -> str:
    """Imported conversations have no data_gen category: it is named by the calls that answer the request."""
    return "no_call" if num_calls == 0 else "single" if num_calls == 1 else "multi2" if num_calls == 2 else "multi3"


class RowContext:
    """Per-conversion state the readers share: tool objects cached by schema (a dataset offers the same
    tools thousands of times, and building one compiles a validator), and the verification settings."""

    def __init__(self, formats: Sequence[ChatFormat] = (), max_chars: int = 200_000):
        self.formats = list(formats)
        self.max_chars = max_chars
        self._tools: dict[str, Tool | tuple[str, str]] = {}   # a schema that failed: (reason, detail)

    def tool(self, schema: Any) -> Tool:
        schema = parse_json(schema, "bad_tool_schema")
        if not isinstance(schema, Mapping):
            raise Reject("bad_tool_schema", "a tool is not an object")
        schema = prune_nulls(schema)
        key = json.dumps(schema, sort_keys=True)
        if key not in self._tools:
            problem = value_problem(schema)
            try:
                if problem:
                    raise Reject(problem, "in a tool schema")
                self._tools[key] = Tool.from_schema(schema)
            except Reject as r:
                self._tools[key] = (r.reason, r.detail)
            except Exception as e:  # noqa: BLE001 - whatever stops a schema from loading makes it a bad one
                self._tools[key] = ("bad_tool_schema", str(e))
        found = self._tools[key]
        if isinstance(found, tuple):
            raise Reject(*found)
        return found

    def tools(self, raw: Any) -> list[Tool]:
        """A tool list: null, a list, or a JSON string of one; items plain or OpenAI-wrapped definitions."""
        raw = parse_json(raw, "bad_tool_schema")
        if raw is None:
            return []
        if not isinstance(raw, list):
            raise Reject("bad_tool_schema", "tools is not a list")
        tools = [self.tool(t) for t in raw]
        names = [t.name for t in tools]
        if len(set(names)) != len(names):
            raise Reject("bad_tool_schema", "two tools share a name")
        return tools

    def call(self, name: Any, arguments: Any) -> ToolCall:
        """A call from a name and arguments given as an object or as a JSON string."""
        if not isinstance(name, str) or not name:
            raise Reject("malformed_call", "a call has no string name")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as e:
                raise Reject("arguments_not_json", f"{name}: {e}") from None
        elif isinstance(arguments, Mapping):
            arguments = prune_nulls(arguments)
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise Reject("arguments_not_object", f"{name}: arguments are a {type(arguments).__name__}")
        return ToolCall(name, dict(arguments))

    def record(self, messages: list[Message], tools: list[Tool], id_: str, style: str) -> dict[str, Any]:
        """The kept row, after the checks every imported conversation passes."""
        check_shape(messages)
        conv = Conversation(messages, tools).to_dict()
        problem = value_problem(conv)
        if problem:
            raise Reject(problem)
        offered = {t.name: t for t in tools}
        for m in messages:
            for call in m.tool_calls:
                problem = call_problem(call, offered)
                if problem:
                    detail = "; ".join(offered[call.name].validation_errors(call.arguments)[:2]) \
                        if problem == "schema" else f"{call.name} is not among {sorted(offered)}"
                    raise Reject(problem, detail)
            problem = roundtrip_problem(m.tool_calls, self.formats)
            if problem:
                raise Reject(problem, ", ".join(c.name for c in m.tool_calls))
        last_user = max(i for i, m in enumerate(messages) if m.role == "user")
        calls = [c.to_dict() for m in messages[last_user:] for c in m.tool_calls]
        rec = make_record(id_, category=category_for(len(calls)), style=style,
                          history=sum(m.role == "user" for m in messages) > 1, user_text=messages[last_user].content,
                          calls=calls, messages=conv["messages"], tools=conv["tools"])
        if len(rec["messages"]) + len(rec["tools"]) > self.max_chars:
            raise Reject("too_long", f"{len(rec['messages']) + len(rec['tools'])} characters")
        return rec


def check_shape(messages: list[Message]) -> None:
    """A toolkit conversation: user turns with text, an assistant answer (text or calls) after the last
    one, tool results only after an assistant turn with calls."""
    if not any(m.role == "user" for m in messages):
        raise Reject("no_user_turn")
    last_user = max(i for i, m in enumerate(messages) if m.role == "user")
    if not any(m.role == "assistant" for m in messages[last_user:]):
        raise Reject("no_answer", "nothing from the assistant after the last user turn")
    calls_open = False
    for m in messages:
        if m.role == "user" and not m.content.strip():
            raise Reject("empty_user_turn")
        if m.role == "assistant" and not m.tool_calls and not m.content.strip():
            raise Reject("empty_assistant_turn")
        if m.role == "tool" and not calls_open:
            raise Reject("tool_result_without_call")
        calls_open = bool(m.tool_calls) if m.role == "assistant" else calls_open and m.role == "tool"


def turn_list(row: Mapping[str, Any], *columns: str) -> list[Mapping[str, Any]]:
    """The turns of a conversation: the first of `columns` the row has, a list of objects (or its JSON)."""
    column = next((c for c in columns if row.get(c) is not None), columns[0])
    turns = parse_json(row.get(column), "malformed_messages")
    if not isinstance(turns, list) or not all(isinstance(t, Mapping) for t in turns):
        raise Reject("malformed_messages", f"{column} is not a list of objects")
    return turns
