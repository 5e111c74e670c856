"""LFM2-Audio chats: toolcore Conversations -> liquid_audio ChatMessages, and the checkpoint's mapper.

Shared by training (train/lfm2_audio/data.py packs these chats into samples) and by the runtime's
LFM2-Audio model (runtime/models/lfm2_audio.py prompts with them), so a prompt at inference is the
training sample's prefix. The mapping, turn by turn, is documented in train/lfm2_audio/data.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolcore.audio import REPLY_RATE, USER_RATE, read_wav, wav_bytes
from toolcore.conversation import Conversation
from toolcore.errors import ToolkitError
from toolcore.formats import ChatFormat

SPEAK_INSTRUCTION = "Respond with interleaved text and audio."
TEXT_INSTRUCTION = "Respond with text."


def system_text(fmt: ChatFormat, conv: Conversation, speak: bool) -> str:
    first = conv.messages[0] if conv.messages and conv.messages[0].role == "system" else None
    instruction = SPEAK_INSTRUCTION if speak else TEXT_INSTRUCTION
    system = f"{first.content}\n{instruction}" if first and first.content else instruction
    return fmt.system_text(system, conv.tools)


def audio_bytes(ref: str, rate: int) -> bytes:
    """A clip as 16-bit WAV bytes at `rate` (what the mapper decodes). read_wav raises a clear
    ToolkitError for a missing or corrupt file."""
    x, _ = read_wav(ref, rate)
    return wav_bytes(x, rate)


def to_chat(conv: Conversation, fmt: ChatFormat, *, speak: bool | None = None) -> list[Any]:
    """A conversation as liquid_audio ChatMessages (see the module docstring for the mapping)."""
    from liquid_audio.data.types import AudioSegment, ChatMessage, InterleavedSegment, TextSegment

    speak = conv.meta.get("speak", False) if speak is None else speak
    chat = [ChatMessage(role="system", content=[TextSegment(text=system_text(fmt, conv, speak))])]
    for m in conv.messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            result = TextSegment(text=fmt.render_result(m))
            chat.append(ChatMessage(role="tool", content=[result]))  # type: ignore[arg-type]
        elif m.role == "assistant":
            audio = [p for p in m.parts if p.type == "audio"]
            if m.tool_calls or not audio:
                chat.append(ChatMessage(role="assistant", content=[TextSegment(text=fmt.assistant_body(m))]))
            else:
                chat.append(ChatMessage(role="assistant", content=[
                    InterleavedSegment(text=m.content, audio=audio_bytes(audio[0].ref, REPLY_RATE))]))
        else:
            segs: list[Any] = []
            for p in m.parts:
                if p.type == "text" and p.text:
                    segs.append(TextSegment(text=p.text))
                elif p.type == "audio":
                    segs.append(AudioSegment(audio=audio_bytes(p.ref, USER_RATE)))
                elif p.type == "image":
                    raise ToolkitError("LFM2-Audio takes no images", field=f"{m.role} message")
            chat.append(ChatMessage(role=m.role, content=segs))  # type: ignore[arg-type]
    return chat


def checkpoint_config(path: str | Path) -> dict[str, Any]:
    from liquid_audio.utils import get_model_dir

    from . import model_source

    return json.loads((get_model_dir(model_source(path)) / "config.json").read_text())


def make_mapper(proc: Any, config: dict[str, Any]):
    """liquid_audio's chat mapper with the checkpoint's own interleaving (its defaults are 6/12 too)."""
    from liquid_audio.data.mapper import LFM2AudioChatMapper

    return LFM2AudioChatMapper(proc, codebooks=config["codebooks"],
                               interleaved_text_tokens=config["interleaved_n_text"],
                               interleaved_audio_tokens=config["interleaved_n_audio"])
