"""Speech data throughput: audio-seconds produced per wall-second (x real time).

    python benchmarks/bench_speech.py [--utterances 120] [--workers 2]

For each TTS engine (espeak-ng, piper): one process, then `--workers` processes on disjoint halves of
the same utterances (parallel efficiency = multi / (workers x single)). Then the same end to end as
data_gen.speech runs it: synthesis + augmentation + Whisper verification in packed windows, against
the baseline of verifying each clip alone (Whisper's 30-second window padded per clip), measured in
the same run. Utterances: the spoken forms of the default dataset's test split (or the hackathon 30).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import time


def utterances(n: int) -> list[str]:
    from data_gen.speech.spoken import to_spoken

    try:
        from datasets import load_from_disk

        texts = [r["user_text"] for r in load_from_disk("data/default")["test"].select(range(n * 2))]
    except Exception:   # no generated data yet: the public cases, repeated
        from toolcore.suites import load_suite

        texts = [c.user_text for c in load_suite("hackathon30")] * (n // 30 + 1)
    return [to_spoken(t) for t in texts[:n]]


def synth(job: tuple[str, list[str], bool, bool]) -> tuple[float, float]:
    """(audio seconds, busy seconds) for one worker."""
    os.environ["OMP_NUM_THREADS"] = "1"
    from data_gen.speech.augment import AugmentConfig, augment
    from data_gen.speech.tts import get_engine, sample_voice
    from toolcore.audio import USER_RATE, resample

    engine, texts, verify, packed = job
    eng = get_engine(engine)
    asr = None
    if verify:
        from toolcore.asr import WhisperASR

        asr = WhisperASR(threads=1)
    rng = random.Random(0)
    t0 = time.perf_counter()
    clips = []
    for text in texts:
        x, rate = eng.synthesize(text, sample_voice(rng, {engine: 1.0}))
        if verify:
            x, _ = augment(resample(x, rate, USER_RATE), USER_RATE, AugmentConfig(), rng)
            rate = USER_RATE
        clips.append(len(x) / rate)
        if verify:
            clips[-1] = (clips[-1], x)
    if verify:
        from data_gen.speech.asr_check import check_clips

        if packed:
            check_clips(asr, [c[1] for c in clips], texts)
        else:
            for c in clips:
                asr.transcribe(c[1])
        clips = [c[0] for c in clips]
    return sum(clips), time.perf_counter() - t0


def measure(engine: str, texts: list[str], workers: int, verify: bool = False, packed: bool = True) -> float:
    """x real time: audio seconds / wall seconds (worker start-up and model loading excluded)."""
    if workers == 1:
        audio, busy = synth((engine, texts, verify, packed))
        return audio / busy
    parts = [texts[i::workers] for i in range(workers)]
    with mp.get_context("spawn").Pool(workers) as pool:
        pool.map(synth, [(engine, p[:2], verify, packed) for p in parts])        # warm: imports, model load
        t0 = time.perf_counter()
        results = pool.map(synth, [(engine, p, verify, packed) for p in parts])
        wall = time.perf_counter() - t0
    return sum(a for a, _ in results) / wall


def main() -> None:
    from rich.console import Console
    from rich.table import Table

    ap = argparse.ArgumentParser()
    ap.add_argument("--utterances", type=int, default=120)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    texts = utterances(args.utterances)
    synth(("espeak", texts[:2], False, True))   # warm the single-process path too
    t = Table(title=f"speech data throughput, x real time ({len(texts)} utterances, {args.workers} workers)")
    for col in ("stage", "1 process", f"{args.workers} processes", "parallel efficiency"):
        t.add_column(col, justify="right")
    rows = [("espeak-ng synthesis", "espeak", False, True, texts),
            ("piper synthesis", "piper", False, True, texts[: max(len(texts) // 4, args.workers * 2)]),
            ("espeak + augment + ASR check, one clip per Whisper window (baseline)", "espeak", True, False, texts[: len(texts) // 2]),
            ("espeak + augment + ASR check, packed windows (data_gen.speech)", "espeak", True, True, texts)]
    for label, engine, verify, packed, subset in rows:
        one = measure(engine, subset, 1, verify, packed)
        many = measure(engine, subset, args.workers, verify, packed)
        t.add_row(label, f"{one:.1f}x", f"{many:.1f}x", f"{many / (args.workers * one):.0%}")
    Console().print(t)


if __name__ == "__main__":
    main()
