"""The FastAPI app: `/v1/chat/completions` (plain and streamed), `/v1/models`, `/health`.

Each request is validated and mapped (protocol.py), checked against the context length, queued for the
next engine batch (batching.py), and answered from its own events: text pieces become content (markers
held back: a call's markup never reaches `content`), the calls of the final turn become `tool_calls`,
server-side calls and their results go under `message.executed_tool_calls`.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, AsyncIterator

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse

from toolcore.errors import ToolkitError
from toolcore.tokenize import encode_prompt

from .batching import Batcher, Job
from .config import ServeConfig
from .errors import APIError, bad_request, validation_error
from .guard import Guard
from .protocol import ChatRequest, Reply, Request, TurnText, chunk, completion, new_id, to_request, wire_call


def load_server_tools(cfg: ServeConfig) -> list:
    from toolcore.registry import load_registry

    if not cfg.server_tools:
        return []
    registry = load_registry(cfg.tool_paths)
    known = {t.name: t for t in registry}
    missing = [n for n in cfg.server_tools if n not in known]
    if missing:
        raise ToolkitError(f"unknown tool {missing[0]!r}", file="configs/serve.yaml", field="server_tools",
                           fix=f"use registered tools: {', '.join(sorted(known))}")
    return [known[n] for n in cfg.server_tools]


def context_length(model: Any, cfg: ServeConfig) -> int | None:
    engine = getattr(model, "engine", None)
    if cfg.context_length or engine is None:
        return cfg.context_length
    limit = getattr(engine, "context_length", None)     # the llama.cpp engine's context size
    return limit if limit is not None else getattr(engine.model.config, "max_position_embeddings", None)


def create_app(model: Any, cfg: ServeConfig) -> FastAPI:
    served = cfg.served_name or model.name
    server_tools = load_server_tools(cfg)
    engine = getattr(model, "engine", None)
    ctx = context_length(model, cfg)
    batcher = Batcher(model, window_ms=cfg.batch_window_ms, max_batch=cfg.max_batch)
    stops = [engine.tok.eos_token] if engine is not None and engine.tok.eos_token else []
    app = FastAPI(title="toolcall-toolkit", description=f"OpenAI-compatible server for {served}")
    app.state.batcher = batcher

    @app.exception_handler(APIError)
    async def _api_error(_, e: APIError):
        return JSONResponse(e.body(), status_code=e.status, headers=e.headers)

    app.add_middleware(Guard, api_key=cfg.api_key, max_body=int(cfg.max_body_mb * 2 ** 20))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_, e: RequestValidationError):
        err = validation_error(list(e.errors()))
        return JSONResponse(err.body(), status_code=err.status)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "model": served, "batches": len(batcher.batches),
                "largest_batch": max(batcher.batches, default=0)}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": served, "object": "model", "created": 0, "owned_by": "toolcall-toolkit"}]}

    @app.post("/v1/chat/completions")
    async def chat(req: ChatRequest):
        if req.model != served:
            raise APIError(404, f"model {req.model!r} does not exist (this server serves {served!r})", param="model",
                           code="model_not_found")
        request = to_request(req, server_tools)
        max_tokens = request.max_tokens or cfg.default_max_tokens
        if engine is not None and request.tool_choice not in ("auto", "none") and (
                engine.constraint is None or engine.constraint.start_id is None):
            raise bad_request(f"tool_choice {request.tool_choice!r} cannot be enforced: this model's call marker "
                              f"{getattr(engine.fmt, 'call_start', '')!r} is not one token (serve a tuned adapter or a "
                              "merged model, which add it) or use tool_choice auto", param="tool_choice",
                              code="unsupported_value")
        if engine is not None:
            n = len(encode_prompt(engine.tok, engine.fmt, request.conv))
            if ctx and n >= ctx:
                raise bad_request(f"the prompt is {n} tokens and the model's context is {ctx}: shorten the messages or "
                                  "the tools", param="messages", code="context_length_exceeded")
            if ctx:
                max_tokens = min(max_tokens, ctx - n)
        if batcher.waiting() >= cfg.max_waiting:
            wait = max(1, round(batcher.last_batch_s))
            raise APIError(503, f"the server is busy: {batcher.waiting()} requests are waiting for a batch; retry in "
                                f"{wait} s", kind="server_error", code="server_busy", headers={"Retry-After": str(wait)})
        job = Job(request, max_tokens, asyncio.Queue(), asyncio.get_running_loop())
        batcher.submit(job)
        if request.stream:
            return StreamingResponse(_sse(job), media_type="text/event-stream")
        reply = None
        async for kind, item in _answer(job):
            if kind == "reply":
                reply = item
        return completion(reply, served)

    async def _answer(job: Job) -> AsyncIterator[tuple[str, Any]]:
        """("delta", text) while the answer is generated, then ("reply", Reply)."""
        request = job.request
        turn = TurnText(engine.fmt, stops) if engine is not None else None
        executed: list[dict[str, Any]] = []
        while True:
            kind, item = await job.events.get()
            if kind == "error":
                raise APIError(500, f"the model failed: {item}", kind="server_error", code="model_error")
            if kind == "prediction":
                yield "reply", _from_prediction(item, request)
                return
            ev = item
            if ev.kind == "text":
                delta = turn.add(ev.text)
                if delta:
                    yield "delta", delta
            elif ev.kind == "rewind":
                turn.rewind(ev.text)
            elif ev.kind == "call":
                executed.append(wire_call(ev.call))
            elif ev.kind == "result":
                executed[-1]["result"] = ev.tool.result
                turn.reset()
            elif ev.kind == "done":
                out = ev.output
                sent = turn.raw[:turn.sent]
                content, calls, _ = turn.final()
                if out.stop_reason == "tool_calls":       # handed back: the calls the engine parsed
                    calls = out.calls[len(executed):]
                if not calls and content.startswith(sent) and len(content) > len(sent):
                    yield "delta", content[len(sent):]     # a malformed call stays text: stream the rest
                if calls and not request.parallel:
                    calls = calls[:1]
                finish = "tool_calls" if calls else ("length" if out.stop_reason == "max_new_tokens" else "stop")
                yield "reply", Reply(content, calls, executed, finish, out.prompt_tokens, out.new_tokens, out.assists)
                return

    async def _sse(job: Job) -> AsyncIterator[str]:
        cid = new_id("chatcmpl-")

        def data(body: dict[str, Any]) -> str:
            return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

        yield data(chunk(cid, served, {"role": "assistant", "content": ""}))
        try:
            async for kind, item in _answer(job):
                if kind == "delta":
                    yield data(chunk(cid, served, {"content": item}))
                else:
                    reply: Reply = item
        except APIError as e:
            yield data(e.body())
            yield "data: [DONE]\n\n"
            return
        for i, call in enumerate(reply.calls):      # each call whole, in one delta (clients concatenate)
            yield data(chunk(cid, served, {"tool_calls": [{"index": i, **wire_call(call)}]}))
        final: dict[str, Any] = {"executed_tool_calls": reply.executed} if reply.executed else {}
        if reply.assists:
            final["tool_call_assists"] = reply.assists
        yield data(chunk(cid, served, final, finish=reply.finish_reason))
        if job.request.include_usage:
            yield data(chunk(cid, served, {}, usage=reply.usage()))
        yield "data: [DONE]\n\n"

    app.state.started = time.time()
    return app


def _from_prediction(pred: Any, request: Request) -> Reply:
    """A rule model's answer (symbolic, router): its calls; after tool results, the results as text (a
    parser has nothing to say about them, and repeating its calls would loop the client)."""
    msgs = request.conv.messages
    if msgs[-1].role == "tool":
        results = [m.content for m in msgs[len(msgs) - next(i for i, m in enumerate(reversed(msgs)) if m.role != "tool"):]]
        return Reply("\n".join(results))
    calls = list(pred.calls)[: None if request.parallel else 1]
    return Reply("", calls, [], "tool_calls" if calls else "stop")
