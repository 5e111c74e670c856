"""Every config group composes, validates and (where it can offline) instantiates, in seconds."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.utils import get_class, instantiate
import yaml
from omegaconf import OmegaConf

from data_gen.config import DataGenConfig
from eval.config import EvalConfig
from runtime.generation import GenerationConfig
from train.config import TrainConfig

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
RECIPES = sorted(p.stem for p in (CONFIGS.parent / "recipes").glob("*.yaml"))
FAMILIES = sorted(p.stem for p in (CONFIGS / "family").glob("*.yaml"))
MODELS = sorted(p.stem for p in (CONFIGS / "model").glob("*.yaml"))

for name, node in (("train_schema", TrainConfig), ("eval_schema", EvalConfig), ("data_gen_schema", DataGenConfig),
                   ("generation_schema", GenerationConfig)):
    ConfigStore.instance().store(name=name, node=node)


def load(config: str, overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        return compose(config_name=config, overrides=overrides)


def test_recipe_set_is_complete():
    assert {"smollm2_cpu_lora", "qwen2_5_lora", "qwen3_lora", "lfm2_lora"} <= set(RECIPES)


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_composes_and_starts_with_its_command(recipe):
    text = (CONFIGS.parent / "recipes" / f"{recipe}.yaml").read_text()
    assert f"python -m train +recipe={recipe}" in text.split("defaults")[0]
    cfg = OmegaConf.to_object(load("train", [f"+recipe={recipe}"]))
    assert isinstance(cfg, TrainConfig) and cfg.output_dir.endswith(recipe)


@pytest.mark.parametrize("family", FAMILIES)
def test_family_composes(family):
    overrides = [f"family={family}", "training.max_steps=8"] + (["family.path=/some/model"] if family == "hf" else [])
    cfg = OmegaConf.to_object(load("train", overrides))
    assert cfg.family.format and cfg.family.lora_targets


@pytest.mark.parametrize("model", MODELS)
def test_eval_model_configs_compose_and_bind(model):
    cfg = load("eval", [f"model={model}"] + (["model.path=/some/model"] if model in ("hf", "llamacpp") else []))
    config = OmegaConf.to_object(cfg)
    assert isinstance(config, EvalConfig)
    target = get_class(cfg.model._target_)
    kwargs = {k: v for k, v in OmegaConf.to_container(cfg.model).items() if k != "_target_"}
    inspect.signature(target).bind(**kwargs)      # every key is an argument of the class it builds
    if model == "symbolic":
        assert instantiate(cfg.model).name == "symbolic"


@pytest.mark.parametrize("model", [m for m in MODELS if m != "hf" and (CONFIGS / "family" / f"{m}.yaml").exists()])
def test_a_family_is_described_once(model):
    """Base model, format and dtype of a family live in configs/family/<name>.yaml only: the eval model
    config composes that file (the one training reads) and restates none of them."""
    raw = yaml.safe_load((CONFIGS / "model" / f"{model}.yaml").read_text())
    assert not {k for k in ("path", "format", "dtype") if raw.get(k) is not None}, "restated in configs/model"
    family = yaml.safe_load((CONFIGS / "family" / f"{model}.yaml").read_text())
    composed = load("eval", [f"model={model}"]).model.family
    assert {k: composed[k] for k in ("path", "format", "dtype")} == {k: family[k] for k in ("path", "format", "dtype")}


def test_offline_default_model_instantiates():
    model = instantiate(load("eval", ["model=smollm2"]).model)
    assert model.name == "smollm2" and model.fmt.name == "generic"


def test_data_gen_config_composes():
    assert isinstance(OmegaConf.to_object(load("data_gen", [])), DataGenConfig)


def test_bad_combinations_fail_at_parse_time():
    from toolcore.errors import ToolkitError

    with pytest.raises(ToolkitError, match="family.format"):
        OmegaConf.to_object(load("train", ["family.format=chatgpt"]))
    with pytest.raises(ToolkitError, match="max_steps"):
        OmegaConf.to_object(load("train", ["training.max_steps=-1", "training.epochs=0"]))
    with pytest.raises(ToolkitError, match="data.category_weights"):
        OmegaConf.to_object(load("train", ["training.max_steps=8", "++data.category_weights={single: 1, multi2: -1}"]))
    with pytest.raises(ToolkitError, match="pad_to_multiple_of"):
        OmegaConf.to_object(load("train", ["training.max_steps=8", "training.pad_to_multiple_of=0"]))


def test_generation_settings_come_from_the_engine_dataclass_and_a_misspelt_one_fails():
    """configs/model/hf.yaml restates no decoding default: model.generation is GenerationConfig's typed node,
    so every field can be overridden (not only those a yaml once listed) and a typo is refused by name."""
    assert "generation" not in yaml.safe_load((CONFIGS / "model" / "hf.yaml").read_text())
    generation = load("eval", ["model=smollm2", "model.generation.temperature=0.2"]).model.generation
    assert OmegaConf.to_object(generation) == GenerationConfig(temperature=0.2)
    with pytest.raises(Exception, match="next_call_prob"):
        load("eval", ["model=smollm2", "model.generation.next_call_prob=0.1"])
    with pytest.raises(Exception, match="batch_size"):
        load("eval", ["model=smollm2", "model.generation.batch_size=many"])


def test_the_configuration_reference_is_current():
    """docs/configuration.md is generated from the config dataclasses (scripts/config_reference.py)."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "scripts/config_reference.py", "--check"], cwd=CONFIGS.parent,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
