"""LFM2-Audio loading (speech in, tool calls and spoken answers out) on the official `liquid-audio` package.

liquid_audio brings the model (`LFM2AudioModel`: LFM2 backbone + conformer audio encoder +
depthformer audio head), the processor (text tokenizer, mel features, Mimi codec), the chat mapper
that turns a chat into one packed training sample, and a collator. The toolkit's parts:

  runtime/lfm2_audio/__init__.py   loaders: checkpoint folder or hub id, LoRA adapter, audio decoder
  runtime/lfm2_audio/chat.py       toolcore Conversations -> liquid_audio ChatMessages, the mapper
  runtime/models/lfm2_audio.py     the model behind `model=lfm2_audio`: the live tool loop
  train/lfm2_audio/                LoRA training (data packing, run, a tiny model for tests)

Training, evaluation and serving load a checkpoint folder, an adapter and the audio decoder through
these same functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from toolcore.errors import ToolkitError


def resolve_dtype(dtype: str, device: str) -> Any:
    """The torch dtype for a family/model dtype name (`auto`: bfloat16 on GPUs, float32 on CPUs)."""
    import torch

    from toolcore.hub import resolve_dtype_name

    return getattr(torch, resolve_dtype_name(dtype, device))


def model_source(path: str | Path, field: str = "family.path") -> str | Path:
    """A local folder as a Path (liquid_audio reads it as is) or a hub id as a str (it downloads).
    A path that looks local but does not exist is an error here, not a confusing hub lookup."""
    p = Path(path)
    if p.exists():
        if not (p / "config.json").exists():
            raise ToolkitError("not an LFM2-Audio checkpoint folder (no config.json)", file=str(p), field=field,
                               fix="point it at a folder with config.json + model.safetensors (or a hub id)")
        return p
    s = str(path)
    if s.startswith((".", "/", "~")) or s.count("/") != 1:
        raise ToolkitError("model folder does not exist", file=s, field=field,
                           fix="give an existing folder or a hub id such as LiquidAI/LFM2-Audio-1.5B")
    return s


def _hub_error(e: Exception, path: Any, field: str) -> ToolkitError:
    return ToolkitError(f"cannot load LFM2-Audio: {str(e).splitlines()[0] if str(e) else type(e).__name__}",
                        file=str(path), field=field,
                        fix="hub ids need network; download it once (huggingface-cli download) or give a local folder")


def load_processor(path: str | Path, device: str = "cpu", field: str = "family.path"):
    from liquid_audio import LFM2AudioProcessor

    src = model_source(path, field)
    try:
        proc = LFM2AudioProcessor.from_pretrained(src, device=device)
    except (OSError, ValueError) as e:
        raise _hub_error(e, path, field) from e
    return proc.eval()


def load_model(path: str | Path, *, device: str = "cpu", dtype: Any = None, adapter: str | Path | None = None,
               merge: bool = True, field: str = "family.path"):
    """The LFM2AudioModel (liquid_audio's own from_pretrained, which defaults to device="cuda": we always
    pass the device), optionally with a LoRA adapter, merged for generation speed."""
    import torch
    from liquid_audio import LFM2AudioModel

    src = model_source(path, field)
    try:
        model = LFM2AudioModel.from_pretrained(src, device=device, dtype=dtype or torch.float32)
    except (OSError, ValueError) as e:
        raise _hub_error(e, path, field) from e
    if adapter:
        folder = Path(adapter)
        if not (folder / "adapter_config.json").exists():
            raise ToolkitError("not a LoRA adapter folder (no adapter_config.json)", file=str(folder),
                               field="model.adapter", fix="point it at a training run's adapter/ folder")
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(folder))
        if merge:
            model = model.merge_and_unload()
    return model.eval()


def audio_decoder(proc) -> Callable[[Any], Any] | None:
    """codes (1, 8, T) in [0, 2047] -> waveform (1, samples) at 24 kHz, or None when the checkpoint has
    no decoder. LFM2.5-Audio ships an LFM-based detokenizer (`audio_detokenizer/`), LFM2-Audio the
    Mimi codec. liquid_audio's detokenizer property calls `.cuda()`: on other devices it is built here
    the same way but on the processor's device."""
    if proc.detokenizer_path is not None:
        if proc._audio_detokenizer is None and proc.device.type != "cuda":
            proc._audio_detokenizer = _detokenizer_on(proc.detokenizer_path, proc.device)
        return proc.decode
    if proc.mimi_weights_path is not None:
        return lambda codes: proc.mimi.decode(codes)[0]
    return None


def _detokenizer_on(folder: str, device: Any):
    """liquid_audio.LFM2AudioProcessor.audio_detokenizer without the hard-coded `.cuda()`."""
    from safetensors.torch import load_file
    from transformers import Lfm2Config

    from liquid_audio.detokenizer import LFM2AudioDetokenizer

    config = Lfm2Config.from_pretrained(Path(folder) / "config.json")
    # llama.cpp-style layer names, as liquid_audio renames them for transformers' Lfm2Model
    config.layer_types = ["full_attention" if t == "sliding_attention" else t for t in config.layer_types]
    detok = LFM2AudioDetokenizer(config)
    detok.load_state_dict(load_file(str(Path(folder) / "model.safetensors")))
    return detok.to(device).eval()
