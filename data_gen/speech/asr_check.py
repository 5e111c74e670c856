"""Does each synthesized clip say what its transcript says? Whisper transcribes packed windows of
clips (toolcore.asr); this module gives every recognised word back to its clip and scores each clip's
word error rate.

Whisper tiny's word timestamps drift by a few hundred milliseconds, so splitting a window by time
alone moves words between neighbouring clips. Instead the window's whole hypothesis is aligned
(Levenshtein, jiwer) to the concatenated references: a substituted or deleted reference word charges
its own clip, and only inserted words (which have no reference word) are placed by their timestamp.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from toolcore.asr import GAP_SECONDS, WhisperASR, Window
from toolcore.wer import normalize_for_wer


@dataclass
class ClipCheck:
    asr_text: str
    wer: float


def check_clips(asr: WhisperASR, clips: Sequence[np.ndarray], references: Sequence[str]) -> list[ClipCheck]:
    """16 kHz clips and what each should say -> recognised text and WER per clip."""
    out: list[ClipCheck | None] = [None] * len(clips)
    for window in asr.transcribe_windows(clips):
        for i, check in attribute(window, {i: references[i] for i, _, _ in window.spans}).items():
            out[i] = check
    return [c if c is not None else ClipCheck("", 1.0) for c in out]


def attribute(window: Window, references: dict[int, str]) -> dict[int, ClipCheck]:
    import jiwer

    ref_words: list[str] = []
    ref_clip: list[int] = []
    for i, _, _ in window.spans:
        words = normalize_for_wer(references[i])
        ref_words += words
        ref_clip += [i] * len(words)
    hyp_words: list[str] = []
    hyp_time: list[float] = []
    for text, start, end in window.words:
        for w in normalize_for_wer(text):
            hyp_words.append(w)
            hyp_time.append((start + end) / 2)

    errors = {i: 0 for i, _, _ in window.spans}
    assigned: dict[int, list[str]] = {i: [] for i, _, _ in window.spans}
    if not hyp_words:
        errors = {i: ref_clip.count(i) for i in errors}
    elif ref_words:
        chunks = jiwer.process_words(" ".join(ref_words), " ".join(hyp_words)).alignments[0]
        for c in chunks:
            if c.type in ("equal", "substitute"):
                for r, h in zip(range(c.ref_start_idx, c.ref_end_idx), range(c.hyp_start_idx, c.hyp_end_idx)):
                    assigned[ref_clip[r]].append(hyp_words[h])
                    errors[ref_clip[r]] += c.type == "substitute"
            elif c.type == "delete":
                for r in range(c.ref_start_idx, c.ref_end_idx):
                    errors[ref_clip[r]] += 1
            else:   # insert: no reference word, so the timestamp decides whose error it is
                for h in range(c.hyp_start_idx, c.hyp_end_idx):
                    i = _nearest_clip(window, hyp_time[h])
                    assigned[i].append(hyp_words[h])
                    errors[i] += 1
    result = {}
    for i in errors:
        n = max(ref_clip.count(i), 1)
        result[i] = ClipCheck(" ".join(assigned[i]), round(errors[i] / n, 4))
    return result


def _nearest_clip(window: Window, t: float) -> int:
    def distance(span: tuple[int, float, float]) -> float:
        _, a, b = span
        return 0.0 if a - GAP_SECONDS / 2 <= t <= b + GAP_SECONDS / 2 else min(abs(t - a), abs(t - b))

    return min(window.spans, key=distance)[0]
