"""Audio augmentation with numpy/scipy only: noise at a target SNR, synthetic reverb, speed, and a
band-limiting resample round trip. Every draw comes from the caller's seeded RNG, so a clip's
augmentation is a pure function of (seed, example id)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from toolcore.audio import resample


@dataclass
class AugmentConfig:
    # chance of each augmentation per clip (0 turns it off)
    noise_p: float = 0.35
    # target signal-to-noise ratio range in dB (lower = noisier)
    snr_db: tuple[float, float] = (10.0, 30.0)
    reverb_p: float = 0.2
    # reverberation time (seconds for a 60 dB decay) of the synthetic room
    rt60: tuple[float, float] = (0.15, 0.6)
    speed_p: float = 0.2
    speed: tuple[float, float] = (0.9, 1.1)
    # resample down to a narrow band and back (phone-line audio)
    resample_p: float = 0.15
    resample_rates: list[int] = field(default_factory=lambda: [8000, 11025])

    def __post_init__(self) -> None:
        from toolcore.errors import ToolkitError

        for name in ("noise_p", "reverb_p", "speed_p", "resample_p"):
            if not 0 <= getattr(self, name) <= 1:
                raise ToolkitError(f"{name} must be a probability in [0, 1]", file="configs/speech.yaml",
                                   field=f"augment.{name}")
        for name in ("snr_db", "rt60", "speed"):
            lo, hi = getattr(self, name)
            if lo > hi:
                raise ToolkitError(f"{name} range is reversed ({lo} > {hi})", file="configs/speech.yaml",
                                   field=f"augment.{name}", fix="write [low, high]")


def colored_noise(n: int, rng: np.random.Generator, color: str) -> np.ndarray:
    """White, pink (1/f) or brown (1/f^2) noise, shaped in the frequency domain."""
    white = rng.standard_normal(n)
    if color == "white":
        return white
    spec = np.fft.rfft(white)
    f = np.arange(len(spec), dtype=np.float64)
    f[0] = 1.0
    spec /= f ** (0.5 if color == "pink" else 1.0)
    return np.fft.irfft(spec, n)


def add_noise(x: np.ndarray, snr_db: float, rng: np.random.Generator, color: str = "pink") -> np.ndarray:
    noise = colored_noise(len(x), rng, color)
    p_signal = float(np.mean(x.astype(np.float64) ** 2)) or 1e-12
    p_noise = float(np.mean(noise ** 2)) or 1e-12
    noise *= np.sqrt(p_signal / (p_noise * 10 ** (snr_db / 10)))
    return (x + noise).astype(np.float32)


def reverb(x: np.ndarray, rate: int, rt60: float, rng: np.random.Generator, wet: float = 0.6) -> np.ndarray:
    """Convolve with a synthetic room: exponentially decaying noise (amplitude -60 dB at rt60)."""
    from scipy.signal import fftconvolve

    n = max(int(rt60 * rate), 1)
    t = np.arange(n) / rate
    rir = rng.standard_normal(n) * np.exp(-6.9 * t / rt60)
    rir[0] = 1.0
    y = fftconvolve(x, rir)[: len(x)]
    y *= np.max(np.abs(x)) / (np.max(np.abs(y)) or 1.0)
    return ((1 - wet) * x + wet * y).astype(np.float32)


def change_speed(x: np.ndarray, factor: float) -> np.ndarray:
    """Play `factor` times faster (pitch moves with it, like a tape)."""
    n = max(int(round(len(x) / factor)), 1)
    return np.interp(np.linspace(0, len(x) - 1, n), np.arange(len(x)), x).astype(np.float32)


def augment(x: np.ndarray, rate: int, cfg: AugmentConfig, rng: random.Random) -> tuple[np.ndarray, dict]:
    """Apply a seeded random subset; returns the clip and what was done (stored with the example)."""
    nrng = np.random.default_rng(rng.getrandbits(32))
    done: dict = {}
    if rng.random() < cfg.speed_p:
        done["speed"] = round(rng.uniform(*cfg.speed), 3)
        x = change_speed(x, done["speed"])
    if rng.random() < cfg.reverb_p:
        done["rt60"] = round(rng.uniform(*cfg.rt60), 3)
        x = reverb(x, rate, done["rt60"], nrng)
    if rng.random() < cfg.resample_p:
        done["band_hz"] = rng.choice(cfg.resample_rates)
        x = resample(resample(x, rate, done["band_hz"]), done["band_hz"], rate)[: len(x)]
    if rng.random() < cfg.noise_p:
        done["snr_db"] = round(rng.uniform(*cfg.snr_db), 1)
        done["noise"] = rng.choice(["white", "pink", "brown"])
        x = add_noise(x, done["snr_db"], nrng, done["noise"])
    peak = float(np.max(np.abs(x))) if len(x) else 0.0
    if peak > 0.99:   # keep headroom instead of clipping
        x = x * (0.99 / peak)
    return x.astype(np.float32), done
