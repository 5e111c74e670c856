"""The format checks every kept call passes, in data_gen and in the converter alike: the call names a
tool offered in its conversation, its arguments validate against that tool's JSON schema (unknown keys
included), and every target format renders and parses the calls back unchanged.

Each check returns a rejection reason (counted in the dataset's manifest) or None.
"""

from __future__ import annotations

import json
from typing import Mapping, Sequence

from .formats import ChatFormat
from .schema import Tool, ToolCall


def call_problem(call: ToolCall, offered: Mapping[str, Tool]) -> str | None:
    """"not_offered" or "schema" (the kind only: callers add the tool's name where they want it)."""
    tool = offered.get(call.name)
    if tool is None:
        return "not_offered"
    if tool.validation_errors(call.arguments):
        return "schema"
    return None


def roundtrip_problem(calls: Sequence[ToolCall], formats: Sequence[ChatFormat]) -> str | None:
    for fmt in formats:
        if calls and not fmt.roundtrip_ok(calls):
            return f"roundtrip:{fmt.name}"
    return None


def repeated_call_problem(calls: Sequence[ToolCall]) -> str | None:
    """"repeated_call" where one turn holds the same call twice (same tool, same arguments). The
    generators compose a request from independent parts, so two parts can come out as one request said
    twice ("what time is it, and tell me the time"), which wants one call, not two: such a draft has no
    single right answer. Data users bring is not held to it (a repeat there may be meant)."""
    seen = [json.dumps(c.to_dict(), sort_keys=True) for c in calls]
    return "repeated_call" if len(set(seen)) < len(seen) else None
