"""A run folder holds one config's run, never a mix.

`run.json` records the config fingerprint (every key that changes the result, and the dataset's
manifest hash) and its hash, atomically, before the first checkpoint. A folder that holds a run of
another config is refused with the first differing keys and both values; `resume=false` starts over
in it (its previous run's files are removed first, see RUN_FILES), a new output_dir keeps both. In a
Hydra multirun (`-m`) every job trains in a folder of its own below output_dir, named after its
swept overrides (`runs/train/smollm2_cpu_lora/lora.r-8`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from toolcore.errors import ToolkitError
from toolcore.files import write_text_atomic

from .config import TrainConfig


def latest_checkpoint(folder: Path) -> str | None:
    found = sorted(folder.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1])) if folder.exists() else []
    return str(found[-1]) if found else None


# Config keys left out of the fingerprint: they do not change the trained adapter, so a run may be
# resumed with other values. Everything else is in, the evaluation cadence included: eval_every sets
# the checkpoint steps and, with eval_cases and eval_max_new_tokens, which checkpoint is kept as best.
NOT_FINGERPRINTED = {
    "output_dir": "where the run is, not what it is",
    "resume": "how this invocation starts, not what it trains",
    "family.name": "a label (it names the default output_dir); family.path and the rest say what is loaded",
    "wandb_mode": "logging only",
    "wandb_project": "logging only",
    "training.logging_steps": "how often the loss is logged, not what is trained",
    "training.threads": "CPU threads: speed only",
    "training.save_total_limit": "how many old checkpoints are kept on disk (the best one is never deleted)",
    "training.gradient_checkpointing": "recomputes activations to save memory: the same gradients",
    "training.dump_rank_weights": "a debugging dump beside the run (data-parallel test)",
}
# What a run leaves in its folder: removed when `resume=false` starts over. Anything else in the
# folder (an eval/ beside the run, wandb/'s offline logs) is left alone.
RUN_FILES = ("run.json", "config.yaml", "metrics.json", "adapter", "model",
             ".adapter.partial", ".model.partial", ".adapter.old", ".model.old",   # toolcore.files
             "checkpoints", "preprocessed", "time_budget.json", "rank*.safetensors")
# multirun folder names leave these out: the recipe names the parent folder already (every recipe
# sets output_dir), and jobs that differ only in unfingerprinted keys are the same run
NOT_IN_JOB_FOLDER = ("recipe", *NOT_FINGERPRINTED)


def flat_config(values: dict[str, Any], schema: type = TrainConfig, prefix: str = "") -> dict[str, Any]:
    """{"lora.r": 16, "training.learning_rate": 0.002, ...}: one key per config field (dataclass
    sections are flattened, dict-valued fields such as data.category_weights stay one value)."""
    flat: dict[str, Any] = {}
    sections = {f.name: f.default_factory for f in dataclasses.fields(schema)
                if f.default_factory is not dataclasses.MISSING and dataclasses.is_dataclass(f.default_factory)}
    for key, value in values.items():
        if key in sections and isinstance(value, dict):
            flat.update(flat_config(value, sections[key], f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def fingerprint(cfg: TrainConfig, data_hash: str) -> dict[str, Any]:
    """What decides the result: the config minus NOT_FINGERPRINTED, plus the dataset's manifest hash
    (the same data.path regenerated is other data)."""
    flat = {k: v for k, v in flat_config(dataclasses.asdict(cfg)).items() if k not in NOT_FINGERPRINTED}
    flat["data.manifest_sha256_16"] = data_hash
    return json.loads(json.dumps(flat, sort_keys=False, default=str))   # the form run.json gives back


def fingerprint_hash(fp: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(fp, sort_keys=True).encode()).hexdigest()[:16]


def recorded_fingerprint(out: Path) -> dict[str, Any] | None:
    """The fingerprint of the run already in `out`: run.json's, or for a folder written before run.json
    existed, the one its config.yaml gives (without a dataset hash). None when there is neither."""
    if (out / "run.json").exists():
        try:
            return json.loads((out / "run.json").read_text())["fingerprint"]
        except (ValueError, KeyError) as e:
            raise ToolkitError(f"unreadable run record ({e})", file=str(out / "run.json"), field="output_dir",
                               fix="give a new output_dir, or resume=false to start over in this folder") from None
    if (out / "config.yaml").exists():
        from omegaconf import OmegaConf

        values = OmegaConf.to_container(OmegaConf.load(out / "config.yaml"))
        return {k: v for k, v in flat_config(values).items() if k not in NOT_FINGERPRINTED}
    return None


def differences(recorded: dict[str, Any], now: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(key, recorded value, value now) for every key that differs, in config order. A key the record
    lacks (a field added since, or the dataset hash of a pre-run.json folder) counts as equal when the
    value now is its default; a key only the record has (a field since removed) is ignored."""
    defaults = fingerprint(TrainConfig(), "")
    missing = object()
    found = []
    for key, value in now.items():
        old = recorded.get(key, missing)
        if old is missing:
            if key == "data.manifest_sha256_16" or value == defaults.get(key, missing):
                continue
            old = "(not recorded)"
        if old != value:
            found.append((key, old, value))
    return found


def short(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) and value == "(not recorded)" else json.dumps(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def clear_run(out: Path) -> None:
    """Remove what a previous run left (RUN_FILES), nothing else."""
    for pattern in RUN_FILES:
        for path in out.glob(pattern):
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()


def claim_run_folder(out: Path, cfg: TrainConfig, data_hash: str) -> dict[str, Any]:
    """Make `out` this config's run folder, before anything is trained: resume only a run of the same
    fingerprint, refuse any other; `resume=false` starts over. Writes run.json and config.yaml
    atomically (only rank 0 writes or removes; the other ranks check). Returns the fingerprint."""
    fp = fingerprint(cfg, data_hash)
    writer = int(os.environ.get("RANK", "0")) == 0
    if cfg.resume:
        recorded = recorded_fingerprint(out)
        fix = "give a new output_dir, or resume=false to start over in this folder (its run files are removed)"
        if recorded is not None:
            diff = differences(recorded, fp)
            if diff:
                shown = "; ".join(f"{k}: {short(a)} there, {short(b)} now" for k, a, b in diff[:2])
                more = f" (and {len(diff) - 2} more)" if len(diff) > 2 else ""
                record = "run.json" if (out / "run.json").exists() else "config.yaml"
                raise ToolkitError(f"holds a run of another config: {shown}{more}", file=str(out / record),
                                   field="output_dir", fix=fix)
        elif latest_checkpoint(out / "checkpoints") or (out / "adapter").exists() or (out / "model").exists():
            raise ToolkitError("holds checkpoints, an adapter or a model with no run.json or config.yaml to tell their config",
                               file=str(out), field="output_dir", fix=fix)
    if not writer:
        return fp
    if not cfg.resume:
        clear_run(out)
    if not (out / "run.json").exists():
        record = {"config_sha256_16": fingerprint_hash(fp), "fingerprint": fp,
                  "not_fingerprinted": NOT_FINGERPRINTED, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        write_text_atomic(out / "run.json", json.dumps(record, indent=2) + "\n")
    write_config(out, cfg)
    return fp


def job_output_dir(cfg: TrainConfig) -> str:
    """output_dir, or in a Hydra multirun job output_dir/<the job's swept overrides>, so that the jobs of
    a sweep never share a folder (`lora.r=8,16` -> .../lora.r-8 and .../lora.r-16)."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode
    except ImportError:
        return cfg.output_dir
    if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
        return cfg.output_dir
    hydra_cfg = HydraConfig.get()
    swept = swept_keys(sys.argv[1:])
    if swept is None:   # a job in a process of its own (submitit): the sweep's command line is in multirun.yaml
        swept = swept_keys(multirun_overrides(hydra_cfg.sweep.dir))
    if swept is not None:
        swept |= set((hydra_cfg.sweeper.get("params") or {}).keys())   # sweeps written in a config
    name = job_folder_name(list(hydra_cfg.overrides.task), swept)
    return str(Path(cfg.output_dir) / name) if name else cfg.output_dir


def multirun_overrides(sweep_dir: str) -> list[str]:
    """The command-line overrides of the multirun that launched this job, from the multirun.yaml Hydra's
    sweeper writes into the sweep folder before launching ([] when it is not there)."""
    path = Path(sweep_dir) / "multirun.yaml"
    if not path.exists():
        return []
    from omegaconf import OmegaConf

    return list(OmegaConf.load(path).hydra.overrides.task)


def swept_keys(argv: list[str]) -> set[str] | None:
    """The keys a multirun command line sweeps (`lora.r=8,16`, `x=range(1,4)`), or None when the
    command line holds no overrides to tell (a launcher that runs each job in a process of its own)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    items = [a for a in argv if "=" in a and not a.startswith("-")]
    if not items:
        return None
    try:
        parsed = OverridesParser.create().parse_overrides(items)
    except Exception:   # noqa: BLE001 - Hydra itself reports a bad override
        return None
    return {o.key_or_group for o in parsed if o.is_sweep_override()}


def job_folder_name(overrides: list[str], swept: set[str] | None = None) -> str:
    """`lora.r-8+training.learning_rate-0.001` from a job's overrides `lora.r=8 training.learning_rate=0.001`:
    the swept ones (all of them when `swept` is None), sorted, without NOT_IN_JOB_FOLDER and hydra
    settings. No `=` or `,` (the folder must pass unquoted as an override value: model.adapter=.../adapter),
    any other character a folder name should not hold becomes `_`; long names end in a hash."""
    parts = []
    for item in overrides:
        key, _, value = item.partition("=")
        key = key.lstrip("+~")
        if key.startswith("hydra") or key in NOT_IN_JOB_FOLDER or (swept is not None and key not in swept):
            continue
        parts.append(f"{key}-{value}")
    name = re.sub(r"[^A-Za-z0-9._+@-]", "_", "+".join(sorted(parts)))
    if len(name) > 120:
        name = name[:100] + "-" + hashlib.sha256(name.encode()).hexdigest()[:12]
    return name


def write_config(out: Path, cfg: TrainConfig) -> None:
    from omegaconf import OmegaConf

    write_text_atomic(out / "config.yaml", OmegaConf.to_yaml(OmegaConf.structured(cfg)))
