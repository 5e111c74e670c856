"""Spoken versions of verified text conversations: user clip (varied voice, augmented, ASR-verified)
and the assistant's spoken reply, written as files next to a DatasetDict.

Work is cut into shards of `shard_size` source conversations per split, in a seeded order. A worker
process synthesises every clip of a shard, transcribes them in packed Whisper windows, re-synthesises
clips whose WER is too high with another voice (up to `retries` times), and writes the shard's rows
to `shards/` by write-then-rename. Each clip attempt is a pure function of (seed, split, id, attempt)
and leaves a `.check.json` beside it once verified, so a killed run redoes neither finished shards
nor finished clips. The finished folder is renamed into place last: a folder at `output_dir` with a
manifest is always complete.

Layout of output_dir:
  train/ validation/ test/ dataset_dict.json    the DatasetDict (audio referenced by relative path)
  audio/<split>/<id>.a<k>.user.wav              16 kHz user clips (sha256 in the rows)
  audio/<split>/<id>.reply.wav                  24 kHz assistant replies
  manifest.json, preview.html, shards/
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import random
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
from tqdm.auto import tqdm

from toolcore.audio import REPLY_RATE, USER_RATE, duration, read_wav, resample, sha256_file, write_wav_atomic
from toolcore.errors import ToolkitError
from toolcore.files import write_text_atomic

from ..workdir import finished_or_refuse, partial_folder, publish
from .augment import augment
from .config import SpeechConfig
from .spoken import to_spoken
from .tts import Voice, get_engine, sample_voice


@dataclass
class Shard:
    split: str
    index: int
    rows: list[dict[str, Any]]


# ----- one shard (runs in a worker process) ---------------------------------------------------------

_ASR = None


def _init_worker(asr_model: str | None) -> None:
    global _ASR
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from toolcore.asr import WhisperASR

    _ASR = WhisperASR(model=asr_model, threads=1)


def reply_text_of(messages: list[dict[str, Any]]) -> str:
    """The assistant's final prose (what is spoken back), or "" when the conversation ends otherwise."""
    last = messages[-1] if messages else {}
    if last.get("role") != "assistant" or last.get("tool_calls"):
        return ""
    content = last.get("content")
    return content if isinstance(content, str) else ""


def _attempt_clip(cfg: SpeechConfig, root: Path, split: str, row: dict, attempt: int) -> dict[str, Any]:
    """Synthesise (or reuse) attempt k of a row's user clip; returns its facts (not yet verified)."""
    rel = f"audio/{split}/{row['id']}.a{attempt}.user.wav"
    rng = random.Random(f"{cfg.seed}:{split}:{row['id']}:{attempt}")
    voice = sample_voice(rng, cfg.engines, exclude=[*cfg.heldout_voices, cfg.reply_voice], rate=tuple(cfg.rate), pitch=tuple(cfg.pitch))
    spoken = to_spoken(row["user_text"])
    facts = {"rel": rel, "voice": voice.key, "spoken_text": spoken, "attempt": attempt}
    path = root / rel
    if path.exists():
        meta_path = path.with_suffix(".meta.json")
        facts["augment"] = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        facts["sha256"] = sha256_file(path)
    else:
        x, rate = get_engine(voice.engine).synthesize(spoken, voice)
        x = resample(x, rate, USER_RATE)
        x, facts["augment"] = augment(x, USER_RATE, cfg.augment, rng)
        write_text_atomic(path.with_suffix(".meta.json"), json.dumps(facts["augment"]))
        facts["sha256"] = write_wav_atomic(path, x, USER_RATE)
    # Whisper hears the stored 16-bit clip, fresh or reused: a resumed run then transcribes exactly
    # what an uninterrupted one did (the float samples before quantisation differ slightly)
    x, _ = read_wav(path)
    facts["audio"] = x
    facts["seconds"] = round(duration(x, USER_RATE), 3)
    return facts


def _check_path(root: Path, rel: str) -> Path:
    return (root / rel).with_suffix(".check.json")


def run_shard(cfg: SpeechConfig, root: Path, shard: Shard) -> dict[str, Any]:
    from .asr_check import check_clips

    t0 = time.perf_counter()
    timing = Counter()
    rejected: Counter = Counter()
    pending = list(shard.rows)
    kept: dict[str, dict[str, Any]] = {}
    tries: Counter = Counter()
    for attempt in range(cfg.retries + 1):
        if not pending:
            break
        t = time.perf_counter()
        clips = [_attempt_clip(cfg, root, shard.split, row, attempt) for row in pending]
        timing["synth_s"] += time.perf_counter() - t
        timing["user_audio_s"] += sum(c["seconds"] for c in clips)
        # clips already verified in an earlier (killed) run keep their result; when any is missing the
        # whole batch is transcribed again, so every clip shares its Whisper window with the same
        # neighbours as in an uninterrupted run (the packing changes what Whisper hears at the edges)
        if any(not _check_path(root, c["rel"]).exists() for c in clips):
            t = time.perf_counter()
            checks = check_clips(_ASR, [c["audio"] for c in clips], [c["spoken_text"] for c in clips])
            timing["asr_s"] += time.perf_counter() - t
            for clip, ch in zip(clips, checks):
                if not _check_path(root, clip["rel"]).exists():
                    write_text_atomic(_check_path(root, clip["rel"]), json.dumps({"asr_text": ch.asr_text, "wer": ch.wer}))
        still = []
        for row, clip in zip(pending, clips):
            check = json.loads(_check_path(root, clip["rel"]).read_text())
            tries[row["id"]] += 1
            reason = None
            if clip["seconds"] < cfg.min_seconds:
                reason = "too_short"
            elif clip["seconds"] > cfg.max_seconds:
                reason = "too_long"
            elif check["wer"] > cfg.max_wer:
                reason = "wer_too_high"
            if reason is None:
                kept[row["id"]] = {**clip, **check}
            else:
                rejected[f"attempt_{reason}"] += 1
                (root / clip["rel"]).unlink(missing_ok=True)   # the failed take is not part of the data
                still.append((row, reason))
        pending = [r for r, _ in still]
        if attempt == cfg.retries:
            rejected.update(f"dropped_{reason}" for _, reason in still)

    rows = []
    t = time.perf_counter()
    for row in shard.rows:
        if row["id"] not in kept:
            continue
        clip = kept[row["id"]]
        messages = json.loads(row["messages"])
        reply = reply_text_of(messages)
        reply_rel, reply_sha = "", ""
        if reply:
            reply_rel = f"audio/{shard.split}/{row['id']}.reply.wav"
            path = root / reply_rel
            if path.exists():
                reply_sha = sha256_file(path)
            else:
                voice = Voice(cfg.reply_engine, cfg.reply_voice)
                y, rate = get_engine(cfg.reply_engine).synthesize(reply, voice)
                reply_sha = write_wav_atomic(path, resample(y, rate, REPLY_RATE), REPLY_RATE)
            timing["reply_audio_s"] += sf.info(str(path)).duration   # from the header: no decoding
        aug = clip["augment"]
        rows.append({
            **{k: row[k] for k in ("id", "category", "style", "user_text", "num_calls", "tool_names",
                                   "expected_calls", "messages", "tools")},
            "spoken_text": clip["spoken_text"], "user_audio": clip["rel"],
            "user_audio_sha256": clip["sha256"], "user_seconds": clip["seconds"],
            "reply_text": reply, "reply_audio": reply_rel, "reply_audio_sha256": reply_sha,
            "voice": clip["voice"], "attempts": tries[row["id"]], "asr_text": clip["asr_text"], "wer": clip["wer"],
            "snr_db": float(aug.get("snr_db", math.nan)), "augment": json.dumps(aug, sort_keys=True),
        })
    timing["reply_s"] += time.perf_counter() - t
    timing["worker_s"] = time.perf_counter() - t0
    return {"split": shard.split, "index": shard.index, "rows": rows, "candidates": len(shard.rows),
            "rejected": dict(rejected), "timing": {k: round(v, 3) for k, v in timing.items()}}


def _run_shard_job(args: tuple[SpeechConfig, Path, Shard]) -> dict[str, Any]:
    cfg, root, shard = args
    result = run_shard(cfg, root, shard)
    write_text_atomic(root / "shards" / f"{shard.split}-{shard.index:05d}.json", json.dumps(result))
    return result


# ----- the whole run ------------------------------------------------------------------------------------

def candidate_rows(cfg: SpeechConfig, split: str) -> list[dict[str, Any]]:
    """Source conversations of a split in a seeded order: single-turn requests only (history turns are
    not spoken), spoken-style phrasings first (no typos to pronounce), then the rest."""
    from toolcore.suites import load_split

    rows = [r for r in load_split(cfg.source, split, field="source") if not r["history"]]
    rng = random.Random(f"{cfg.seed}:{split}")
    spoken = [r for r in rows if r["style"] == "spoken"]
    written = [r for r in rows if r["style"] != "spoken"]
    rng.shuffle(spoken)
    rng.shuffle(written)
    return spoken + written


def fingerprint(cfg: SpeechConfig) -> str:
    import hashlib

    keep = {k: v for k, v in cfg.as_dict().items() if k not in ("overwrite", "output_dir", "workers", "preview_examples")}
    return hashlib.sha256(json.dumps(keep, sort_keys=True, default=list).encode()).hexdigest()[:16]


def generate(cfg: SpeechConfig, *, progress: bool = True) -> dict[str, Any]:
    out = Path(cfg.output_dir)
    fp = fingerprint(cfg)
    reused = finished_or_refuse(out, fp, cfg.overwrite, "spoken dataset")
    if reused:
        return reused
    work = partial_folder(out, fp)

    t0 = time.perf_counter()
    workers = cfg.workers or os.cpu_count() or 1
    results: dict[tuple[str, int], dict[str, Any]] = {}
    for p in (work / "shards").glob("*.json"):
        r = json.loads(p.read_text())
        results[(r["split"], r["index"])] = r
    candidates = {s: candidate_rows(cfg, s) for s, n in cfg.conversations.items() if n}
    total = sum(cfg.conversations[s] for s in candidates)
    bar = tqdm(total=total, desc="verified spoken conversations", unit="conv", disable=not progress)
    bar.update(sum(min(len(r["rows"]), cfg.conversations[s]) for (s, _), r in results.items() if s in candidates))

    def kept(split: str) -> int:
        return sum(len(r["rows"]) for (s, _), r in results.items() if s == split)

    ctx = mp.get_context("spawn")
    with ctx.Pool(workers, initializer=_init_worker, initargs=(cfg.asr_model,)) as pool:
        while True:
            jobs = []
            for split, rows in candidates.items():
                need = cfg.conversations[split] - kept(split)
                done = {i for s, i in results if s == split}
                next_index = max(done, default=-1) + 1
                # A killed run may have finished shard 1 and not shard 0 (the pool hands results back
                # in any order). The dataset is the first kept rows in candidate order, so every gap
                # below the last finished shard is redone, whatever the count kept so far says.
                gaps = [i for i in range(next_index) if i not in done]
                # shards to add this round: what is missing, assuming the keep rate seen so far
                seen = sum(r["candidates"] for (s, _), r in results.items() if s == split)
                rate = kept(split) / seen if seen else 0.9
                n_shards = math.ceil(need / max(rate, 0.2) / cfg.shard_size) - len(gaps) if need > 0 else 0
                for i in [*gaps, *range(next_index, next_index + max(n_shards, 0))]:
                    chunk = rows[i * cfg.shard_size:(i + 1) * cfg.shard_size]
                    if chunk:
                        jobs.append((cfg, work, Shard(split, i, chunk)))
            if not jobs:
                break
            for r in pool.imap_unordered(_run_shard_job, jobs):
                results[(r["split"], r["index"])] = r
                bar.update(len(r["rows"]))
            short = [s for s in candidates if kept(s) < cfg.conversations[s]]
            exhausted = [s for s in short if (max(i for t, i in results if t == s) + 1) * cfg.shard_size >= len(candidates[s])]
            if exhausted:
                raise ToolkitError(f"the {exhausted[0]} split ran out of source conversations "
                                   f"({kept(exhausted[0])} kept of {cfg.conversations[exhausted[0]]})",
                                   file=cfg.source, field="conversations",
                                   fix="ask for fewer spoken conversations, raise max_wer, or generate more text data")
    bar.close()
    wall = time.perf_counter() - t0
    return finalize(cfg, work, out, results, wall, fp)


def finalize(cfg: SpeechConfig, work: Path, out: Path, results: dict, wall: float, fp: str) -> dict[str, Any]:
    from datasets import Dataset, DatasetDict

    from .preview import write_preview

    splits: dict[str, list[dict]] = {}
    for split in cfg.conversations:
        ordered = [results[k] for k in sorted(k for k in results if k[0] == split)]
        rows = [row for r in ordered for row in r["rows"]][: cfg.conversations[split]]
        keep = {row["user_audio"] for row in rows} | {row["reply_audio"] for row in rows if row["reply_audio"]}
        # clips of conversations past the requested count are not part of the dataset
        for r in ordered:
            for row in r["rows"]:
                for rel in (row["user_audio"], row["reply_audio"]):
                    if rel and rel not in keep:
                        (work / rel).unlink(missing_ok=True)
        if rows:
            splits[split] = rows
    for sidecar in (work / "audio").rglob("*.json"):   # resume bookkeeping; the rows hold these facts now
        sidecar.unlink()
    tmp = work / "_dataset"
    shutil.rmtree(tmp, ignore_errors=True)
    DatasetDict({s: Dataset.from_list(rows) for s, rows in splits.items()}).save_to_disk(str(tmp))
    for p in tmp.iterdir():
        target = work / p.name
        if target.exists():
            shutil.rmtree(target) if target.is_dir() else target.unlink()
        os.replace(p, target)
    tmp.rmdir()
    manifest = build_manifest(cfg, results, splits, wall, fp)
    write_text_atomic(work / "manifest.json", json.dumps(manifest, indent=2))
    write_preview(work, cfg.preview_examples, seed=cfg.seed)
    publish(work, out)
    return manifest


def _quantiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    a = np.asarray(values)
    return {"mean": round(float(a.mean()), 4), "p50": round(float(np.quantile(a, 0.5)), 4),
            "p90": round(float(np.quantile(a, 0.9)), 4), "p99": round(float(np.quantile(a, 0.99)), 4),
            "max": round(float(a.max()), 4)}


def build_manifest(cfg: SpeechConfig, results: dict, splits: dict[str, list[dict]], wall: float, fp: str) -> dict:
    from ..generate import code_version

    rejected: Counter = Counter()
    timing: Counter = Counter()
    candidates = 0
    for r in results.values():
        rejected.update(r["rejected"])
        timing.update(r["timing"])
        candidates += r["candidates"]
    rows = [row for rs in splits.values() for row in rs]
    wers = [row["wer"] for row in rows]
    edges = [0, 0.0001, 0.05, 0.1, 0.15, 0.2, 0.25, cfg.max_wer + 1e-9]
    hist = {f"{lo:.2f}-{hi:.2f}" if lo else "0": int(sum(lo <= w < hi for w in wers)) for lo, hi in zip(edges, edges[1:])}
    engines = Counter(row["voice"].split(":")[0] for row in rows)
    user_s = sum(row["user_seconds"] for row in rows)
    src_manifest = Path(cfg.source) / "manifest.json"
    import hashlib

    return {
        "config_fingerprint": fp, "config": cfg.as_dict(), **code_version(),
        "source": cfg.source,
        "source_manifest_sha256_16": hashlib.sha256(src_manifest.read_bytes()).hexdigest()[:16] if src_manifest.exists() else None,
        "splits": {s: len(rs) for s, rs in splits.items()},
        "total": len(rows), "candidates_processed": candidates,
        "rejections": dict(sorted(rejected.items())),
        "attempts": dict(sorted(Counter(row["attempts"] for row in rows).items())),
        "wer": {**_quantiles(wers), "histogram": hist, "max_allowed": cfg.max_wer},
        "user_seconds": _quantiles([row["user_seconds"] for row in rows]),
        "voices": {"by_engine": dict(engines), "distinct": len({row["voice"].rsplit(':', 2)[0] for row in rows}),
                   "heldout": cfg.heldout_voices, "reply": f"{cfg.reply_engine}:{cfg.reply_voice}"},
        "augmented_share": round(sum(row["augment"] != "{}" for row in rows) / max(len(rows), 1), 3),
        "with_reply_audio": sum(bool(row["reply_audio"]) for row in rows),
        "audio_hours": {"user": round(user_s / 3600, 3),
                        "reply": round(timing.get("reply_audio_s", 0.0) / 3600, 3)},
        "timing": {"wall_s": round(wall, 1), **{k: round(v, 1) for k, v in sorted(timing.items())},
                   "user_audio_s_per_wall_s": round(timing.get("user_audio_s", 0.0) / wall, 2) if wall else None},
        "columns": sorted(rows[0]) if rows else [],
    }
