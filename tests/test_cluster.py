"""Cluster batch jobs on a real one-node Slurm cluster on localhost (scripts/slurm_local.sh: slurmctld,
slurmd, slurmdbd, munge, MariaDB, started in a fresh temp dir for this session and stopped by pid file).
Jobs go through Hydra's submitit launcher exactly as a user submits them (`-m hydra/launcher=submitit_slurm`):
a sharded data_gen multirun whose merge equals the one-process dataset, a tiny training job, and a training
job preempted mid-way (USR2, as Slurm sends before a time limit) that is requeued and resumes to the same
adapter as an uninterrupted run. Real daemons, real tiny models; nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from data_gen.config import DataGenConfig
from data_gen.generate import generate
from toolcore.errors import ToolkitError

from .tiny_models import assert_same_safetensors, tiny_llama, tiny_tokenizer

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "slurm_local.sh"
PRESETS = sorted(p.stem for p in (ROOT / "configs" / "launcher").glob("*.yaml"))
DATA = dict(num_conversations=240, shard_size=40, seed=5)


def compose(config_name: str, overrides: list[str], hydra: bool = True):
    from hydra import compose as hydra_compose, initialize_config_dir
    from hydra.core.config_store import ConfigStore
    from hydra.core.global_hydra import GlobalHydra

    from eval.config import EvalConfig
    from train.config import TrainConfig

    for name, node in (("train_schema", TrainConfig), ("eval_schema", EvalConfig), ("data_gen_schema", DataGenConfig)):
        ConfigStore.instance().store(name=name, node=node)

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
            return hydra_compose(config_name=config_name, overrides=overrides, return_hydra_config=hydra)
    finally:
        GlobalHydra.instance().clear()


@pytest.mark.parametrize("preset", PRESETS)
def test_every_launcher_preset_composes_for_every_stage(preset):
    for stage in ("train", "data_gen", "eval"):
        cfg = compose(stage, [f"launcher={preset}"])
        launcher = cfg.hydra.launcher
        assert launcher._target_.endswith("SlurmLauncher"), (stage, preset)
        assert launcher.additional_parameters.requeue is True and launcher.signal_delay_s > 0
    expected = {"slurm_cpu": (1, None, 1), "slurm_1gpu": (1, 1, 1), "slurm_8gpu": (1, 8, 8), "slurm_2node": (2, 8, 8)}
    launcher = compose("train", [f"launcher={preset}"]).hydra.launcher
    assert (launcher.nodes, launcher.gpus_per_node, launcher.tasks_per_node) == expected[preset]


# ----- the cluster ------------------------------------------------------------------------------------

def _slurm_missing() -> str | None:
    if not Path("/usr/sbin/slurmctld").exists():
        return ("the Slurm packages are not installed (`make .venv/.slurm` installs them: apt-get install slurmctld "
                "slurmd slurm-client munge slurmdbd mariadb-server)")
    if os.geteuid() != 0:
        return "the local Slurm cluster needs root (slurmd runs jobs as their users)"
    return None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Environment for commands that talk to the cluster (SLURM_CONF); the cluster is up for this module."""
    why = _slurm_missing()
    if why:
        pytest.skip(why)
    state = tmp_path_factory.mktemp("slurm")
    t0 = time.perf_counter()
    subprocess.run(["bash", str(SCRIPT), "start", str(state)], check=True, timeout=120, capture_output=True, text=True)
    up_s = time.perf_counter() - t0
    env = os.environ | {"SLURM_CONF": str(state / "slurm.conf"), "PATH": f"/usr/sbin:{os.environ['PATH']}",
                        "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1",
                        "PYTHONPATH": str(ROOT)}
    print(f"\nslurm cluster up in {up_s:.1f} s ({state})")
    try:
        yield env
    finally:
        subprocess.run(["scancel", "--user=root"], env=env, timeout=30, capture_output=True)
        subprocess.run(["bash", str(SCRIPT), "stop", str(state)], timeout=120, capture_output=True)


def hydra_multirun(module: str, overrides: list[str], sweep: Path, env: dict, timeout: int = 300, **kw):
    cmd = [sys.executable, "-m", module, "-m", "hydra/launcher=submitit_slurm", f"hydra.sweep.dir={sweep}",
           # submitit counts a signal as a timeout (not a preemption) once 80% of the time limit has passed,
           # or any signal at all under a 10-minute limit: 60 minutes, and 2 timeouts allowed anyway
           "hydra.launcher.timeout_min=60", "hydra.launcher.max_num_timeout=2", *overrides]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def finish(proc: subprocess.Popen, timeout: int = 300) -> str:
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out[-3000:]
    return out


def test_sharded_data_gen_multirun_merges_to_the_one_process_dataset(cluster, tmp_path):
    from datasets import load_from_disk

    sharded = tmp_path / "sharded"
    args = [f"{k}={v}" for k, v in DATA.items()] + [f"output_dir={sharded}", "num_shards=3"]
    t0 = time.perf_counter()
    finish(hydra_multirun("data_gen", [*args, "shard_index=range(3)"], tmp_path / "sweep", cluster))
    jobs_s = time.perf_counter() - t0
    work = tmp_path / "sharded.partial"
    manifests = [json.loads((work / f"job-{i:04d}-of-0003.json").read_text()) for i in range(3)]
    assert [sorted(map(int, m["blocks"])) for m in manifests][0][:2] == [0, 3]   # interleaved blocks

    # a failed job (here: its manifest gone) is named, with the command that reruns it alone
    moved = work / "job-0001-of-0003.json"
    moved.rename(tmp_path / "kept.json")
    with pytest.raises(ToolkitError, match=r"shard 1: no manifest.*shard_index=1"):
        generate(DataGenConfig(output_dir=str(sharded), num_shards=3, **DATA), progress=False)
    (tmp_path / "kept.json").rename(moved)

    merged = generate(DataGenConfig(output_dir=str(sharded), num_shards=3, **DATA), progress=False)
    single = generate(DataGenConfig(output_dir=str(tmp_path / "single"), **DATA), progress=False)
    a, b = load_from_disk(str(tmp_path / "single")), load_from_disk(str(sharded))
    assert list(a) == list(b)
    for split in a:
        assert a[split].to_list() == b[split].to_list(), split        # row for row
    for key in ("config_fingerprint", "splits", "total", "attempts", "rejections", "decontamination"):
        assert merged[key] == single[key], key
    assert not work.exists()
    print(f"sharded data_gen: 3 Slurm jobs in {jobs_s:.1f} s; merged == one process: "
          f"{sum(merged['splits'].values())} rows, {merged['attempts']} attempts")


# ----- training ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A dataset and a tiny from-config llama base (its tokenizer trained here), saved as a folder."""
    from datasets import load_from_disk
    from toolcore.formats import get_format
    from toolcore.suites import ConversationReader

    root = tmp_path_factory.mktemp("train")
    data = root / "data"
    generate(DataGenConfig(output_dir=str(data), num_conversations=300, shard_size=300), progress=False)
    fmt, read = get_format("generic"), ConversationReader()
    texts = [fmt.render_text(read(r)) for r in load_from_disk(str(data))["train"].select(range(200))]
    tok = tiny_tokenizer(texts, vocab_size=600)
    base = root / "base"
    tiny_llama(len(tok), hidden=96, layers=2).save_pretrained(base)
    tok.save_pretrained(base)
    return root, data, base


def train_overrides(data: Path, base: Path, out: Path, steps: int) -> list[str]:
    # checkpoints every 4 steps, no generation passes (data.eval_cases=0): the adapter is the last step's
    return [f"family.path={base}", "family.name=tiny", "family.format=generic", "lora.r=8", "lora.alpha=16",
            f"data.path={data}", "data.train_examples=160", "data.eval_cases=0", "data.max_length=600",
            f"training.max_steps={steps}", "training.batch_size=4", "training.eval_every=4",
            "training.logging_steps=4", "training.save_total_limit=50", "training.learning_rate=3e-3",
            "training.threads=1", "wandb_mode=disabled", f"output_dir={out}"]


def squeue(env: dict, job: str) -> str:
    r = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T %r"], env=env, capture_output=True, text=True, timeout=20)
    return r.stdout.strip()


def wait_for(what: str, check, limit_s: float, every_s: float = 0.05):
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError(f"gave up after {limit_s:.0f} s waiting for {what}")


def test_training_job_preempted_midway_is_requeued_and_resumes_to_the_same_adapter(cluster, tiny_run):
    from omegaconf import OmegaConf

    from train.config import TrainConfig
    from train.run import train

    root, data, base = tiny_run
    steps = 48
    out = root / "preempted"
    proc = hydra_multirun("train", train_overrides(data, base, out, steps), root / "sweep", cluster)
    # the job: its submitit folder appears with its id; stop it once a few checkpoints are written
    job = wait_for("the job to be submitted",
                   lambda: next((p.name for p in (root / "sweep" / ".submitit").glob("[0-9]*")
                                 if p.is_dir() and p.name.split("_")[0].isdigit()), None)
                   if (root / "sweep" / ".submitit").exists() else None, 120)
    job = job.split("_")[0]
    wait_for("checkpoint-8", lambda: (out / "checkpoints" / "checkpoint-8").exists() or proc.poll() is not None, 180)
    assert proc.poll() is None, "the job finished before it could be preempted: " + proc.communicate()[0][-3000:]
    t_signal = time.perf_counter()
    subprocess.run(["scancel", "--signal=USR2", job], env=cluster, check=True, timeout=20)
    # Slurm holds a requeued job back for a while (BeginTime); on a real cluster it waits its turn, here
    # it is let go at once
    wait_for("the requeue", lambda: squeue(cluster, job).startswith("PENDING"), 120)
    subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], env=cluster, check=True, timeout=20)
    finish(proc, timeout=300)
    requeued_s = time.perf_counter() - t_signal

    metrics = json.loads((out / "metrics.json").read_text())
    resumed = int(Path(metrics["resumed_from"]).name.split("-")[1])
    assert 8 <= resumed < steps       # stopped mid-way (at the step in flight when the signal came)
    assert metrics["steps"] == steps
    log = "".join(p.read_text() for p in (root / "sweep" / ".submitit" / job).glob("*_log.*"))
    assert "requeue" in log.lower()

    # the same config, uninterrupted, in this process
    straight: TrainConfig = OmegaConf.to_object(compose("train", train_overrides(data, base, root / "straight", steps),
                                                        hydra=False))
    t0 = time.perf_counter()
    train(straight)
    straight_s = time.perf_counter() - t0
    assert_same_safetensors(root / "straight" / "adapter" / "adapter_model.safetensors",
                            out / "adapter" / "adapter_model.safetensors")
    print(f"preempted at step {resumed} of {steps} (USR2), requeued and finished {requeued_s:.1f} s after the "
          f"signal; uninterrupted run {straight_s:.1f} s in-process; adapters equal")
