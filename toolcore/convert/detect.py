"""Which layout a source is in, from its columns and the turns of its first rows.

xlam       columns query + answers (+ tools)
openai     a `messages` column of role / content turns (calls in `tool_calls`)
sharegpt   a `conversations` (or `messages`) column of from / value turns (calls in function_call turns)
hermes     either carrier, with `<tool_call>` written inside assistant text

Rows that show both structured calls and `<tool_call>` text, or both carriers, are ambiguous: the
layout must then be named (`layout=...`, or a "hermes:" prefix on the source). An unknown layout fails
with the columns it saw and the layouts it knows.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from ..errors import ToolkitError

KNOWN = ("openai (messages + tools, calls in tool_calls), sharegpt (conversations + tools, function_call / "
         "observation turns), xlam (query + tools + answers), hermes (<tool_call> inside assistant text)")


def _turns(value: Any) -> list[Mapping[str, Any]]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return []
    return [t for t in value if isinstance(t, Mapping)] if isinstance(value, list) else []


def detect_layout(columns: Iterable[str], rows: Iterable[Mapping[str, Any]], *, source: str = "",
                  field: str = "layout") -> str:
    cols = set(columns)

    def name_it(*candidates: str) -> str:
        return (f"name the layout: {' or '.join(f'{field}={c}' for c in candidates)} "
                f"(or a prefix on the source: '{candidates[-1]}:{source or '<source>'}')")

    if {"query", "answers"} <= cols:
        return "xlam"
    carriers = [c for c in ("messages", "conversations") if c in cols]
    if not carriers:
        raise ToolkitError(f"unknown layout: columns {sorted(cols)}", file=source, field=field,
                           fix=f"known layouts: {KNOWN}")
    if len(carriers) > 1:
        raise ToolkitError("ambiguous layout: rows have both messages and conversations", file=source,
                           field=field, fix=name_it("openai", "sharegpt", "hermes"))
    signals: set[str] = set()
    for row in rows:
        for t in _turns(row.get(carriers[0])):
            signals.add("from_value" if "from" in t else "role_content")
            who, text = t.get("from", t.get("role")), t.get("value", t.get("content"))
            if who in ("function_call", "observation"):
                signals.add("sharegpt_calls")
            if t.get("tool_calls") or t.get("function_call"):
                signals.add("openai_calls")
            if who in ("gpt", "assistant") and isinstance(text, str) and "<tool_call>" in text:
                signals.add("hermes")
    structured = signals & {"sharegpt_calls", "openai_calls"}
    styles = signals & {"from_value", "role_content"}
    if len(structured) > 1 or len(styles) > 1 or ("hermes" in signals and structured):
        seen = {"sharegpt_calls": "sharegpt", "from_value": "sharegpt", "openai_calls": "openai",
                "role_content": "openai", "hermes": "hermes"}
        raise ToolkitError(f"ambiguous layout: its rows show {sorted(signals)}", file=source, field=field,
                           fix=name_it(*sorted({seen[s] for s in signals})))
    if "hermes" in signals:
        return "hermes"
    if "from_value" in styles or carriers == ["conversations"]:
        return "sharegpt"
    return "openai"

