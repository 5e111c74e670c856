"""The xLAM / APIGen layout (Salesforce/xlam-function-calling-60k): `query` (the request), `tools`
and `answers` (the calls), each possibly a JSON string. APIGen's tools describe parameters Python's
way: {"param": {"type": "str, optional", "description", "default"}}; they become JSON schemas here
(str -> string, int -> integer, List[...] -> array, ...; a parameter is required unless its type says
optional or it has a default). A tool already written as a JSON schema is taken as it is."""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..conversation import Message
from ..schema import Tool
from .rows import Reject, RowContext, parse_json, text_of

JSON_TYPE = {"str": "string", "string": "string", "int": "integer", "integer": "integer", "float": "number",
             "number": "number", "bool": "boolean", "boolean": "boolean", "list": "array", "tuple": "array",
             "set": "array", "array": "array", "dict": "object", "object": "object", "none": "null"}
ANY = ["string", "number", "integer", "boolean", "array", "object", "null"]
OPTIONAL = re.compile(r"^optional\[(.*)\]$|^(.*?),\s*optional$", re.IGNORECASE)


def json_type(text: str) -> str | list[str]:
    """A Python type annotation as APIGen writes it -> a JSON type (or a list of them)."""
    text = text.strip()
    head = text.split("[", 1)[0].strip().lower()
    if head == "any":
        return ANY
    if head == "union" and text.endswith("]"):
        members = [json_type(t) for t in text[len(head) + 1:-1].split(",")]
        flat = sorted({t for m in members for t in (m if isinstance(m, list) else [m])})
        return flat[0] if len(flat) == 1 else flat
    if head in JSON_TYPE:
        return JSON_TYPE[head]
    raise Reject("bad_tool_schema", f"unknown parameter type {text[:40]!r}")


def tool_schema(tool: Any) -> Any:
    """An APIGen tool definition as a JSON-schema one (JSON-schema ones pass through)."""
    tool = parse_json(tool, "bad_tool_schema")
    if not isinstance(tool, Mapping) or "function" in tool:
        return tool
    params = tool.get("parameters")
    if params is None or (isinstance(params, Mapping) and params.get("type") == "object"):
        return tool
    if not isinstance(params, Mapping):
        raise Reject("bad_tool_schema", "parameters is not an object")
    props, required = {}, []
    for name, spec in params.items():
        if not isinstance(spec, Mapping) or not isinstance(spec.get("type"), str):
            raise Reject("bad_tool_schema", f"parameter {str(name)[:40]!r} has no type")
        m = OPTIONAL.match(spec["type"].strip())
        optional = m is not None
        prop: dict[str, Any] = {"type": json_type(next(g for g in m.groups() if g is not None) if m else spec["type"])}
        if isinstance(spec.get("description"), str):
            prop["description"] = spec["description"]
        if spec.get("default") is not None:
            prop["default"] = spec["default"]
            optional = True
        props[name] = prop
        if not optional:
            required.append(name)
    return {**tool, "parameters": {"type": "object", "properties": props, "required": required}}


def read(row: Mapping[str, Any], ctx: RowContext) -> tuple[list[Message], list[Tool]]:
    raw_tools = parse_json(row.get("tools"), "bad_tool_schema")
    if raw_tools is not None and not isinstance(raw_tools, list):
        raise Reject("bad_tool_schema", "tools is not a list")
    tools = ctx.tools([tool_schema(t) for t in raw_tools or []])
    answers = parse_json(row.get("answers"), "call_not_json")
    if answers is None or not isinstance(answers, list) or not all(isinstance(a, Mapping) for a in answers):
        raise Reject("malformed_call", "answers is not a list of calls")
    if not answers:
        raise Reject("no_answer", "no calls and no text answer")
    calls = [ctx.call(a.get("name"), a.get("arguments", a.get("parameters"))) for a in answers]
    return [Message.text("user", text_of(row.get("query"))), Message.text("assistant", "", tool_calls=calls)], tools
