"""Any Hugging Face causal LM (hub id or local folder), optionally with a LoRA adapter on top,
rendered and parsed with its family's format and decoded by the live tool-loop engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from toolcore.errors import ToolkitError
from toolcore.formats import get_format
from toolcore.hub import load_causal_lm, load_tokenizer, resolve_device, resolve_dtype_name
from toolcore.suites import Case

from ..engine import GenerationConfig, ToolLoopEngine
from .base import Prediction
from .source import resolve_source


def load_model_and_tokenizer(path: str, *, adapter: str | None = None, merge_adapter: bool = True,
                             dtype: str = "float32", trust_remote_code: bool = False,
                             device: str = "cpu") -> tuple[Any, Any]:
    """Base model + tokenizer; with an adapter, the adapter folder's tokenizer (it may hold added tool
    tokens), the embedding resized to it, and the LoRA weights merged for full-speed generation."""
    device = resolve_device(device)       # a missing GPU fails before minutes of loading
    if adapter:
        folder = Path(adapter)
        if not (folder / "adapter_config.json").exists():
            whole = (folder / "config.json").exists()    # a full fine-tune's model/ or a merged model
            raise ToolkitError("not a LoRA adapter folder (no adapter_config.json)" + (", a whole model" if whole else ""),
                               file=str(folder), field="model.adapter",
                               fix=f"load it as the model: model.path={folder} without model.adapter" if whole
                               else "point model.adapter at a training run's adapter/ folder")
        tok_src = str(folder) if (folder / "tokenizer_config.json").exists() else path
    else:
        tok_src = path
    tok = load_tokenizer(tok_src, trust_remote_code=trust_remote_code)
    model = load_causal_lm(path, dtype=dtype, trust_remote_code=trust_remote_code, device=device)
    if len(tok) != model.get_input_embeddings().weight.shape[0]:
        model.resize_token_embeddings(len(tok), mean_resizing=False)   # the adapter carries these rows
    if adapter:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter)
        if merge_adapter:
            model = model.merge_and_unload()
        model.eval()
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return model, tok


class HFModel:
    """`family` is the configs/family/<name>.yaml node (the same file training reads); `path`, `format`
    and `dtype` override it, and an adapter's own training record beats the family (runtime/models/source.py)."""

    def __init__(self, path: str | None = None, format: str | None = None, name: str | None = None,
                 adapter: str | None = None, merge_adapter: bool = True, dtype: str | None = None,
                 trust_remote_code: bool = False, generation: dict | None = None, threads: int | None = None,
                 device: str = "auto", family: Mapping[str, Any] | None = None):
        import torch

        if threads:
            torch.set_num_threads(threads)
        src = resolve_source(family=family, path=path, format=format, dtype=dtype, adapter=adapter)
        self.source = src
        self.fmt = get_format(src.format)
        self.name = name or Path(src.path).name + ("+adapter" if adapter else "")
        device = resolve_device(device)
        self.model, self.tokenizer = load_model_and_tokenizer(src.path, adapter=adapter, merge_adapter=merge_adapter,
                                                              dtype=resolve_dtype_name(src.dtype, device),
                                                              trust_remote_code=trust_remote_code, device=device)
        self.engine = ToolLoopEngine(self.model, self.tokenizer, self.fmt, GenerationConfig(**(generation or {})))

    def predict(self, cases: Sequence[Case]) -> list[Prediction]:
        return [prediction(o) for o in self.engine.run([c.conversation for c in cases])]

    @property
    def timing(self) -> dict[str, float]:
        return self.engine.timing.as_dict()


def prediction(o: Any) -> Prediction:
    """An engine's CaseOutput as the evaluator's Prediction (the transformers and llama.cpp engines alike)."""
    return Prediction(o.calls, raw_text=o.text, parse_failures=o.parse_failures, latency_ms=o.latency_ms,
                      details={"first_call_ms": o.first_call_ms, "prompt_tokens": o.prompt_tokens,
                               "new_tokens": o.new_tokens, "stop_reason": o.stop_reason,
                               "constrained_tokens": o.constrained_tokens, "assists": o.assists,
                               "tool_events": [{"name": e.call.name, "result": e.result, "simulated": e.simulated,
                                                "error": e.error, "ms": round(e.ms, 3)} for e in o.tool_events]})
