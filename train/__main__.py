"""`python -m train +recipe=<name> [overrides]` (recipes/ holds the recipes; see configs/train.yaml)."""

from __future__ import annotations

import json
import sys

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from toolcore.cli import hydra_main, informational
from toolcore.errors import ToolkitError

from .config import TrainConfig

ConfigStore.instance().store(name="train_schema", node=TrainConfig)


# the keys that say how long to train, by their last part: a misspelt parent (`trainig.max_steps`) is left
# to the override check, which names the key meant
LENGTH_NAMES = {"max_steps", "epochs", "time_budget_minutes"}


def says_how_long(argv: list[str]) -> bool:
    """Whether the command line names a recipe or how long to train: without either, the library's one
    pass over every row of the default data would run for hours on a CPU."""
    keys = [a.split("=")[0].lstrip("+~") for a in argv if "=" in a]
    return any(k == "recipe" or k.rpartition(".")[2] in LENGTH_NAMES for k in keys)


def run(cfg) -> None:
    from .cluster import PreemptionGuard, Preempted, distributed_from_slurm
    from .run import train

    config: TrainConfig = OmegaConf.to_object(cfg)
    distributed_from_slurm()   # a Slurm job of several tasks: the process group comes from Slurm (train/cluster.py)
    guard = PreemptionGuard()  # a submitit job: on preemption/timeout, checkpoint after the step and requeue
    try:
        try:
            metrics = train(config, extra_callbacks=[guard] if guard.active else None)
        except Preempted:
            guard.requeue()
        keys = ("steps", "train_seconds", "train_loss", "real_tokens_per_second", "adapter_bytes", "final")
        print(json.dumps({k: metrics.get(k) for k in keys} | {"adapter": f"{config.output_dir}/adapter"}, indent=2))
    finally:
        leave_process_group()


def leave_process_group() -> None:
    """A data-parallel rank leaves its process group before the interpreter exits: left to static
    destruction, gloo's threads can abort a rank that finished its work ("terminate called without an
    active exception", seen once in the two-rank test under a loaded machine)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def main() -> None:
    """The console entry point (toolcall-train), the same as `python -m train`."""
    if not says_how_long(sys.argv[1:]) and not informational(sys.argv[1:]):
        no_length = ToolkitError("how long to train is not set", file="configs/train.yaml", field="training.epochs",
                                 fix="name a recipe, +recipe=smollm2_cpu_lora (22 minutes on a CPU) or "
                                     "+recipe=qwen2_5_lora ..., or set training.max_steps=N, training.epochs=E or "
                                     "training.time_budget_minutes=M")
        print(f"error: {no_length}", file=sys.stderr)
        raise SystemExit(2)
    hydra_main("train", run)


if __name__ == "__main__":
    main()
