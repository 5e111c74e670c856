"""transformers' Trainer with seven additions, nothing home-made where the library does the job:

* the loss projects only labelled positions through the LM head: most tokens (system prompt, user,
  tool results) carry no label, and their vocabulary projection (49k x 576 for SmolLM2) would be
  thrown away. A pre-hook on the head keeps each row's own labelled positions (rows' labels sit at
  different positions: in length-grouped batches of four, the positions labelled in any row, which
  `logits_to_keep` took before, were 2.4x the labelled ones: the head's matmuls took 1.00 s of a 10 s
  step, now 0.26 s; docs/training.md);
* evaluation generates: validation conversations run through the live tool-loop engine and are
  scored with the call-matching F1 (`eval_f1`), which picks the best checkpoint;
* length-grouped batches served in shuffled order (train/sampler.py), not long-to-short runs;
* no attention mask for right-padded batches (causal masking alone gives the same logits on real
  tokens); a model with bidirectional attention over its prompt would need unmasked_right_padding=False;
* checkpoints without the resized embedding matrix (only LoRA and the new rows, as in adapter/);
* an optional `ddp_sync=false` negative control that trains data-parallel ranks without syncing;
* optional extra weight on the decision tokens (`decision_weight`): the first token of each assistant
  turn (a call or words) and the token right after each call closes (another call or the end of the
  turn): a few tokens of each call turn, and they decide how many calls a request gets.
"""

from __future__ import annotations

import contextlib
import functools
import time
from statistics import mean
from typing import Any, Sequence

import torch
from transformers import Trainer

from runtime.constrained import single_token_id
from runtime.engine import GenerationConfig, ToolLoopEngine
from toolcore.errors import ToolkitError
from toolcore.formats import ChatFormat
from toolcore.metric import call_f1
from toolcore.suites import Case
from toolcore.tokenize import IGNORE

from .sampler import ShuffledLengthGrouping


class ToolTrainer(ShuffledLengthGrouping, Trainer):
    def __init__(self, *args: Any, fmt: ChatFormat, f1_cases: Sequence[Case] = (), eval_max_new_tokens: int = 64,
                 labeled_lm_head: bool = True, ddp_sync: bool = True, unmasked_right_padding: bool = True,
                 decision_weight: float = 1.0, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.fmt = fmt
        self.f1_cases = list(f1_cases)
        self.eval_max_new_tokens = eval_max_new_tokens
        self.labeled_lm_head = labeled_lm_head
        self.ddp_sync = ddp_sync
        self.unmasked_right_padding = unmasked_right_padding
        self.decision_weight = decision_weight
        # the format's call-end token: the position after it chooses what comes next. A marker the
        # tokenizer splits into pieces has no such token (its last piece may end other text too), so
        # there only the turns' first tokens weigh more
        self.call_end_id = single_token_id(self.processing_class, fmt.call_end) if decision_weight != 1 else None
        # our loss is already a mean over the labelled tokens of the whole accumulated batch
        self.model_accepts_loss_kwargs = True
        self.real_tokens = 0
        self.f1_history: list[dict[str, float]] = []

    # ----- loss ---------------------------------------------------------------------------------
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs["labels"]
        self.real_tokens += int(inputs["attention_mask"].sum())
        target = labels[:, 1:]
        weight = self.decision_weights(inputs["input_ids"], labels) if self.decision_weight != 1 else None
        mask = target != IGNORE
        if self.labeled_lm_head:
            # the head gets only the hidden states whose next token carries a label (the last position
            # predicts nothing); the call still goes through the (DDP-)wrapped model's own forward, so
            # gradient sync stays armed
            at = torch.nn.functional.pad(mask, (0, 1))
            with labelled_rows_only(_unwrap(model).get_output_embeddings(), at):
                logits = model(input_ids=inputs["input_ids"], attention_mask=self.attention_mask(inputs),
                               **self.packed(inputs)).logits[0]
        else:
            logits = model(input_ids=inputs["input_ids"], attention_mask=self.attention_mask(inputs),
                           **self.packed(inputs)).logits[:, :-1][mask]
        loss = torch.nn.functional.cross_entropy(logits.float(), target[mask],
                                               reduction="sum" if weight is None else "none")
        if weight is not None:
            loss = (loss * weight[mask]).sum()
        denom = num_items_in_batch if num_items_in_batch is not None else mask.sum()
        loss = loss / denom.to(loss.device) if torch.is_tensor(denom) else loss / max(int(denom), 1)
        return (loss, None) if return_outputs else loss

    def decision_weights(self, input_ids: Any, labels: Any) -> Any:
        """Per target position (labels[:, 1:]): `decision_weight` where the token decides between a call
        and words or between another call and the end of the turn, else 1. The mean's denominator stays
        the labelled-token count, so the other tokens learn exactly as before."""
        before = labels[:, :-1] == IGNORE                 # the target opens an assistant turn
        if self.call_end_id is not None:
            before = before | (input_ids[:, :-1] == self.call_end_id)
        return torch.where(before, self.decision_weight, 1.0).to(torch.float32)

    @staticmethod
    def packed(inputs: dict[str, Any]) -> dict[str, Any]:
        """Position ids of packed rows (data.pack_requests; train/data.py packed_inputs)."""
        return {"position_ids": inputs["position_ids"]} if "position_ids" in inputs else {}

    def attention_mask(self, inputs: dict[str, Any]) -> Any:
        """None for right-padded rows of a causal LM: a real token only ever attends to earlier
        positions, which are all real, so the causal mask alone gives the same logits on every real
        token (tested) and attention takes its unmasked fast path (6% more tokens/s on CPU). Packed rows
        (data.pack_requests) take their 4D mask: each request sees the shared tools and itself."""
        if "packed_mask" in inputs:
            mask = inputs["packed_mask"]
            if getattr(_unwrap(self.model).config, "_attn_implementation", "sdpa") == "eager":
                # eager attention adds its mask to the scores: allowed 0, masked the most negative float
                return torch.zeros(mask.shape).masked_fill(~mask, torch.finfo(torch.float32).min)
            return mask
        mask = inputs["attention_mask"]
        right_padded = bool((mask[:, :-1] >= mask[:, 1:]).all())
        return None if self.unmasked_right_padding and right_padded else mask

    def training_step(self, model, inputs, num_items_in_batch=None):
        if self.ddp_sync or not hasattr(model, "no_sync"):
            return super().training_step(model, inputs, num_items_in_batch)
        with model.no_sync():      # forward and backward both inside: no gradient all-reduce at all
            return super().training_step(model, inputs, num_items_in_batch)

    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        """Checkpoints hold what adapter/ holds: LoRA plus the new token rows. peft's default
        ("auto") sees the resized vocabulary and stores the whole embedding and head in every
        checkpoint (a 246 MB file for SmolLM2), which the base model rebuilds on resume anyway."""
        model = self.accelerator.unwrap_model(self.model)
        if not hasattr(model, "peft_config"):
            return super()._save(output_dir, state_dict)
        save = model.save_pretrained
        model.save_pretrained = functools.partial(save, save_embedding_layers=False)
        try:
            super()._save(output_dir, state_dict)
        finally:
            del model.save_pretrained

    # ----- evaluation by generation -------------------------------------------------------------
    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval") -> dict[str, float]:
        metrics: dict[str, float] = {}
        if self.f1_cases:
            t0 = time.perf_counter()
            model = _unwrap(self.model)
            was_training = model.training
            model.eval()
            engine = ToolLoopEngine(model, self.processing_class, self.fmt,
                                    GenerationConfig(max_new_tokens=self.eval_max_new_tokens, batch_size=16))
            outs = engine.run([c.conversation for c in self.f1_cases])
            model.train(was_training)
            metrics[f"{metric_key_prefix}_f1"] = round(mean(call_f1(c.expected_calls, o.calls)
                                                            for c, o in zip(self.f1_cases, outs)), 4)
            metrics[f"{metric_key_prefix}_parse_failures"] = round(mean(bool(o.parse_failures) for o in outs), 4)
            metrics[f"{metric_key_prefix}_seconds"] = round(time.perf_counter() - t0, 1)
            self.f1_history.append({"step": self.state.global_step, **metrics})
        self.log(metrics)
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        return metrics


@contextlib.contextmanager
def labelled_rows_only(head: Any, mask: Any):
    """While open, `head` (the LM head) is handed only the hidden states where `mask` ([batch,
    positions]) is true, as one row: the logits come back [1, labelled, vocab]. A model that never calls
    its output embeddings with them is refused rather than scored on the wrong rows."""
    seen = []

    def gather(module, args):
        if args[0].shape[:2] != mask.shape:
            raise ToolkitError(f"the LM head got hidden states {tuple(args[0].shape)} for labels {tuple(mask.shape)}",
                               field="training.labeled_lm_head", fix="false for this model")
        seen.append(True)
        return (args[0][mask].unsqueeze(0), *args[1:])

    handle = head.register_forward_pre_hook(gather)
    try:
        yield
    finally:
        handle.remove()
    if not seen:
        raise ToolkitError("the model's forward never called its output embeddings",
                           field="training.labeled_lm_head", fix="false for this model")


def _unwrap(model: Any) -> Any:
    """The causal LM under DDP/accelerate and peft wrappers (LoRA layers stay injected inside it)."""
    while hasattr(model, "module"):
        model = model.module
    return model.get_base_model() if hasattr(model, "get_base_model") else model
