"""The cascaded speech baseline: offline ASR (Whisper tiny.en) turns each case's spoken user turn
into text, then any text model (the symbolic parser, SmolLM2, a tuned adapter) predicts the calls.
Its predictions carry the ASR transcript and its word error rate against the clip's transcript, so a
report can separate recognition errors from tool-calling errors."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Sequence

from toolcore.audio import USER_RATE, read_wav
from toolcore.conversation import Part
from toolcore.errors import ToolkitError
from toolcore.suites import Case
from toolcore.wer import wer

from .base import Model, Prediction


class CascadeModel:
    def __init__(self, inner: Model, name: str | None = None, asr_model: str | None = None, threads: int = 0,
                 beam_size: int = 5):
        from toolcore.asr import WhisperASR

        self.inner = inner
        self.name = name or f"asr+{inner.name}"
        self.asr = WhisperASR(model=asr_model, threads=threads, beam_size=beam_size)
        self.timing: dict[str, float] = {}

    def predict(self, cases: Sequence[Case]) -> list[Prediction]:
        t0 = time.perf_counter()
        heard, texts = [], []
        for case in cases:
            clip = case.user_audio
            if clip is None:
                raise ToolkitError(f"case {case.id!r} has no audio in its last user turn", field="suite",
                                   fix="use a spoken suite (hackathon30_spoken, a data/speech folder) with a cascade model")
            audio, _ = read_wav(clip.ref, USER_RATE)
            text = self.asr.transcribe(audio)
            heard.append(replace(case, conversation=_with_text(case, text)))
            texts.append(text)
        asr_s = time.perf_counter() - t0
        preds = self.inner.predict(heard)
        out = []
        for case, text, pred in zip(cases, texts, preds):
            details = {**pred.details, "asr_text": text}   # the runner adds the clip and its SNR for every model
            if case.transcript:
                details["asr_wer"] = round(wer(case.transcript, text), 4)
            out.append(replace(pred, details=details, latency_ms=pred.latency_ms + asr_s * 1000 / len(cases)))
        self.timing = {"asr_s": round(asr_s, 2), **(getattr(self.inner, "timing", None) or {})}
        return out


def _with_text(case: Case, text: str):
    """The conversation with the last user turn's content replaced by the recognised text."""
    conv = case.conversation
    msgs = list(conv.messages)
    last = max(i for i, m in enumerate(msgs) if m.role == "user")
    msgs[last] = replace(msgs[last], parts=[Part("text", text=text)])
    return replace(conv, messages=msgs)
