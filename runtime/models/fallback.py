"""A remote OpenAI-compatible endpoint as the router's last resort (the hackathon's cloud fallback).

The case's conversation goes out as OpenAI chat messages with its offered tools; the reply's
`tool_calls` come back as ToolCalls (arguments parsed as JSON, never evaluated). Any endpoint that
speaks `/v1/chat/completions` works: a hosted model, vLLM, or this toolkit's own `python -m serve`.
The API key is read from an environment variable, never from a config file. A failed request does
not fail the evaluation: the prediction keeps the on-device answer and records the error.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from toolcore.conversation import Conversation
from toolcore.errors import ToolkitError
from toolcore.schema import ToolCall
from toolcore.suites import Case

from .base import Prediction


def openai_messages(conv: Conversation) -> list[dict[str, Any]]:
    """A conversation as OpenAI chat messages (text only: media parts are not sent)."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for i, m in enumerate(conv.messages):
        if m.role == "assistant" and m.tool_calls:
            ids = [f"call_{i}_{k}" for k in range(len(m.tool_calls))]
            pending += ids
            out.append({"role": "assistant", "content": m.content or None, "tool_calls": [
                {"id": cid, "type": "function",
                 "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
                for cid, c in zip(ids, m.tool_calls)]})
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": pending.pop(0) if pending else "", "content": m.content})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


class OpenAIFallback:
    def __init__(self, url: str, model: str, api_key_env: str = "OPENAI_API_KEY", timeout_s: float = 30.0,
                 max_retries: int = 1):
        if not url or not model:
            raise ToolkitError("a fallback needs both an endpoint and a model name", field="model.fallback",
                               fix="set model.fallback.url=http://host:port/v1 and model.fallback.model=<name>")
        from openai import OpenAI

        # endpoints that need no key (a local server) still get a placeholder: the client insists on one
        self.client = OpenAI(base_url=url, api_key=os.environ.get(api_key_env) or "unused",
                             timeout=timeout_s, max_retries=max_retries)
        self.url, self.model = url, model

    def predict(self, case: Case) -> Prediction:
        t0 = time.perf_counter()
        tools = [t.to_openai() for t in case.tools]
        try:
            reply = self.client.chat.completions.create(
                model=self.model, messages=openai_messages(case.conversation.up_to_last_user()),
                **({"tools": tools} if tools else {}), temperature=0)
        except Exception as e:   # the network, the endpoint, its limits: none of it may stop an evaluation
            return Prediction([], on_device=False, latency_ms=(time.perf_counter() - t0) * 1000,
                              details={"fallback_error": f"{type(e).__name__}: {str(e)[:200]}"})
        msg = reply.choices[0].message
        calls, failures = [], []
        for tc in msg.tool_calls or []:
            try:
                calls.append(ToolCall.from_dict({"name": tc.function.name, "arguments": tc.function.arguments}))
            except ToolkitError as e:
                failures.append(str(e))
        return Prediction(calls, raw_text=msg.content or json.dumps([c.to_dict() for c in calls]),
                          parse_failures=failures, on_device=False,
                          latency_ms=(time.perf_counter() - t0) * 1000, details={"fallback_model": self.model})
