"""A GGUF model through llama.cpp (python -m train.export writes one from a training run):

    python -m eval model=llamacpp model.path=runs/demo/gguf/model-q8_0.gguf suite=hackathon30
    python -m serve model=llamacpp model.path=runs/demo/gguf/model-q8_0.gguf

Format and tokenizer come from the export folder (export.json, tokenizer/); a GGUF from elsewhere names
them: model.format=qwen2_5 model.tokenizer=Qwen/Qwen2.5-1.5B-Instruct."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from toolcore.errors import ToolkitError
from toolcore.formats import get_format
from toolcore.hub import load_tokenizer
from toolcore.suites import Case

from .base import Prediction


class LlamaCppModel:
    def __init__(self, path: str, format: str | None = None, tokenizer: str | None = None, name: str | None = None,
                 n_ctx: int = 4096, parallel: int = 4, threads: int | None = None, repack: bool = False,
                 draft_tokens: int = 8, draft_lookup: bool = False, generation: dict | None = None,
                 trust_remote_code: bool = False):
        from ..generation import GenerationConfig
        from ..llamacpp_engine import LlamaCppEngine

        gguf = Path(path)
        if not gguf.is_file():
            raise ToolkitError("no such GGUF file", file=str(gguf), field="model.path",
                               fix="python -m train.export <run> writes <run>/gguf/model-q8_0.gguf")
        record_file = gguf.parent / "export.json"
        record = json.loads(record_file.read_text()) if record_file.exists() else {}
        tok_src = tokenizer or (str(gguf.parent / record["tokenizer"]) if record.get("tokenizer") else None)
        if tok_src is None:
            raise ToolkitError("the model's tokenizer is not known (no export.json beside the GGUF)", field="model.tokenizer",
                               fix="model.tokenizer=<the Hugging Face tokenizer the model was trained with>")
        self.fmt = get_format(format or record.get("format") or "generic")
        self.name = name or gguf.stem
        tok = load_tokenizer(tok_src, trust_remote_code=trust_remote_code)
        self.engine = LlamaCppEngine(str(gguf), tok, self.fmt, GenerationConfig(**(generation or {})),
                                     n_ctx=n_ctx, parallel=parallel, threads=threads, repack=repack,
                                     draft_tokens=draft_tokens, draft_lookup=draft_lookup)

    def predict(self, cases: Sequence[Case]) -> list[Prediction]:
        from .hf import prediction

        return [prediction(o) for o in self.engine.run([c.conversation for c in cases])]

    @property
    def timing(self) -> dict[str, float]:
        return {**self.engine.timing.as_dict(), **self.engine.drafts.as_dict()}
