"""OpenAI chat-completions wire format <-> toolcore's Conversation / Tool / ToolCall.

Requests: `messages` (system/developer/user/assistant/tool; assistant `tool_calls` with JSON-string
arguments; tool results found by `tool_call_id`), `tools`, `tool_choice` (auto / none / required / a
named function), `parallel_tool_calls`, `stream`, `max_tokens`, `temperature`, `top_p`, `seed`.
Responses: `choices[0].message` with `content` and `tool_calls` (ids, arguments as a JSON string),
`finish_reason` ("stop", "length", "tool_calls") and `usage`; streamed as `chat.completion.chunk`s.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolcore.conversation import Conversation, Message, Part
from toolcore.errors import ToolkitError
from toolcore.formats import ChatFormat
from toolcore.formats.base import partial_marker
from toolcore.schema import Tool, ToolCall

from .errors import bad_request, from_toolkit


# ----- request models ----------------------------------------------------------------------------------
class FunctionCall(BaseModel):
    name: str
    arguments: str | dict[str, Any] = "{}"


class ToolCallIn(BaseModel):
    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")     # unknown OpenAI options (user, metadata...) are ignored
    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool = True
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    seed: int | None = None
    n: int = 1


class OpenConversation(Conversation):
    """A chat continued from wherever its messages end (after tool results, too): the engine renders
    `up_to_last_user()` as the prompt, which for an API request is the whole conversation."""

    def up_to_last_user(self) -> "OpenConversation":
        return self


@dataclass
class Request:
    """A validated request, in toolcore terms."""

    conv: OpenConversation
    tool_choice: str                      # auto | none | required | a tool's name
    parallel: bool
    stream: bool
    include_usage: bool
    max_tokens: int | None
    temperature: float | None
    top_p: float | None
    seed: int | None
    server_tools: set[str] = field(default_factory=set)


def _text(content: str | list[dict[str, Any]] | None, where: str) -> list[Part]:
    if content is None or isinstance(content, str):
        return [Part("text", text=content)] if content else []
    parts = []
    for i, p in enumerate(content):
        if p.get("type") != "text" or not isinstance(p.get("text"), str):
            raise bad_request(f"content part type {p.get('type')!r} is not supported by this text model",
                              param=f"{where}.content[{i}].type")
        parts.append(Part("text", text=p["text"]))
    return parts


def _tool_choice(choice: str | dict[str, Any] | None, tools: list[Tool]) -> str:
    if choice is None:
        return "auto"
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            raise bad_request(f"unknown tool_choice {choice!r} (use auto, none, required or "
                              '{"type": "function", "function": {"name": ...}})', param="tool_choice")
        if choice == "required" and not tools:
            raise bad_request("tool_choice 'required' needs tools", param="tool_choice")
        return choice
    name = (choice.get("function") or {}).get("name") if isinstance(choice.get("function"), dict) else None
    if choice.get("type") != "function" or not isinstance(name, str):
        raise bad_request('tool_choice must be {"type": "function", "function": {"name": ...}}', param="tool_choice")
    if name not in {t.name for t in tools}:
        raise bad_request(f"tool_choice names {name!r}, which is not among the tools", param="tool_choice.function.name")
    return name


def to_request(req: ChatRequest, server_tools: list[Tool]) -> Request:
    """Validate and map a request; every problem is a 400 naming its field."""
    if req.n != 1:
        raise bad_request("only n=1 is supported", param="n")
    tools: list[Tool] = []
    for i, raw in enumerate(req.tools or []):
        if raw.get("type") != "function" or not isinstance(raw.get("function"), dict):
            raise bad_request('a tool must be {"type": "function", "function": {...}}', param=f"tools[{i}]")
        try:
            tools.append(Tool.from_schema(raw, source=""))
        except ToolkitError as e:
            raise from_toolkit(e, f"tools[{i}].function") from None
        if tools[-1].name in {t.name for t in tools[:-1]}:
            raise bad_request(f"tool {tools[-1].name!r} is defined twice", param=f"tools[{i}].function.name")
    # the server's own tools join the client's, unless the client defines one of the same name
    tools += [t for t in server_tools if t.name not in {c.name for c in tools}]
    choice = _tool_choice(req.tool_choice, tools)
    if choice == "none":          # no call can start: the engine masks the call marker when no tools are offered
        tools = []
    messages: list[Message] = []
    call_names: dict[str, str] = {}
    for i, m in enumerate(req.messages):
        where = f"messages[{i}]"
        calls = []
        for j, c in enumerate(m.tool_calls or []):
            try:
                calls.append(ToolCall.from_dict(c.function.model_dump(), where=f"{where}.tool_calls[{j}].function"))
            except ToolkitError as e:
                raise from_toolkit(e, f"{where}.tool_calls[{j}].function") from None
            if c.id:
                call_names[c.id] = c.function.name
        if m.tool_calls and m.role != "assistant":
            raise bad_request("only assistant messages carry tool_calls", param=f"{where}.tool_calls")
        name = m.name
        if m.role == "tool":
            name = name or call_names.get(m.tool_call_id or "")
            if not name:
                raise bad_request("a tool message needs the tool_call_id of an earlier assistant tool call",
                                  param=f"{where}.tool_call_id")
        role = "system" if m.role == "developer" else m.role
        messages.append(Message(role, _text(m.content, where), calls, name))
    if not any(m.role == "user" for m in messages):
        raise bad_request("the conversation needs at least one user message", param="messages")
    if messages[-1].role == "assistant":
        raise bad_request("the last message is the assistant's: end with a user or tool message", param="messages")
    conv = OpenConversation(messages, tools, {"tool_choice": choice if choice != "none" else "auto"})
    include_usage = bool((req.stream_options or {}).get("include_usage"))
    return Request(conv, choice, req.parallel_tool_calls, req.stream, include_usage,
                   req.max_completion_tokens or req.max_tokens, req.temperature, req.top_p, req.seed,
                   {t.name for t in server_tools})


# ----- responses ---------------------------------------------------------------------------------------
def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def wire_call(call: ToolCall, call_id: str | None = None) -> dict[str, Any]:
    return {"id": call_id or new_id("call_"), "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)}}


@dataclass
class Reply:
    """What one request's answer holds, however it was produced (engine events or a rule model)."""

    content: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    executed: list[dict[str, Any]] = field(default_factory=list)   # server-side calls with their results
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # what an opt-in assist (model.generation.next_call_p / divert_repeats) changed in this answer, one
    # record a touched call; absent from the message when empty, so the default answer is plain OpenAI
    assists: list[dict[str, Any]] = field(default_factory=list)

    def message(self, call_ids: list[str] | None = None) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content or (None if self.calls else "")}
        if self.calls:
            ids = call_ids or [new_id("call_") for _ in self.calls]
            msg["tool_calls"] = [wire_call(c, i) for c, i in zip(self.calls, ids)]
        if self.executed:
            msg["executed_tool_calls"] = self.executed
        if self.assists:
            msg["tool_call_assists"] = self.assists
        return msg

    def usage(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens}


def completion(reply: Reply, model: str) -> dict[str, Any]:
    return {"id": new_id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": reply.message(), "finish_reason": reply.finish_reason,
                         "logprobs": None}],
            "usage": reply.usage()}


def chunk(cid: str, model: str, delta: dict[str, Any], finish: str | None = None,
          usage: dict[str, int] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}
    if usage is not None:
        body["choices"], body["usage"] = [], usage
    return body


class TurnText:
    """The assistant text of the turn being generated, and how much of it is safe to stream as content:
    text stops at the first marker (a call's start, the end of the turn); a tail that could be the start
    of a marker is held back until the next piece decides."""

    def __init__(self, fmt: ChatFormat, stops: list[str]):
        self.fmt = fmt
        self.ends = [m for m in [fmt.turn_end, *stops] if m]
        self.markers = [m for m in [getattr(fmt, "call_start", ""), *self.ends] if m]
        self.raw = ""
        self.sent = 0
        self.closed = False

    def reset(self) -> None:          # a server-side tool ran: the next turn starts
        self.raw, self.sent, self.closed = "", 0, False

    def rewind(self, text: str) -> None:
        """The engine took back a withdrawn call, or a repeated one to write again (`text`, the pieces it
        had streamed): drop it. Content stops at a call's start marker, so nothing taken back was sent."""
        if text and self.raw.endswith(text):
            self.raw = self.raw[:-len(text)]
        self.closed = False
        self.sent = min(self.sent, len(self.raw))

    def add(self, piece: str) -> str:
        """The content newly safe to stream after `piece`."""
        self.raw += piece
        if self.closed:
            return ""
        cut = min((i for i in (self.raw.find(m) for m in self.markers) if i >= 0), default=None)
        if cut is not None:
            self.closed = True
            safe = cut
        else:
            safe = len(self.raw) - partial_marker(self.raw, self.markers)
        out = self.raw[self.sent:safe] if safe > self.sent else ""
        self.sent = max(self.sent, safe)
        return out

    def final(self) -> tuple[str, list[ToolCall], list[str]]:
        """(content, calls, parse failures) of the whole turn. A malformed call is left in the text."""
        text = self.raw
        for m in self.ends:                   # the end of the turn and anything after it
            if m in text:
                text = text[:text.index(m)]
        parsed = self.fmt.parse(text)
        if parsed.calls:
            return parsed.content, parsed.calls, parsed.failures
        return text, [], parsed.failures

