"""What every request passes before the app reads it: the API key, when the server has one (401 without
it, as vLLM's --api-key and llama-server's), and the body size (413 past `max_body_mb`, counted as the
body arrives, so an oversized or endless upload is cut off rather than held in memory). A pure ASGI
middleware: it sees the body's chunks, which FastAPI only hands on whole (and would turn a refusal
raised while reading into its own 400)."""

from __future__ import annotations

import hmac
import json
from typing import Any


class Guard:
    def __init__(self, app: Any, *, api_key: str | None, max_body: int):
        self.app, self.api_key, self.max_body = app, api_key, max_body

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if self.api_key and scope["path"].startswith("/v1"):
            given = headers.get("authorization", "")
            token = given[7:] if given[:7].lower() == "bearer " else ""
            if not hmac.compare_digest(token.encode(), self.api_key.encode()):
                return await _refuse(send, 401, "a valid API key is needed: send `Authorization: Bearer <key>`",
                                     "invalid_api_key", {"WWW-Authenticate": "Bearer"})
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            return await _refuse(send, 413, self._too_large(int(length)), "request_too_large")
        # the body is read here, up to the limit, and handed on whole: the app never holds more than that
        chunks, seen, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break                        # the client went away
            chunks.append(message.get("body", b""))
            seen += len(chunks[-1])
            if seen > self.max_body:
                return await _refuse(send, 413, self._too_large(seen), "request_too_large")
            more = message.get("more_body", False)
        body, replayed = b"".join(chunks), False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()           # after the body: a disconnect, when it comes

        await self.app(scope, replay, send)

    def _too_large(self, size: int) -> str:
        return (f"the request body is {size} bytes or more and this server takes at most {self.max_body} "
                f"(max_body_mb): send fewer or shorter messages")


async def _refuse(send: Any, status: int, message: str, code: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": None,
                                 "code": code}}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})
