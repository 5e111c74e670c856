"""How many steps fit a time budget on this machine (`training.time_budget_minutes`).

A CPU recipe sized in steps is sized for one machine: `smollm2_cpu_lora`'s 288 steps took 20.6 minutes
on one 2-core machine and 12.6 on another, where 576 steps fit the same 25 minutes. With a budget, a
few forward/backward passes on real training batches (bf16 autocast as in training, gradients thrown
away, weights untouched) measure this machine's seconds per token; the run then takes as many of its
shuffled examples, one pass, as those seconds allow, and `max_steps` follows. The validation passes
come on top of the budget (two of them: halfway and at the end). Six timed batches are a noisy
estimate (a whole run took 0.91x of it on one machine, about 1.2x on another), so the plan takes
them as they are and `BudgetGuard` stops a run that overshoots at 1.1x its budget, through the
Trainer's own stop: that step is validated and saved, and the best checkpoint is kept.
"""

from __future__ import annotations

import random
import time
from contextlib import nullcontext
from typing import Any

from transformers import TrainerCallback

from toolcore.errors import ToolkitError

CALIBRATION_BATCHES = 6     # timed, after one untimed warm-up batch
# the plan takes the timed passes' estimate as it is: a whole run's steps took 0.91x of it on one
# 2-core machine (smollm2_cpu_lora, 365 steps) and about 1.2x on another (a test run beside it inflated
# that figure), so no fixed factor fits both; the guard bounds the slow side instead
GUARD = 1.1                 # a run stops once its training loop has taken this many times its budget


def seconds_per_token(trainer: Any, dataset: Any, batch_size: int, *, bf16: bool, seed: int) -> float:
    """Seconds of forward + backward per token on this machine, from a few length-grouped batches of
    randomly picked rows of `dataset` through `trainer`'s own loss. The gradients are zeroed afterwards:
    training starts from the same weights and optimizer state as without the measurement."""
    import torch

    model = trainer.model
    model.train()
    device = next(p for p in model.parameters() if p.requires_grad).device
    # batches of like lengths, as training serves them (length-grouped): random rows would time padding
    picked = random.Random(seed).sample(range(len(dataset)), min(len(dataset), batch_size * (CALIBRATION_BATCHES + 1)))
    picked.sort(key=lambda i: dataset[i]["length"])
    batches = [picked[k:k + batch_size] for k in range(0, len(picked), batch_size)]
    random.Random(seed).shuffle(batches)
    seconds = tokens = 0.0
    for k, rows in enumerate(batches):
        batch = trainer.data_collator([dataset[i] for i in rows])
        batch = {key: v.to(device) for key, v in batch.items()}
        autocast = torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else nullcontext()
        t0 = time.perf_counter()
        with autocast:
            loss = trainer.compute_loss(model, batch)
        loss.backward()
        if device.type == "cuda":
            torch.cuda.synchronize()
        if k:                        # the first pass pays for allocation and kernel choice
            seconds += time.perf_counter() - t0
            tokens += batch["input_ids"].numel()
        model.zero_grad(set_to_none=True)
    trainer.real_tokens = 0          # compute_loss counted the calibration's tokens
    return seconds / max(tokens, 1.0)


def steps_within(lengths: list[int], per_token: float, minutes: float, rows_per_step: int,
                 max_steps: int) -> int:
    """The most optimizer steps (at most `max_steps`, at least 1) whose examples - the first ones of
    `lengths`, one pass - take at most `minutes` at `per_token` seconds per token. Batches are
    length-grouped, so a step costs about its examples' own tokens."""
    budget = minutes * 60.0
    spent, steps = 0.0, 0
    for start in range(0, len(lengths) - rows_per_step + 1, rows_per_step):
        spent += sum(lengths[start:start + rows_per_step]) * per_token
        if spent > budget or steps >= max_steps:
            break
        steps += 1
    return max(steps, 1)


class BudgetGuard(TrainerCallback):
    """Stops training once the loop (validation included) has run GUARD times the budget's `minutes`,
    where the plan was too optimistic for this machine. It uses the Trainer's own stop, as early stopping does: the step it
    stops at is validated (when the run validates) and saved, and the best checkpoint is loaded at the
    end as usual. `stopped_at` is that step (None when the plan fit)."""

    def __init__(self, minutes: float, evaluating: bool):
        self.seconds, self.evaluating = minutes * 60 * GUARD, evaluating
        self.t0 = time.perf_counter()
        self.stopped_at: int | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.t0 = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if self.stopped_at is None and state.global_step < state.max_steps \
                and time.perf_counter() - self.t0 > self.seconds:
            self.stopped_at = state.global_step
            control.should_training_stop = control.should_save = True
            control.should_evaluate = self.evaluating
            print(f"time budget: stopped at step {state.global_step} of {state.max_steps} "
                  f"({(time.perf_counter() - self.t0) / 60:.1f} min)", flush=True)
        return control


def check_budget(minutes: float | None, world_size: int) -> None:
    if minutes is not None and world_size > 1:
        # every rank would measure its own speed and could pick a different step count: the
        # collective calls of data-parallel training would then wait on each other forever
        raise ToolkitError("a time budget is measured by one process; this run has several",
                           field="training.time_budget_minutes", fix="set training.max_steps for data-parallel runs")
