"""Spoken evaluation suites built from a text suite: every case's user turn becomes a WAV.

    hackathon30_spoken         the 30 public cases, spoken by a voice held out of the training data
    hackathon30_spoken_noisy   the same clips with pink noise at 20, 10 and 5 dB SNR (90 cases)

`python -m data_gen.speech.suites [NAME ...]` (and `make data`) synthesises them (deterministic: fixed
voice, fixed noise seed) into the toolkit cache, where `python -m eval suite=NAME` finds them
(toolcore.suites.spoken_suite_path); the folder appears by rename, so a half-built suite is never
picked up.
A suite is a JSONL file whose user content is an audio part `{"type": "audio", "audio": "clips/x.wav",
"meta": {"transcript": ..., "snr_db": ...}}` (paths relative to the file).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from toolcore.audio import USER_RATE, resample, write_wav_atomic
from toolcore.files import write_text_atomic
from toolcore.suites import SPOKEN_SUITES, load_suite, spoken_suite_path

from .augment import add_noise
from .spoken import to_spoken
from .tts import Voice, get_engine

# the evaluation voice: an espeak-ng variant listed in SpeechConfig.heldout_voices, so no training clip uses it
EVAL_VOICE = Voice("espeak", "en-us+quincy", 1.0, 50)


def ensure_spoken_suite(name: str, root: Path | None = None) -> Path:
    """The JSONL path of a built-in spoken suite, building it first when it is not cached."""
    source, snrs = SPOKEN_SUITES[name]
    path = spoken_suite_path(name, root)
    folder = path.parent
    if path.exists():
        return path
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    build_spoken_suite(source, tmp, snrs=snrs)
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.replace(tmp, folder)
    except OSError:   # another process finished first: theirs is identical
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def build_spoken_suite(source: str, out: Path, *, snrs: tuple[float, ...] = (), voice: Voice = EVAL_VOICE,
                       seed: int = 0) -> Path:
    """Speak each case's last user turn; with `snrs`, one noisy copy per SNR instead of the clean clip."""
    engine = get_engine(voice.engine)
    lines = []
    for case in load_suite(source):
        spoken = to_spoken(case.user_text)
        x, rate = engine.synthesize(spoken, voice)
        x = resample(x, rate, USER_RATE)
        for snr in snrs or (None,):
            if snr is None:
                y, cid, rel = x, case.id, f"clips/{case.id}.wav"
            else:
                rng = np.random.default_rng([seed, int(snr * 10), sum(map(ord, case.id))])
                y, cid, rel = add_noise(x, snr, rng, "pink"), f"{case.id}@snr{snr:g}", f"clips/{case.id}.snr{snr:g}.wav"
            write_wav_atomic(out / rel, y, USER_RATE)
            d = dict(case.raw)
            msgs = [dict(m) for m in d["messages"]]
            last = max(i for i, m in enumerate(msgs) if m["role"] == "user")
            msgs[last] = {"role": "user", "content": [{"type": "audio", "audio": rel, "meta": {
                "transcript": case.user_text, "spoken_text": spoken, "voice": voice.key,
                "snr_db": snr}}]}
            lines.append(json.dumps({**d, "id": cid, "messages": msgs}, ensure_ascii=False))
    write_text_atomic(out / "suite.jsonl", "\n".join(lines) + "\n")
    return out / "suite.jsonl"


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m data_gen.speech.suites",
                                 description="synthesise the built-in spoken eval suites into the toolkit cache")
    ap.add_argument("names", nargs="*", metavar="NAME", help=f"default: all ({', '.join(SPOKEN_SUITES)})")
    names = ap.parse_args(argv).names or list(SPOKEN_SUITES)
    for bad in set(names) - set(SPOKEN_SUITES):
        ap.error(f"unknown spoken suite {bad!r}: use {', '.join(SPOKEN_SUITES)}")
    for name in names:
        print(f"{name}: {ensure_spoken_suite(name)}")


if __name__ == "__main__":
    main()
