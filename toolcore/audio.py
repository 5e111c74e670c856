"""Audio files shared by every stage: reading with clear errors, atomic writing, resampling, checksums.

Speech datasets reference clips as files next to the dataset (16-bit PCM WAV, mono) with a sha256 per
clip, so data_gen, train and eval all go through these few functions. No torchaudio: soundfile for I/O
and scipy's polyphase resampler.
"""

from __future__ import annotations

import hashlib
import io
import os
from fractions import Fraction
from pathlib import Path

import numpy as np

from .errors import ToolkitError

# what user speech is stored and recognised at (Whisper and LFM2-Audio's encoder both take 16 kHz)
USER_RATE = 16_000
# LFM2-Audio's Mimi codec speaks at 24 kHz: assistant replies are stored at that rate
REPLY_RATE = 24_000


def read_wav(path: str | Path, rate: int | None = None) -> tuple[np.ndarray, int]:
    """Mono float32 samples in [-1, 1] (resampled to `rate` when given) and the sample rate."""
    import soundfile as sf

    p = Path(path)
    if not p.is_file():
        raise ToolkitError("audio file not found", file=str(p), fix="check the path (relative paths are relative to the dataset or suite folder)")
    try:
        data, sr = sf.read(str(p), dtype="float32", always_2d=True)
    except Exception as e:   # soundfile raises LibsndfileError/RuntimeError for truncated or foreign files
        raise ToolkitError(f"cannot decode audio ({e})", file=str(p),
                           fix="re-create the clip (a WAV/FLAC/OGG file); a half-copied file cannot be read") from e
    if data.size == 0:
        raise ToolkitError("audio file has no samples", file=str(p), fix="re-create the clip")
    mono = data.mean(axis=1)
    if rate and rate != sr:
        mono, sr = resample(mono, sr, rate), rate
    return mono.astype(np.float32), sr


def resample(x: np.ndarray, src: int, dst: int) -> np.ndarray:
    from scipy.signal import resample_poly

    if src == dst:
        return x
    f = Fraction(dst, src).limit_denominator(1000)
    return resample_poly(x, f.numerator, f.denominator).astype(np.float32)


def wav_bytes(x: np.ndarray, rate: int) -> bytes:
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, np.clip(x, -1.0, 1.0), rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def write_wav_atomic(path: str | Path, x: np.ndarray, rate: int) -> str:
    """Write a 16-bit WAV by write-then-rename; returns the file's sha256 (hex)."""
    data = wav_bytes(x, rate)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, p)
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def duration(x: np.ndarray, rate: int) -> float:
    return len(x) / float(rate)
