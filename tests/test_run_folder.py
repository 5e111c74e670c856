"""A training run folder never mixes configs: run.json records the config fingerprint before the first
checkpoint, a rerun resumes only the same config, refuses another (naming the differing keys and the
fix), `resume=false` starts over cleanly, and a Hydra multirun gives every job a folder of its own.
Tiny from-config model of tests/test_train.py, 1-2 steps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from transformers import TrainerCallback

from toolcore.errors import ToolkitError
from train.config import TrainConfig
from train.run import train
from train.run_folder import (NOT_FINGERPRINTED, differences, fingerprint, fingerprint_hash, job_folder_name,
                              swept_keys, write_config)

from .test_train import config, setup  # noqa: F401  (the module's tiny model + dataset fixture)

ROOT = Path(__file__).resolve().parents[1]


def tiny(root: Path, data: Path, base: Path, name: str, **training) -> TrainConfig:
    cfg = config(root, data, base, name, train_examples=16, **{"max_steps": 2, "batch_size": 4, "eval_every": 0,
                                                              **training})
    cfg.data.eval_cases = 0
    return cfg


def lora_r(folder: Path) -> tuple[int, int, int]:
    """lora.r as config.yaml, run.json and the adapter itself record it."""
    return (yaml.safe_load((folder / "config.yaml").read_text())["lora"]["r"],
            json.loads((folder / "run.json").read_text())["fingerprint"]["lora.r"],
            json.loads((folder / "adapter" / "adapter_config.json").read_text())["r"])


def test_fingerprint_leaves_out_what_does_not_change_the_result():
    a, b = TrainConfig(), TrainConfig()
    b.output_dir, b.resume, b.wandb_mode, b.training.threads, b.training.logging_steps = "x", False, "disabled", 3, 1
    assert fingerprint(a, "h") == fingerprint(b, "h")
    assert not set(NOT_FINGERPRINTED) & set(fingerprint(a, "h"))
    b.lora.r, b.training.eval_every = 8, 10
    assert [(k, old, new) for k, old, new in differences(fingerprint(a, "h"), fingerprint(b, "h"))] == \
        [("lora.r", 16, 8), ("training.eval_every", 50, 10)]
    assert fingerprint_hash(fingerprint(a, "h")) != fingerprint_hash(fingerprint(a, "other data"))
    assert differences(fingerprint(a, "h"), fingerprint(a, "other data")) == \
        [("data.manifest_sha256_16", "h", "other data")]


def test_a_field_added_later_matches_at_its_default():
    now = fingerprint(TrainConfig(), "h")
    older = {k: v for k, v in now.items() if k != "training.bf16_autocast"}   # as if the field were new
    assert differences(older, now) == []
    cfg = TrainConfig()
    cfg.training.bf16_autocast = True
    assert differences(older, fingerprint(cfg, "h")) == [("training.bf16_autocast", "(not recorded)", True)]


def test_job_folder_names():
    assert job_folder_name(["+recipe=smollm2_cpu_lora", "lora.r=8"]) == "lora.r-8"
    assert job_folder_name(["training.learning_rate=1e-3", "lora.r=16", "wandb_mode=disabled", "resume=false",
                            "output_dir=runs/x", "hydra.sweep.dir=/tmp/h"]) == "lora.r-16+training.learning_rate-1e-3"
    assert job_folder_name(["data.path=/tmp/my data,x"]) == "data.path-_tmp_my_data_x"
    long = job_folder_name([f"data.path=/{'x' * 300}"])
    assert len(long) < 130 and "/" not in long
    assert job_folder_name(["training.threads=2"]) == ""          # the same run: output_dir itself
    # only the swept keys name the folder when the command line tells them
    argv = ["+recipe=smollm2_cpu_lora", "lora.r=8,16", "training.max_steps=3", "training.seed=range(0,2)", "-m"]
    assert swept_keys(argv) == {"lora.r", "training.seed"}
    assert job_folder_name(["+recipe=smollm2_cpu_lora", "lora.r=8", "training.max_steps=3", "training.seed=1"],
                           swept_keys(argv)) == "lora.r-8+training.seed-1"
    assert swept_keys(["-m", "--config-name=train"]) is None


def test_changed_config_is_refused_and_resume_false_starts_over(setup):
    root, data, base = setup
    cfg = tiny(root, data, base, "changed")
    metrics = train(cfg)
    out = root / "changed"
    record = json.loads((out / "run.json").read_text())
    assert record["fingerprint"]["lora.r"] == 8 and metrics["config_sha256_16"] == record["config_sha256_16"]
    (out / "eval").mkdir()
    (out / "eval" / "keep.txt").write_text("an eval beside the run")

    # a rerun of the same config (other thread count, other logging) resumes the finished run
    same = tiny(root, data, base, "changed", threads=1, logging_steps=1)
    assert train(same)["resumed_from"].endswith("checkpoint-2")

    other = tiny(root, data, base, "changed", learning_rate=1e-3)
    other.lora.r = 4
    with pytest.raises(ToolkitError) as e:
        train(other)
    msg = str(e.value)
    assert e.value.field == "output_dir" and e.value.file == str(out / "run.json")
    assert "lora.r: 8 there, 4 now" in msg and "training.learning_rate: 0.003 there, 0.001 now" in msg
    assert "new output_dir" in e.value.fix and "resume=false" in e.value.fix
    assert lora_r(out) == (8, 8, 8)            # nothing was touched

    other.resume = False
    assert train(other)["resumed_from"] is None
    assert lora_r(out) == (4, 4, 4)
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["checkpoint-2"]
    assert json.loads((out / "metrics.json").read_text())["config_sha256_16"] == \
        json.loads((out / "run.json").read_text())["config_sha256_16"] != record["config_sha256_16"]
    assert (out / "eval" / "keep.txt").exists()


class Crash(TrainerCallback):
    def on_train_begin(self, args, state, control, **kw):
        raise KeyboardInterrupt("killed before the first checkpoint")


def test_fingerprint_is_there_before_the_first_checkpoint(setup):
    root, data, base = setup
    cfg = tiny(root, data, base, "crashed")
    with pytest.raises(KeyboardInterrupt):
        train(cfg, extra_callbacks=[Crash()])
    out = root / "crashed"
    assert json.loads((out / "run.json").read_text())["fingerprint"] == fingerprint(cfg, json.loads(
        (out / "run.json").read_text())["fingerprint"]["data.manifest_sha256_16"])
    assert not list(out.glob("checkpoints/checkpoint-*")) and (out / "config.yaml").exists()
    other = tiny(root, data, base, "crashed", max_steps=3)
    with pytest.raises(ToolkitError, match="training.max_steps: 2 there, 3 now"):
        train(other)


def test_a_folder_from_before_run_json_is_checked_against_its_config_yaml(setup):
    root, data, base = setup
    out = root / "legacy"
    (out / "checkpoints" / "checkpoint-5").mkdir(parents=True)
    old = tiny(root, data, base, "legacy")
    old.lora.r = 32
    write_config(out, old)
    with pytest.raises(ToolkitError, match="lora.r: 32 there, 8 now") as e:
        train(tiny(root, data, base, "legacy"))
    assert e.value.file == str(out / "config.yaml")
    (out / "config.yaml").unlink()
    with pytest.raises(ToolkitError, match="no run.json or config.yaml"):
        train(tiny(root, data, base, "legacy"))


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"} | {"OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "train", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=env)


def test_sweep_gives_a_folder_per_job_and_a_changed_rerun_fails(setup):
    root, data, base = setup
    out = root / "sweep"
    common = ["family=hf", f"family.path={base}", "family.format=generic", f"data.path={data}",
              "data.train_examples=8", "data.eval_cases=0", "training.max_steps=1", "training.batch_size=4",
              "training.eval_every=0", "wandb_mode=disabled", f"output_dir={out}"]
    r = cli("-m", *common, "lora.r=2,4", f"hydra.sweep.dir={root / 'hydra'}")
    assert r.returncode == 0, r.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["lora.r-2", "lora.r-4"]
    for rank in (2, 4):
        assert lora_r(out / f"lora.r-{rank}") == (rank, rank, rank)
    assert f"{out}/lora.r-4/adapter" in r.stdout

    # a plain rerun into the r=2 folder with a changed override: one line naming both values and the fix
    r = cli(*common[:-1], f"output_dir={out / 'lora.r-2'}", "lora.r=4")
    assert r.returncode == 2, r.stderr[-3000:]
    err = r.stderr.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in r.stderr
    assert f"{out / 'lora.r-2' / 'run.json'}: field 'output_dir'" in err and "lora.r: 2 there, 4 now" in err
    assert "new output_dir" in err and "resume=false" in err
    assert lora_r(out / "lora.r-2") == (2, 2, 2)


def test_the_data_hash_covers_every_mixed_in_source(setup):
    from train.config import DataConfig, MixSource
    from train.data import data_hash, manifest_hash

    _, data, _ = setup
    alone = data_hash(DataConfig(path=str(data)))
    assert alone == manifest_hash(data)                    # runs without a mix keep their recorded hash
    mixed = data_hash(DataConfig(path=str(data), mix=[MixSource(path=str(data), weight=0.3)]))
    reweighted = data_hash(DataConfig(path=str(data), mix=[MixSource(path=str(data), weight=0.4)]))
    assert len({alone, mixed, reweighted}) == 3


def test_wandb_logging_without_wandb_fails_before_the_run_folder(setup, monkeypatch):
    root, data, base = setup
    cfg = tiny(root, data, base, "no_wandb")
    cfg.wandb_mode = "online"
    monkeypatch.setitem(sys.modules, "wandb", None)      # what `import wandb` meets where it is not installed
    with pytest.raises(ToolkitError) as e:
        train(cfg)
    assert e.value.field == "wandb_mode" and "wandb_mode=disabled" in e.value.fix and "[wandb]" in e.value.fix
    assert not (root / "no_wandb").exists()


def test_the_default_offline_log_without_wandb_is_skipped_saying_so(monkeypatch, capsys):
    from toolcore.extras import wandb_mode

    monkeypatch.setitem(sys.modules, "wandb", None)
    assert wandb_mode("offline", "training") == "disabled"
    assert "training: no W&B log (wandb is not installed: pip install 'toolcall-toolkit[wandb]')" in capsys.readouterr().out
    assert wandb_mode("disabled", "training") == "disabled"


def test_a_folder_written_atomically_replaces_the_old_one_only_when_complete(tmp_path):
    """adapter/, model/ and merged folders are written beside their place and renamed: a crash in the
    middle leaves the previous folder as it was and an unfinished one named as such."""
    from toolcore.files import folder_written_atomically

    final = tmp_path / "adapter"
    with folder_written_atomically(final) as tmp:
        (tmp / "weights").write_text("one")
    assert (final / "weights").read_text() == "one"
    with pytest.raises(RuntimeError), folder_written_atomically(final) as tmp:
        (tmp / "weights").write_text("half")
        raise RuntimeError("killed while saving")
    assert (final / "weights").read_text() == "one" and (tmp_path / ".adapter.partial").exists()
    with folder_written_atomically(final) as tmp:
        (tmp / "weights").write_text("two")
    assert (final / "weights").read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapter"]
