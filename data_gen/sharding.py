"""Data generation over N independent jobs (a Slurm array through Hydra's submitit launcher), merged into
the very dataset one process makes with the same seed.

A generation run numbers its attempts and groups them into blocks of `shard_size` (generate.py); block k
is a pure function of (seed, config, k). With `num_shards=N`, job i (`shard_index=i`) makes the blocks
i, i+N, i+2N, ... into the shared `<output_dir>.partial/` folder, until its own blocks hold its even share
of `num_conversations` plus `shard_slack_blocks` blocks, and then writes its manifest
(`job-<i>-of-<N>.json`: its blocks and their sha256) by write-then-rename. So a job's output is a pure
function of (seed, config, i, N), a killed job resumes from its finished blocks, and jobs never write the
same file. The merge step (`shard_index` left out) checks every job's manifest, names each missing or
failed job with the command that reruns it alone, then walks the blocks in order exactly as the
one-process run does (dropping an utterance repeated from an earlier block, which a job could not see
when another job made that block) and builds the dataset: the same rows in the same order.

The job bookkeeping (`owned_blocks`, `write_job_manifest`, `check_shard_jobs`) knows nothing of text
conversations: another generator (speech, vision) adopts it by making its own blocks a pure function of
(seed, config, block index) and listing the files of each block in its job manifest.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterator

from toolcore.errors import ToolkitError
from toolcore.files import write_text_atomic


def owned_blocks(shard_index: int, num_shards: int) -> Iterator[int]:
    """Blocks of job `shard_index`: interleaved, so every job's blocks cover the same attempt range and
    stopping early wastes at most a few blocks per job."""
    return itertools.count(shard_index, num_shards)


def job_manifest_path(work: Path, shard_index: int, num_shards: int) -> Path:
    return work / f"job-{shard_index:04d}-of-{num_shards:04d}.json"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_job_manifest(work: Path, shard_index: int, num_shards: int, fingerprint: str,
                       blocks: dict[int, list[Path]], extra: dict[str, Any]) -> dict[str, Any]:
    """Record a finished job: its blocks (block index -> the block's files, with their sha256). Written
    last and atomically: a job with a manifest is complete."""
    manifest = {
        "shard_index": shard_index, "num_shards": num_shards, "config_fingerprint": fingerprint,
        "blocks": {str(k): {p.name: sha256_of(p) for p in files} for k, files in sorted(blocks.items())},
        **extra,
    }
    write_text_atomic(job_manifest_path(work, shard_index, num_shards), json.dumps(manifest, indent=1))
    return manifest


def rerun_command(shard_index: int) -> str:
    """The merge's own command line with `shard_index=i` added: the merge takes the jobs' overrides minus
    shard_index, so this reruns job i alone (add `-m hydra/launcher=...` to run it on the cluster)."""
    from toolcore.cli import entry_module

    args = [a for a in sys.argv[1:] if not a.startswith("shard_index=")]
    return " ".join(["python -m", entry_module("data_gen"), *args, f"shard_index={shard_index}"])


def check_shard_jobs(work: Path, num_shards: int, fingerprint: str) -> list[dict[str, Any]]:
    """Every job's manifest, checked against the config and the files on disk; a ToolkitError names each
    missing or failed job (and how to rerun it) otherwise."""
    problems: dict[int, str] = {}
    manifests = []
    for i in range(num_shards):
        path = job_manifest_path(work, i, num_shards)
        if not path.exists():
            problems[i] = "no manifest (the job failed, is still running or never ran)"
            continue
        m = json.loads(path.read_text())
        if m.get("config_fingerprint") != fingerprint:
            problems[i] = "made with another config"
            continue
        for k, files in m["blocks"].items():
            bad = [name for name, digest in files.items()
                   if not (work / name).exists() or sha256_of(work / name) != digest]
            if bad:
                problems[i] = f"block {k}: {bad[0]} is missing or changed since the job finished"
                break
        manifests.append(m)
    if problems:
        first = min(problems)
        listed = "; ".join(f"shard {i}: {why}" for i, why in sorted(problems.items()))
        raise ToolkitError(f"{len(problems)} of {num_shards} shard jobs are not finished: {listed}", file=str(work),
                           field="shard_index", fix=f"rerun each alone, e.g. `{rerun_command(first)}`, then merge again")
    return manifests


def missing_block(num_shards: int) -> Callable[[int], None]:
    """The merge's `on_missing`: it makes no block itself."""
    def fail(k: int) -> None:
        raise ToolkitError(f"block {k} (shard {k % num_shards}'s) is needed but no job made it: the jobs' blocks "
                           "hold fewer conversations than num_conversations once repeats across jobs are dropped",
                           field="shard_slack_blocks",
                           fix="rerun the shard jobs with shard_slack_blocks=2 (their finished blocks are kept)")
    return fail


def run_shard_job(gen: Any, work: Path, fingerprint: str, *, progress: bool = True) -> dict[str, Any]:
    """Job `shard_index` of a text generation run: make (or reuse) its blocks until they hold its share of
    num_conversations plus the slack blocks, then write its manifest. Returns the manifest."""
    from tqdm.auto import tqdm

    from .generate import block_paths, load_block, make_block

    cfg = gen.cfg
    i, n = cfg.shard_index, cfg.num_shards
    quota = math.ceil(cfg.num_conversations / n)
    seen: set[str] = set()   # this job's utterances only: repeats across jobs are dropped at the merge
    blocks: dict[int, list[Path]] = {}
    kept, slack_left, rejections = 0, None, Counter()
    t0 = time.perf_counter()
    bar = tqdm(total=quota, desc=f"shard {i}/{n}", unit="conv", disable=not progress)
    for k in owned_blocks(i, n):
        paths = block_paths(work, k)
        shard, stats = load_block(work, k, seen) if paths[0].exists() else make_block(gen, work, k, seen)
        blocks[k] = list(paths)
        kept += len(shard)
        rejections.update(stats)
        bar.update(min(len(shard), quota - bar.n))
        if slack_left is None and kept >= quota:
            slack_left = cfg.shard_slack_blocks
        elif slack_left is not None:
            slack_left -= 1
        if slack_left == 0:
            break
        if len(blocks) * cfg.shard_size > cfg.max_attempts_per_kept * quota:
            raise ToolkitError(f"shard {i}: only {kept} of {len(blocks) * cfg.shard_size} attempts were kept; "
                               f"top rejections: {rejections.most_common(3)}", file="configs/data_gen.yaml",
                               fix="check the tools' phrasings and vocabularies")
    bar.close()
    return write_job_manifest(work, i, n, fingerprint, blocks, {
        "kept": kept, "attempts": len(blocks) * cfg.shard_size, "seconds": round(time.perf_counter() - t0, 2)})
