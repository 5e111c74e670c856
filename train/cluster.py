"""Training inside a Slurm job submitted by Hydra's submitit launcher (`-m hydra/launcher=submitit_slurm`, or
a `launcher=slurm_*` preset; docs/cluster.md).

Two things the job needs beyond a plain run:

- The process group. With `tasks_per_node = GPUs per node`, Slurm starts one process per GPU (srun) and
  each one runs the Hydra job; `distributed_from_slurm()` exports MASTER_ADDR, MASTER_PORT, RANK,
  WORLD_SIZE, LOCAL_RANK from the Slurm environment (submitit's TorchDistributedEnvironment: the first
  node of the allocation is the master, the port is derived from the job id), so the Trainer's
  accelerate state initialises torch.distributed (NCCL on GPUs, gloo on CPUs) on one node or many.
  Under torchrun / `accelerate launch` these variables are already set and are left alone.

- Preemption and timeouts. Slurm sends the job USR2 `signal_delay_s` before its time limit (and
  clusters that preempt can be set to send it too); submitit's handler then calls the launcher's
  `checkpoint()` (a DelayedSubmission of the same Hydra job), requeues the job and exits. Left alone,
  that exit would land in the middle of an optimizer step, and the requeued job would resume from the
  last periodic checkpoint. `PreemptionGuard` defers it instead: the signal only sets a flag; at the end
  of the current step (the flag agreed over all ranks, so every rank stops at the same step) the
  Trainer saves a checkpoint, `Preempted` is raised from the save callback (so no adapter of an unfinished
  run is written), and then submitit's own handler checkpoints and requeues. The requeued job is the
  same Hydra job in the same run folder (same run.json), so `train` resumes from that checkpoint
  (train/run.py `fit`) and ends with the adapter an uninterrupted run makes (tests/test_cluster.py).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Any, Callable

from transformers import TrainerCallback


class Preempted(Exception):
    """Raised out of the Trainer once the checkpoint asked for by a preemption/timeout signal is saved."""


def distributed_from_slurm() -> dict[str, str] | None:
    """In a Slurm job of more than one task, export torch.distributed's env:// variables from Slurm's; returns
    them (None when there is nothing to do: one task, not under Slurm, or a launcher already set RANK)."""
    if "RANK" in os.environ or int(os.environ.get("SLURM_NTASKS", "1")) <= 1 or "SLURM_JOB_ID" not in os.environ:
        return None
    from submitit.helpers import TorchDistributedEnvironment

    # one process per GPU: each sees every GPU of its node and picks cuda:LOCAL_RANK (the Trainer does),
    # so CUDA_VISIBLE_DEVICES is not narrowed to one device here
    env = TorchDistributedEnvironment().export(set_cuda_visible_devices=False)
    return {k: os.environ[k] for k in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK")
            if k in os.environ} | {"nodes": str(env._job_env.num_nodes)}


def _submitit_handler() -> Callable[..., Any] | None:
    """submitit's USR2 handler, when this process runs a submitit job (installed before the task starts)."""
    try:
        from submitit.core.job_environment import JobEnvironment, SignalHandler
    except ImportError:
        return None
    handler = signal.getsignal(JobEnvironment._usr_sig())
    return handler if isinstance(getattr(handler, "__self__", None), SignalHandler) else None


class PreemptionGuard(TrainerCallback):
    """Turn submitit's preemption/timeout signal into: finish the step, save a checkpoint, requeue."""

    def __init__(self) -> None:
        self.submitit_handler = _submitit_handler()
        self.signum: int | None = None
        self.stopped_at: int | None = None
        if self.submitit_handler is not None:
            from submitit.core.job_environment import JobEnvironment

            signal.signal(JobEnvironment._usr_sig(), self._note)

    @property
    def active(self) -> bool:
        return self.submitit_handler is not None

    def _note(self, signum: int, frame: Any = None) -> None:
        # a signal handler runs between two Python bytecodes, possibly mid-step: only note it here
        print(f"train: caught signal {signal.Signals(signum).name}: checkpoint after this step, then requeue",
              file=sys.stderr, flush=True)
        self.signum = signum

    def _agreed(self, args: Any) -> bool:
        """True when any rank caught the signal (ranks may catch it a step apart: all stop at the same step)."""
        flag = self.signum is not None
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            import torch

            t = torch.tensor([1.0 if flag else 0.0], device=args.device)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            flag = bool(t.item())
        return flag

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if self.active and self._agreed(args):
            self.stopped_at = state.global_step
            control.should_save = True
        return control

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if self.stopped_at is not None and state.global_step == self.stopped_at:
            raise Preempted(f"checkpoint-{state.global_step} saved")
        return control

    def requeue(self) -> None:
        """Hand over to submitit: checkpoint (the launcher's DelayedSubmission), `scontrol requeue`, exit.
        Other ranks wait to be ended by the requeue (as submitit's own handler has them do), bounded."""
        rank = int(os.environ.get("RANK", "0"))
        print(f"train: rank {rank} stopped at step {self.stopped_at}; requeueing", file=sys.stderr, flush=True)
        if rank == 0:
            self.submitit_handler(self.signum or signal.SIGUSR2, None)   # exits (SystemExit) after requeueing
        time.sleep(120)
        raise SystemExit(-1)
