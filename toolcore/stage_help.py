"""`python -m <stage> --help`: the stage's own config groups and the keys people change most, the ones
its config dataclass marks (*), with their composed values. Hydra's own help lists every group of the
config folder (other stages' too) and no keys; `--hydra-help` still shows Hydra's flags."""

from __future__ import annotations

import textwrap
from typing import Any

import yaml

from .cli import CONFIG_DIR, entry_module
from .config_doc import rows

# groups a stage takes beside those its config's defaults list names: a recipe is added with +recipe=
ADDED_GROUPS = {"train": ["recipe"]}
CONSOLE = {"data_gen": "toolcall-data-gen", "train": "toolcall-train", "eval": "toolcall-eval", "serve": "toolcall-serve"}


def stage_groups(config_name: str) -> dict[str, Any]:
    """group -> its default option (None where it has none), from the stage's defaults list."""
    raw = yaml.safe_load((CONFIG_DIR / f"{config_name}.yaml").read_text()) or {}
    groups = {}
    for entry in raw.get("defaults", []):
        if isinstance(entry, dict):
            (group, option), = entry.items()
            if not group.startswith(("hydra", "override")):
                groups[group.removeprefix("optional ")] = option
    return groups | {g: None for g in ADDED_GROUPS.get(config_name, [])}


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONFIG_DIR / group).glob("*.yaml"))


def schema_class(config_name: str) -> type | None:
    """The config dataclass the stage registered as `<name>_schema` (its __main__ does on import)."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    try:
        return OmegaConf.get_type(ConfigStore.instance().load(f"{config_name}_schema.yaml").node)
    except Exception:
        return None


def composed_values(config_name: str) -> Any:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            return compose(config_name=config_name)
    except Exception:
        return None
    finally:
        GlobalHydra.instance().clear()


def render_help(config_name: str, description: str = "") -> str:
    from omegaconf import OmegaConf

    module = entry_module(config_name)
    console = f"   (or {CONSOLE[config_name]})" if config_name in CONSOLE else ""
    out = [f"usage: python -m {module} [key=value ...] [group=option ...] [-m for a sweep]{console}"]
    if description:
        out += ["", description.strip()]
    groups = stage_groups(config_name)
    if groups:
        out += ["", "config groups (group=option; a recipe: +recipe=NAME):"]
        for g, default in groups.items():
            listed = ", ".join(options(g)) or "-"
            out.append(f"  {g}: {listed}" + (f"   [default: {default}]" if default else ""))
    cls = schema_class(config_name)
    cfg = composed_values(config_name)
    marked = [(k, d, n) for k, _, d, n in rows(cls)] if cls else []
    marked = [(k, d, n.replace("(*)", "", 1).strip().replace("\\|", "|")) for k, d, n in marked if n.startswith("(*)")]
    if marked:
        out += ["", "keys people change most (every key: docs/configuration.md, or --cfg job):"]
        for key, default, note in marked:
            value = OmegaConf.select(cfg, key, default=None, throw_on_resolution_failure=False) if cfg is not None else None
            shown = (repr(OmegaConf.to_container(value, resolve=False)) if OmegaConf.is_config(value)
                     else repr(value)) if cfg is not None else default.strip("`")
            out.append(f"  {key}={shown}")
            out += textwrap.wrap(note, 100, initial_indent="      ", subsequent_indent="      ")
    out += ["", f"python -m {module} --cfg job prints the whole composed config; --hydra-help shows Hydra's flags."]
    return "\n".join(out)
