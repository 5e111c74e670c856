"""Errors raised while Hydra instantiates the model (or reads the config) come out as the same one-line
`error: ...` (exit 2, no traceback) as every other bad input, through the real command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from toolcore.cli import toolkit_cause
from toolcore.errors import ToolkitError

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)


def one_line_error(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, r.stderr[-3000:]
    err = r.stderr.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    assert "Traceback" not in r.stderr and "InstantiationException" not in r.stderr and "full_key" not in err
    return err


def test_bad_model_path_is_one_line(tmp_path):
    err = one_line_error(run("eval", "suite=hackathon30", "model=hf", "model.path=/nonexistent",
                             f"output_dir={tmp_path / 'o'}"))
    assert "model.path" in err and "/nonexistent" in err and "(fix: " in err
    assert not (tmp_path / "o").exists()


def test_bad_adapter_folder_is_one_line(tmp_path):
    folder = tmp_path / "not_an_adapter"
    folder.mkdir()
    err = one_line_error(run("eval", "suite=hackathon30", "model=smollm2", f"model.adapter={folder}",
                             f"output_dir={tmp_path / 'o'}"))
    assert "model.adapter" in err and str(folder) in err and "adapter_config.json" in err and "(fix: " in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_missing_gpu_is_one_line(tmp_path):
    err = one_line_error(run("eval", "suite=hackathon30", "model=hf", "model.path=/x", "model.device=cuda",
                             f"output_dir={tmp_path / 'o'}"))
    assert "model.device" in err and "no CUDA GPU" in err and "device=cpu" in err


def test_a_nested_model_error_is_one_line(tmp_path):
    # the router instantiates its inner model first: the error comes through two Hydra levels
    folder = tmp_path / "empty"
    folder.mkdir()
    err = one_line_error(run("eval", "suite=hackathon30", "model=router", f"model.inner.adapter={folder}",
                             f"output_dir={tmp_path / 'o'}"))
    assert "model.adapter" in err and str(folder) in err


def test_other_instantiation_errors_are_one_line(tmp_path):
    err = one_line_error(run("eval", "suite=hackathon30", "model=symbolic", "+model.bogus=1",
                             f"output_dir={tmp_path / 'o'}"))
    assert "field 'model'" in err and "SymbolicModel" in err and "bogus" in err and "HYDRA_FULL_ERROR=1" in err


def test_unset_mandatory_value_is_one_line(tmp_path):
    err = one_line_error(run("eval", "suite=hackathon30", "model=hf", f"output_dir={tmp_path / 'o'}"))
    assert "field 'model.path'" in err and "no base model given" in err and "(fix: set model.path" in err


def test_toolkit_cause_walks_the_chain():
    inner = ToolkitError("bad", field="model.path")
    try:
        try:
            raise inner
        except ToolkitError as e:
            raise RuntimeError("wrapped") from e
    except RuntimeError as outer:
        assert toolkit_cause(outer) is inner
    assert toolkit_cause(RuntimeError("plain")) is None


@pytest.mark.parametrize("stage,override,meant", [
    ("eval", "modle=symbolic", "model"),
    ("eval", "model.generation.tempreature=0.2", "model.generation.temperature"),
    ("eval", "model.temperature=0.2", "model.generation.temperature"),      # the right key under another parent
    ("train", "trainig.max_steps=3", "training.max_steps"),
])
def test_a_misspelt_key_gets_the_closest_real_keys(stage, override, meant):
    """Not Hydra's advice to append it with `+`: a key no code reads would be added."""
    extra = ["model=smollm2"] if "generation" in override or override.startswith("model.") else []
    err = one_line_error(run(stage, *extra, override))
    assert f"did you mean {meant}" in err and "+" not in err.split("(fix:")[0].split(":", 2)[-1]
    assert "To append" not in err


def test_the_server_without_a_model_says_how_to_name_one():
    err = one_line_error(run("serve"))
    assert "field 'model'" in err and "python -m serve model=" in err


def test_a_renamed_key_names_its_new_name():
    err = one_line_error(run("data_gen", "general.share=1.0"))
    assert "'general' is now 'schema_data'" in err and "schema_data.share=1.0" in err


def test_train_without_a_recipe_or_a_length_is_refused_not_run_for_hours():
    err = one_line_error(run("train"))
    assert "training.epochs" in err and "+recipe=smollm2_cpu_lora" in err
