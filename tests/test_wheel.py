"""The package as a user installs it: the wheel built from this checkout, installed (not editable) into a
fresh virtual environment, run from a folder outside the checkout, with the core dependencies only.

The core's dependencies are borrowed from this environment (a path entry to a folder of links to its
site-packages, leaving out the project itself and every module an extra installs), so the test needs no
network and still fails if the core imports something only an extra provides, or if a config, recipe,
tool or suite is not inside the wheel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from toolcore.extras import EXTRA_OF

ROOT = Path(__file__).resolve().parents[1]
# matplotlib (core) needs Pillow, which the [vision] extra names for the stages that draw images
KEPT = {"PIL"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    wheels = tmp / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(wheels), str(ROOT)], check=True, timeout=600, cwd=tmp)
    wheel = next(wheels.glob("toolcall_toolkit-*.whl"))
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    target = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip())
    # inside the venv, as installed packages are (dill, which datasets hashes with, pickles modules from
    # outside sys.prefix by value)
    deps = venv / "core-deps"
    deps.mkdir()
    optional = set(EXTRA_OF) - KEPT
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        name = entry.name
        if (name.startswith(("__editable__", "toolcall_toolkit", "_virtualenv", "__pycache__"))
                or name.split(".")[0].split("-")[0] in optional or name.endswith(".pth")):
            continue
        (deps / name).symlink_to(entry)
    (target / "core-deps.pth").write_text(f"{deps}\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                    "--no-index", str(wheel)], check=True, timeout=300)
    work = tmp / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"
    return venv, work, env


def run(installed, *args, timeout=600):
    venv, work, env = installed
    return subprocess.run(list(args), cwd=work, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_installed_package_is_the_wheels_not_the_checkouts(installed):
    venv, work, _ = installed
    r = run(installed, str(venv / "bin" / "python"), "-c",
            "import toolcore, toolcore.cli as c; print(toolcore.__file__); print(c.CONFIG_DIR)")
    assert r.returncode == 0, r.stderr
    module, configs = r.stdout.split()
    assert str(venv) in module and str(ROOT) not in module
    assert (Path(configs) / "train.yaml").exists() and (Path(configs) / "recipe" / "smollm2_cpu_lora.yaml").exists()


def test_data_gen_and_a_symbolic_eval_run_from_another_folder_with_the_core_only(installed):
    venv, work, _ = installed
    r = run(installed, str(venv / "bin" / "toolcall-data-gen"), "output_dir=ds", "num_conversations=300",
            "schema_data.share=0.2", "schema_data.library_size=40")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    manifest = json.loads((work / "ds" / "manifest.json").read_text())
    assert sum(manifest["splits"].values()) == 300
    r = run(installed, str(venv / "bin" / "python"), "-m", "eval", "suite=hackathon30", "model=symbolic",
            "output_dir=ev", "report=true")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    summary = json.loads((work / "ev" / "summary.json").read_text())
    assert summary["cases"] == 30 and summary["f1"] > 0.5
    assert (work / "ev" / "report.html").exists()
    assert "no W&B log (wandb is not installed" in r.stdout      # the default offline log is skipped, said once


def test_a_stage_that_needs_a_missing_extra_names_it_in_one_line(installed):
    venv, _, _ = installed
    r = run(installed, str(venv / "bin" / "toolcall-serve"), "model=symbolic")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "[serve]" in lines[0] and "pip install 'toolcall-toolkit[serve]'" in lines[0], r.stderr


def test_a_slurm_launcher_without_the_cluster_extra_names_it_in_one_line(installed):
    venv, _, _ = installed
    for override in ("hydra/launcher=submitit_slurm", "+launcher=slurm_cpu"):
        r = run(installed, str(venv / "bin" / "toolcall-train"), "+recipe=smollm2_cpu_lora", override, "-m")
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and "[cluster]" in lines[0], r.stderr


def test_each_stage_help_lists_its_own_groups_and_starred_keys(installed):
    venv, _, _ = installed
    r = run(installed, str(venv / "bin" / "toolcall-train"), "--help")
    assert r.returncode == 0, r.stderr
    assert "family: " in r.stdout and "recipe: " in r.stdout and "smollm2_cpu_lora" in r.stdout
    assert "model: " not in r.stdout                   # eval's and serve's group, not train's
    assert "training.time_budget_minutes=" in r.stdout and "data.path='data/default'" in r.stdout
    r = run(installed, str(venv / "bin" / "toolcall-eval"), "--help")
    assert r.returncode == 0 and "model: " in r.stdout and "family: " not in r.stdout
