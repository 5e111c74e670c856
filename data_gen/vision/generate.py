"""Build data/vision: synthetic scenes + questions (+ your own JSONL rows) -> DatasetDict, manifest.json,
preview.html.

Work is cut into shards of `shard_size` indices per split. Example k of a split is a pure function of
(seed, split, k): a shard is (split, first index, count), so shards can run in any process, on any
machine (Slurm sharding just hands out shard numbers), and a killed run redoes only the shards that have
no finished folder. A rejected example (reason counted) is not replaced by drawing more: index k+1 stays
index k+1, so a split holds up to its requested count. Each shard is a `datasets` folder written under a
temporary name and renamed; the whole dataset is built in `<output_dir>.partial` and renamed into place
last, so a folder at `output_dir` with a manifest is always complete.

Row columns: id, split, kind, source, image (Image), crops (list of Image: what each call returns, in
order), width, height, question, answer, and JSON strings target_boxes, messages, tools, expected_calls.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from toolcore.files import write_text_atomic

from ..workdir import finished_or_refuse, partial_folder, publish
from .config import VisionConfig
from .draw import scene
from .questions import example

JSON_COLUMNS = ("target_boxes", "messages", "tools", "expected_calls")


def features():
    from datasets import Features, Image, List, Value

    return Features({"id": Value("string"), "split": Value("string"), "kind": Value("string"),
                     "source": Value("string"), "image": Image(), "crops": List(Image()),
                     "width": Value("int32"), "height": Value("int32"), "question": Value("string"),
                     "answer": Value("string"), **{c: Value("string") for c in JSON_COLUMNS}})


def to_record(row: dict[str, Any], split: str, rid: str) -> dict[str, Any]:
    return {"id": rid, "split": split, "source": row.get("source", "synthetic"),
            **{k: row[k] for k in ("kind", "image", "crops", "width", "height", "question", "answer")},
            **{c: json.dumps(row[c]) for c in JSON_COLUMNS}}


def make_example(cfg: VisionConfig, split: str, index: int) -> tuple[dict[str, Any] | None, str | None]:
    """Example `index` of `split`: the generator's one entry point, a pure function of (seed, split, index)."""
    sc = scene(cfg, split, index)
    if sc.rejected:
        return None, sc.rejected
    row, why = example(cfg, sc, split, index)
    return (to_record(row, split, f"{split}-{index:07d}"), None) if row else (None, why)


def run_shard(args: tuple[VisionConfig, str, int, int, str]) -> dict[str, Any]:
    cfg, split, shard, count, work = args
    from datasets import Dataset

    t0 = time.perf_counter()
    rows, rejected = [], Counter()
    for k in range(shard * cfg.shard_size, shard * cfg.shard_size + count):
        rec, why = make_example(cfg, split, k)
        if rec is None:
            rejected[why] += 1
        else:
            rows.append(rec)
    final = Path(work) / "shards" / f"{split}-{shard:05d}"
    tmp = final.with_name(final.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    Dataset.from_list(rows, features=features()).save_to_disk(str(tmp))
    write_text_atomic(tmp / "shard.json", json.dumps({"rows": len(rows), "rejected": dict(rejected),
                                                      "seconds": round(time.perf_counter() - t0, 3)}))
    os.replace(tmp, final)
    return {"split": split, "rows": len(rows), "attempted": count}


def fingerprint(cfg: VisionConfig) -> str:
    keep = {k: v for k, v in cfg.as_dict().items() if k not in ("overwrite", "output_dir", "workers", "preview_examples")}
    if cfg.user_data and Path(cfg.user_data).is_file():
        keep["user_data_sha256"] = hashlib.sha256(Path(cfg.user_data).read_bytes()).hexdigest()
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]


def shard_plan(cfg: VisionConfig) -> list[tuple[str, int, int]]:
    """(split, shard number, examples in it) for every shard: what a Slurm array would hand out."""
    plan = []
    for split, n in cfg.examples.items():
        for s in range(-(-n // cfg.shard_size)):
            plan.append((split, s, min(cfg.shard_size, n - s * cfg.shard_size)))
    return plan


def generate(cfg: VisionConfig, *, progress: bool = True) -> dict[str, Any]:
    out = Path(cfg.output_dir)
    fp = fingerprint(cfg)
    reused = finished_or_refuse(out, fp, cfg.overwrite, "vision dataset")
    if reused:
        return reused
    user_rows = None
    if cfg.user_data:       # validated before any drawing: a bad line fails in a second, not after the run
        from .user_data import read_user_rows
        user_rows = read_user_rows(cfg.user_data)
    work = partial_folder(out, fp)

    t0 = time.perf_counter()
    plan = shard_plan(cfg)
    todo = [(cfg, s, k, n, str(work)) for s, k, n in plan if not (work / "shards" / f"{s}-{k:05d}" / "shard.json").exists()]
    bar = tqdm(total=sum(n for _, _, n in plan), initial=sum(n for _, _, n in plan) - sum(a[3] for a in todo),
               desc="vision examples", unit="ex", disable=not progress)
    workers = min(cfg.workers or os.cpu_count() or 1, max(1, len(todo)))
    if workers == 1:
        for a in todo:
            bar.update(run_shard(a)["attempted"])
    elif todo:
        with mp.get_context("spawn").Pool(workers) as pool:
            for r in pool.imap_unordered(run_shard, todo):
                bar.update(r["attempted"])
    bar.close()
    return finalize(cfg, work, out, plan, user_rows, time.perf_counter() - t0, fp)


def finalize(cfg: VisionConfig, work: Path, out: Path, plan, user_rows, wall: float, fp: str) -> dict[str, Any]:
    from datasets import Dataset, DatasetDict, concatenate_datasets, load_from_disk

    from ..generate import code_version
    from .preview import write_preview

    parts: dict[str, list] = {}
    rejected: Counter = Counter()
    shard_seconds = 0.0
    for split, k, _ in plan:
        folder = work / "shards" / f"{split}-{k:05d}"
        info = json.loads((folder / "shard.json").read_text())
        rejected.update(info["rejected"])
        shard_seconds += info["seconds"]
        parts.setdefault(split, []).append(load_from_disk(str(folder)))
    if user_rows:
        recs = [to_record(r, cfg.user_split, f"user-{i:06d}") for i, r in enumerate(user_rows)]
        parts.setdefault(cfg.user_split, []).append(Dataset.from_list(recs, features=features()))
    dd = DatasetDict({s: concatenate_datasets(ps) for s, ps in parts.items() if sum(len(p) for p in ps)})
    tmp = work / "_dataset"
    shutil.rmtree(tmp, ignore_errors=True)
    dd.save_to_disk(str(tmp))
    for p in tmp.iterdir():
        target = work / p.name
        if target.exists():
            shutil.rmtree(target) if target.is_dir() else target.unlink()
        os.replace(p, target)
    tmp.rmdir()
    kinds = Counter(k for s in dd for k in dd[s]["kind"])
    total = sum(len(dd[s]) for s in dd)
    manifest = {"config_fingerprint": fp, "config": cfg.as_dict(), "seed": cfg.seed, **code_version(),
                "splits": {s: len(dd[s]) for s in dd}, "total": total, "kinds": dict(sorted(kinds.items())),
                "user_rows": len(user_rows or []), "attempted": sum(n for _, _, n in plan),
                "rejections": dict(sorted(rejected.items())),
                "calls": {"none": sum(1 for s in dd for e in dd[s]["expected_calls"] if e == "[]"),
                          "crop": sum(e.count('"crop"') for s in dd for e in dd[s]["expected_calls"])},
                "timing": {"wall_s": round(wall, 2), "shard_s": round(shard_seconds, 2),
                           "rows_per_s": round(total / wall, 1) if wall else None},
                "columns": list(features())}
    write_text_atomic(work / "manifest.json", json.dumps(manifest, indent=2))
    shutil.rmtree(work / "shards")
    (work / "fingerprint.json").unlink()
    write_preview(work, cfg.preview_examples, seed=cfg.seed)
    publish(work, out)
    return manifest
