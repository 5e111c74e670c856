"""The server's config (configs/serve.yaml); fields marked (*) are the ones people change."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolcore.errors import ToolkitError

WHERE = "configs/serve.yaml"


@dataclass
class ServeConfig:
    # (*) which model answers: any eval model config (configs/model/*.yaml: smollm2 + model.adapter=...,
    # hf with model.path=<merged folder>, symbolic, router), built with _target_. No default: a server
    # answers with the model its user names
    model: Any = None
    # (*) where to listen (127.0.0.1: this machine only; 0.0.0.0: every interface)
    host: str = "127.0.0.1"
    port: int = 8000
    # the model id clients send (`model` in a request) and /v1/models lists; null = the model's own name
    served_name: str | None = None
    # concurrent requests that arrive within this many ms of the first one are decoded as one engine batch
    batch_window_ms: float = 10.0
    # the most requests in one batch (the engine's own batch_size still splits larger ones)
    max_batch: int = 32
    # max_tokens when a request gives none
    default_max_tokens: int = 256
    # prompt + completion limit; null = the model's max_position_embeddings (no limit for rule models)
    context_length: int | None = None
    # (*) registered tools the server runs itself (toolcore/tools/*.yaml names, e.g. [calculate, web_search]):
    # offered in every request beside the client's tools; a turn that calls only these is executed here and
    # generation goes on to the final answer, which lists them under message.executed_tool_calls
    server_tools: list[str] = field(default_factory=list)
    # extra tool schema files/folders for server_tools that are not built in
    tool_paths: list[str] = field(default_factory=list)
    # (*) when set, every /v1 request must carry `Authorization: Bearer <api_key>` (else 401), as vLLM's
    # --api-key and llama-server's; read from $TOOLCALL_API_KEY by default (configs/serve.yaml), so the key
    # need not sit in a command line
    api_key: str | None = None
    # request bodies above this many MiB are refused with 413 before they are read whole
    max_body_mb: float = 16.0
    # requests waiting for a batch beyond this many are refused with 503 and Retry-After, not held open
    max_waiting: int = 64
    log_level: str = "info"

    def __post_init__(self) -> None:
        if self.model is None:
            raise ToolkitError("no model to serve", file=WHERE, field="model",
                               fix="name one: python -m serve model=smollm2 model.adapter=runs/demo/adapter "
                                   "(or model=hf model.path=<folder>, model=symbolic for the rule-based parser)")
        if not 0 < self.port < 65536:
            raise ToolkitError(f"port {self.port} is out of range", file=WHERE, field="port", fix="use 1-65535")
        if self.batch_window_ms < 0:
            raise ToolkitError("must be 0 or more", file=WHERE, field="batch_window_ms")
        if self.max_batch <= 0 or self.default_max_tokens <= 0:
            raise ToolkitError("must be positive", file=WHERE,
                               field="max_batch" if self.max_batch <= 0 else "default_max_tokens")
        if not 0 < self.max_body_mb <= 1024:
            raise ToolkitError(f"max_body_mb={self.max_body_mb}", file=WHERE, field="max_body_mb",
                               fix="a size in MiB above 0, at most 1024 (default 16)")
        if self.max_waiting < 1:
            raise ToolkitError("must be 1 or more", file=WHERE, field="max_waiting")
        if self.api_key is not None and not self.api_key.strip():
            raise ToolkitError("an empty api_key would let every request in", file=WHERE, field="api_key",
                               fix="give a key, or null for an open server")
        if self.context_length is not None and self.context_length <= 0:
            raise ToolkitError("must be positive or null", file=WHERE, field="context_length")
