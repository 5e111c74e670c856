"""How many steps fit a time budget on this machine (`training.time_budget_minutes`).

A CPU recipe sized in steps is sized for one machine: `smollm2_cpu_lora`'s 288 steps took 20.6 minutes
on one 2-core machine and 12.6 on another, where 576 steps fit the same 25 minutes. With a budget, a
few forward/backward passes on real training batches (bf16 autocast as in training, gradients thrown
away, weights untouched) measure this machine's seconds per token; the run then takes as many of its
shuffled examples, one pass, as those seconds allow, and `max_steps` follows. The validation passes
come on top of the budget (two of them: halfway and at the end). Six timed batches are a noisy
estimate (a whole run took 0.91x of it on one machine, about 1.2x on another), so the plan takes
them as they are and `BudgetGuard` keeps a run inside 1.1x its budget: a run that falls behind its
plan is shortened ahead of time with its learning-rate schedule stretched to end at the new last step (a
run cut off at the guard alone kept 29% of its peak rate on a machine that slowed mid-run), lengthened
again up to its plan when the machine is fast again (a test run beside the first minutes of a demo
otherwise cost it 43 of its 506 steps for good), and one still
over at 1.1x stops there, through the Trainer's own stop: that step is validated and saved, and
the best checkpoint is kept.
"""

from __future__ import annotations

import random
import time
from contextlib import nullcontext
from functools import partial
from typing import Any, Callable

from transformers import TrainerCallback

from toolcore.errors import ToolkitError

CALIBRATION_BATCHES = 6     # timed, after one untimed warm-up batch
# the plan takes the timed passes' estimate as it is: a whole run's steps took 0.91x of it on one
# 2-core machine (smollm2_cpu_lora, 365 steps) and about 1.2x on another (a test run beside it inflated
# that figure), so no fixed factor fits both; the guard bounds the slow side instead
GUARD = 1.1                 # a run stops once its training loop has taken this many times its budget
# how often (in steps) a run projects its end, from the seconds per token its last REPLAN_EVERY steps took
# (a machine that slows mid-run is seen at once; a window with a validation pass in it is skipped)
REPLAN_EVERY = 10
# a shortened run is lengthened again (up to its plan) when the projection gains this share of its steps
REGAIN = 0.05


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
    """Keeps the training loop (validation included) inside GUARD times the budget's `minutes`, where the
    plan was too optimistic for this machine. Every REPLAN_EVERY steps it projects the end from the time
    those steps took per token they trained (`work`, a counter of tokens; each step left costs
    `work_per_step`, the plan's mean), or per step without `work`; where that passes the limit, the
    run's last step (`end`) moves to what fits and the learning-rate schedule, when it is one of
    transformers' that take `num_training_steps` (cosine, linear, polynomial...), is stretched to end
    there, so the shortened run still anneals; where a later window projects at least REGAIN more steps
    than `end`, `end` moves out again (at most to the plan). At `end`, or once the limit itself has
    passed, the run stops through the Trainer's own stop, as early stopping does: that step is validated
    (when the run validates) and saved, and the checkpoint `keep_checkpoint` names is kept as usual.
    `stopped_at` is that step (None when the plan fit). `clock` is for tests."""

    def __init__(self, minutes: float, evaluating: bool, clock: Callable[[], float] = time.perf_counter,
                 work: Callable[[], float] | None = None, work_per_step: float = 1.0):
        self.seconds, self.evaluating, self.clock = minutes * 60 * GUARD, evaluating, clock
        # what a window's time is divided by: the tokens trained so far (`work`; a planned step costs
        # `work_per_step` of them on average), or, without `work`, the steps. Length-grouped batches
        # differ in tokens, and ten steps' time read per step swung the projection: an earlier run
        # moved its end 14 times in 210 steps, 6 back up (between 277 and 341), its learning rate with
        # it; read per token, two runs on that machine moved it 4 and 11 times, 0 and 1 back up
        self.work, self.work_per_step = work, work_per_step if work else 1.0
        self.t0 = clock()
        # (step, elapsed, work) where the current window began
        self.window: tuple[int, float, float] = (0, 0.0, 0.0)
        self.evaluated = False                          # a validation pass fell inside the window
        self.end: int | None = None
        self.stopped_at: int | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.t0 = self.clock()
        self.window = (state.global_step, 0.0, self.done(state))    # a resumed run times its own steps

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.evaluated = True

    def on_step_end(self, args: Any, state: Any, control: Any, lr_scheduler: Any = None, **kwargs: Any) -> Any:
        step, elapsed = state.global_step, self.clock() - self.t0
        if self.stopped_at is not None or step >= state.max_steps:
            return control
        since, began, worked = self.window
        if step - since >= REPLAN_EVERY:
            done = self.done(state)
            per_unit = (elapsed - began) / (done - worked) if done > worked else 0.0
            per_step, clean = per_unit * self.work_per_step, not self.evaluated
            self.window, self.evaluated = (step, elapsed, done), False
            fits = step + int(max(0.0, self.seconds - elapsed) / per_step) if per_step > 0 else state.max_steps
            end = self.end or state.max_steps
            behind = fits < end
            # a machine that slowed for a while (another job beside the run) and is fast again gets its
            # steps back, never more than planned, and only for a clear gain: the schedule moves rarely
            regained = self.end is not None and min(fits, state.max_steps) >= end * (1 + REGAIN)
            if clean and (behind or regained):
                self.end = max(step, fits) if fits < state.max_steps else None
                stretched = stretch_schedule(lr_scheduler, self.end or state.max_steps)
                print(f"time budget: {'behind' if behind else 'back on'} the plan at step {step}: the run ends "
                      f"at step {self.end or state.max_steps} of {state.max_steps}"
                      + (", its learning rate annealing there" if stretched else ""), flush=True)
        if elapsed > self.seconds or (self.end is not None and step >= self.end):
            self.stopped_at = step
            control.should_training_stop = control.should_save = True
            control.should_evaluate = self.evaluating
            print(f"time budget: stopped at step {step} of {state.max_steps} ({elapsed / 60:.1f} min)", flush=True)
        return control

    def done(self, state: Any) -> float:
        """How far the run has got in the guard's unit: tokens trained (`work`) or steps."""
        return self.work() if self.work else float(state.global_step)


def stretch_schedule(scheduler: Any, end: int) -> bool:
    """Make a LambdaLR built by transformers' `get_scheduler` (its factors are partials that take
    `num_training_steps`) reach its end at step `end`; False where the schedule has no such factor."""
    factors = getattr(scheduler, "lr_lambdas", None) or []
    if not factors or not all(isinstance(f, partial) and "num_training_steps" in f.keywords for f in factors):
        return False
    scheduler.lr_lambdas = [partial(f.func, *f.args, **{**f.keywords, "num_training_steps": end}) for f in factors]
    return True


def check_budget(minutes: float | None, world_size: int) -> None:
    if minutes is not None and world_size > 1:
        # every rank would measure its own speed and could pick a different step count: the
        # collective calls of data-parallel training would then wait on each other forever
        raise ToolkitError("a time budget is measured by one process; this run has several",
                           field="training.time_budget_minutes", fix="set training.max_steps for data-parallel runs")
