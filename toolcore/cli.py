"""Hydra entry points for every stage, with one-line errors.

`hydra_main("eval", task)` runs `task(cfg)` under `@hydra.main` with `configs/<name>.yaml`, so
overrides, multiruns (`-m`) and launchers (`hydra/launcher=submitit_slurm`) work as usual. Before
that, a plain run composes the config once to catch a bad override (a key that does not exist, a
wrong type) and reports it in one line naming the config file and the key, instead of Hydra's
multi-line report. A `ToolkitError` raised by the task is printed the same way (exit code 2), also
when Hydra raised it while instantiating a config node (`hydra.utils.instantiate(cfg.model)` wraps
whatever the constructor raises in a multi-line `InstantiationException`: a bad model.path, a folder
that is not an adapter, a GPU that is not there). Any other instantiation failure is one line too,
naming the config node and the target; HYDRA_FULL_ERROR=1 still gives the whole traceback.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any, Callable

# the stages' configs and recipes ship inside the package (a checkout links configs/ and recipes/ here)
CONFIG_DIR = Path(__file__).resolve().parent / "configs"


def one_line(exc: BaseException) -> str:
    text = str(exc) + ("\n" + str(exc.__cause__) if exc.__cause__ else "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    keep = [ln for ln in lines if not ln.startswith(("full_key:", "object_type=", "reference_type="))]
    return "; ".join(keep[:3]) or type(exc).__name__


def toolkit_cause(exc: BaseException):
    """The ToolkitError an exception was raised from (directly or through wrappers), or None."""
    from .errors import ToolkitError

    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, ToolkitError):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def instantiation_line(exc: BaseException) -> str:
    """One line for an InstantiationException whose cause is not a ToolkitError: the config node
    (Hydra's `full_key`), the target and the underlying error's first line."""
    text = str(exc)
    node = re.search(r"^full_key: (\S+)", text, re.M)
    target = re.search(r"target '([^']+)'", text)
    cause = exc.__cause__
    what = f"{type(cause).__name__}: {(str(cause).strip().splitlines() or [''])[0]}" if cause else one_line(exc)
    field = node.group(1) if node else "model"
    return (f"field '{field}': cannot create {target.group(1) if target else 'it'}: {what} "
            f"(fix: check the {field}.* settings; HYDRA_FULL_ERROR=1 shows the traceback)")


def entry_module(config_name: str) -> str:
    """The module the user ran (`train.detector`, `data_gen.speech`), for hints: config names differ."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return spec.name.removesuffix(".__main__") if spec and spec.name else config_name


def config_error_line(config_name: str, exc: BaseException) -> str:
    """One line for an OmegaConf error met while the task reads its config (a mandatory `???` value
    left unset, a value of the wrong type): the config file and the key."""
    from omegaconf.errors import MissingMandatoryValue

    key = getattr(exc, "full_key", None) or ""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    fix = f"set it on the command line: {key}=..." if isinstance(exc, MissingMandatoryValue) and key else \
        f"`python -m {entry_module(config_name)} --cfg job` prints every key"
    return f"configs/{config_name}.yaml: " + (f"field '{key}': " if key else "") + f"{first} (fix: {fix})"


# config keys that were renamed: an override of the old name is refused naming the new one
RENAMED = {"data_gen": {"general": "schema_data"}}


def renamed_key(config_name: str, overrides: list[str]) -> str | None:
    for o in overrides:
        key = o.split("=")[0].lstrip("+~")
        for old, new in RENAMED.get(config_name, {}).items():
            if key == old or key.startswith(old + "."):
                return (f"configs/{config_name}.yaml: override '{o}': '{old}' is now '{new}' "
                        f"(fix: {new + key[len(old):]}={o.partition('=')[2]})")
    return None


def check_overrides(config_name: str, overrides: list[str]) -> str | None:
    """Compose once; return a one-line problem description, or None when the overrides are fine."""
    if problem := renamed_key(config_name, overrides):
        return problem
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    plain = [o for o in overrides if not o.startswith(("hydra.", "hydra/", "~hydra", "+hydra"))]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            compose(config_name=config_name, overrides=plain)
    except Exception as e:  # any composition failure is the user's override: say which and why
        # the override whose key the message names; the longest, so `model.generation.x=1` and not `model=hf`
        named = [o for o in plain if o.split("=")[0].lstrip("+~") in str(e)]
        bad = max(named, key=lambda o: len(o.split("=")[0]), default=None)
        what = f"override '{bad}'" if bad else "overrides"
        hint = ""
        if "not in struct" in str(e) or "Could not override" in str(e):
            key = bad.split("=")[0].lstrip("+~") if bad else ""
            close = close_keys(config_name, [o for o in plain if o != bad], key) if key else []
            hint = (f" (fix: did you mean {' or '.join(close)}? `python -m {entry_module(config_name)} --cfg job` "
                    "prints every key)") if close else \
                f" (fix: check the key name; `python -m {entry_module(config_name)} --cfg job` prints every key)"
        # Hydra's advice to append with `+key` would add a key no code reads: the key name is what is wrong
        text = "; ".join(part for part in one_line(e).split("; ") if not part.startswith("To append to your config"))
        return f"configs/{config_name}.yaml: {what}: {text}{hint}"
    finally:
        GlobalHydra.instance().clear()
    return None


def config_keys(node: Any, prefix: str = "") -> list[str]:
    """Every dotted key of a composed config, values left unresolved."""
    from omegaconf import DictConfig

    keys = []
    for k in node.keys() if isinstance(node, DictConfig) else []:
        full = f"{prefix}{k}"
        keys.append(full)
        child = node._get_node(k)
        if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none():
            keys += config_keys(child, full + ".")
    return keys


def close_keys(config_name: str, overrides: list[str], key: str, n: int = 3) -> list[str]:
    """The real keys closest to a misspelt `key`: among its siblings first (`model.generation.tempreature`
    -> `model.generation.temperature`), then anywhere. [] where the rest does not compose either."""
    import difflib

    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            keys = [k for k in config_keys(compose(config_name=config_name, overrides=overrides))
                    if not k.startswith("hydra")]
    except Exception:
        return []
    finally:
        GlobalHydra.instance().clear()
    parent, _, name = key.rpartition(".")
    siblings = {k.rpartition(".")[2]: k for k in keys if k.rpartition(".")[0] == parent}
    near = [siblings[m] for m in difflib.get_close_matches(name, list(siblings), n=n, cutoff=0.78)]
    anywhere = {k.rpartition(".")[2]: k for k in keys}        # a key put under the wrong parent
    return near or [anywhere[m] for m in difflib.get_close_matches(name, list(anywhere), n=n, cutoff=0.85)]


def informational(argv: list[str]) -> bool:
    """Whether the command only asks Hydra about the config (--cfg, --help, ...) and runs nothing."""
    return any(a.startswith(("--cfg", "-c", "--help", "-h", "--info", "--hydra-help", "--shell-completion")) for a in argv)


def missing_launcher(argv: list[str]) -> str | None:
    """The one-line error for a Slurm launcher (`hydra/launcher=submitit_slurm`, `+launcher=slurm_1gpu`) asked
    for without Hydra's submitit plugin installed: Hydra would only say it cannot find the config."""
    import importlib.util

    if not any(re.match(r"^\+*(hydra/launcher=submitit|launcher=slurm)", a) for a in argv):
        return None
    try:
        if importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is not None:
            return None
    except ModuleNotFoundError:
        pass
    from .extras import install_line

    return ("a Slurm launcher needs Hydra's submitit plugin, which the [cluster] extra installs "
            f"(fix: {install_line('cluster')})")


def hydra_main(config_name: str, task: Callable[[Any], Any]) -> None:
    import hydra
    from hydra.errors import InstantiationException
    from omegaconf.errors import OmegaConfBaseException

    from .errors import ToolkitError
    from .extras import missing_extra

    argv = sys.argv[1:]
    if any(a in ("--help", "-h") for a in argv):
        from .stage_help import render_help

        print(render_help(config_name, getattr(sys.modules.get("__main__"), "__doc__", None) or ""))
        raise SystemExit(0)
    line = missing_launcher(argv)
    if line:
        print(f"error: {line}", file=sys.stderr)
        raise SystemExit(2)
    multirun = any(a in ("-m", "--multirun") for a in argv)
    if not multirun and not informational(argv):
        problem = check_overrides(config_name, [a for a in argv if not a.startswith("-")])
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            raise SystemExit(2)

    @hydra.main(config_path=str(CONFIG_DIR), config_name=config_name, version_base="1.3")
    def _main(cfg: Any) -> Any:
        try:
            return task(cfg)
        except ToolkitError as e:
            print(f"error: {e}", file=sys.stderr)
            raise SystemExit(2) from None
        except ModuleNotFoundError as e:      # an optional part that was not installed: name its extra
            line = missing_extra(e)
            if line is None or os.environ.get("HYDRA_FULL_ERROR") == "1":
                raise
            print(f"error: {line}", file=sys.stderr)
            raise SystemExit(2) from None
        except InstantiationException as e:
            cause = toolkit_cause(e)
            if cause is None and os.environ.get("HYDRA_FULL_ERROR") == "1":
                raise
            print(f"error: {cause if cause is not None else instantiation_line(e)}", file=sys.stderr)
            raise SystemExit(2) from None
        except OmegaConfBaseException as e:   # the config itself: a `???` left unset, a wrong type
            if os.environ.get("HYDRA_FULL_ERROR") == "1":
                raise
            print(f"error: {config_error_line(config_name, e)}", file=sys.stderr)
            raise SystemExit(2) from None

    _main()
