"""OpenAI-style error bodies: {"error": {"message", "type", "param", "code"}} with a 4xx status.

Every client mistake names the field (`param`, e.g. `messages[2].tool_calls[0].function.arguments`)
and says how to fix it in one line; nothing a client sends can produce a 500.
"""

from __future__ import annotations

from typing import Any

from toolcore.errors import ToolkitError


class APIError(Exception):
    def __init__(self, status: int, message: str, *, param: str | None = None, code: str | None = None,
                 kind: str = "invalid_request_error", headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.kind = status, message, param, code, kind
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}


def bad_request(message: str, param: str | None = None, code: str = "invalid_value") -> APIError:
    return APIError(400, message, param=param, code=code)


def from_toolkit(e: ToolkitError, where: str) -> APIError:
    """A ToolkitError raised while reading part of a request (a tool schema, a message) as a 400 naming it."""
    field = f"{where}.{e.field}" if e.field and not e.field.startswith(where) else (e.field or where)
    message = str(e).split(": ", 1)[-1] if e.field else str(e)
    return bad_request(message, param=field)


def validation_error(errors: list[dict[str, Any]]) -> APIError:
    """Pydantic's first problem as one line: `messages[1].role: Input should be 'system', 'user', ...`."""
    err = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    loc = [p for p in err.get("loc", ()) if p != "body"]
    param = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(loc)) or None
    return bad_request(f"{param + ': ' if param else ''}{err.get('msg', 'invalid value')}", param=param)
