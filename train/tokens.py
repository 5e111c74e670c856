"""Tool tokens: every marker of the family's format must be one token.

Qwen and LFM2 tokenizers already have theirs. For a model without them (SmolLM2) the missing
markers are added as special tokens, the embedding is resized, and the new rows are initialised
(mean of all rows, or mean of the rows of the marker's own words) and then trained alone through
peft's `trainable_token_indices` - the rest of the embedding matrix and the head stay frozen, so
the adapter stays small. `rows_apart` makes those few rows cheap to train (see there).
"""

from __future__ import annotations

import re
import types
from typing import Any

import torch
import torch.nn.functional as F

from toolcore.formats import ChatFormat


def is_single_token(tokenizer: Any, text: str) -> bool:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"]) == 1


def missing_tool_tokens(tokenizer: Any, fmt: ChatFormat) -> list[str]:
    return [t for t in fmt.tool_tokens if not is_single_token(tokenizer, t)]


def describe(token: str) -> str:
    """ "<|tool_call_start|>" -> "tool call start" """
    return " ".join(w for w in re.split(r"[^A-Za-z]+", token) if w)


def add_tool_tokens(model: Any, tokenizer: Any, fmt: ChatFormat, init: str = "description") -> list[int]:
    """Add the format's missing markers; returns the ids of the new rows (empty when none were needed)."""
    missing = missing_tool_tokens(tokenizer, fmt)
    if not missing:
        return []
    tokenizer.add_special_tokens({"additional_special_tokens": missing}, replace_extra_special_tokens=False)
    old_rows = model.get_input_embeddings().weight.shape[0]
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    emb = model.get_input_embeddings().weight
    new_ids = [tokenizer.convert_tokens_to_ids(t) for t in missing]
    with torch.no_grad():
        mean = emb[:old_rows].mean(0)
        for tok, idx in zip(missing, new_ids):
            if init == "description":
                ids = tokenizer(describe(tok), add_special_tokens=False)["input_ids"]
                emb[idx] = emb[ids].mean(0) if ids else mean
            else:
                emb[idx] = mean
        out = model.get_output_embeddings()
        if out is not None and out.weight.data_ptr() != emb.data_ptr():   # untied head: same rows there
            out.weight[new_ids] = out.weight[:old_rows].mean(0)
    return new_ids


def rows_apart(model: Any) -> int:
    """Train the new rows apart from the frozen matrix; returns how many layers now do.

    peft writes the trainable rows into a copy of the whole matrix on every forward (`index_copy`) and
    projects through that copy, so each step copies the 49k-row embedding and tied head twice and forms
    the gradient of every row, only to keep the new ones (on SmolLM2 a 49k x 576 matmul a step). Here
    the frozen matrix is used as it is and only the new rows' lookups and logits are computed from the
    trainable rows: the same outputs and gradients (tested), less time a step (docs/training.md). Merged
    or disabled adapters go through peft's own forward, and the saved adapter is peft's.
    """
    from peft.tuners.trainable_tokens.layer import TrainableTokensLayer

    layers = [m for m in model.modules() if isinstance(m, TrainableTokensLayer)]
    for layer in layers:
        layer.forward_adapters = types.MethodType(_forward_rows_apart, layer)
    return len(layers)


def _forward_rows_apart(layer: Any, x: Any, active_adapters: Any, *args: Any, **kwargs: Any) -> Any:
    base = layer.base_layer
    if layer.disable_adapters or not active_adapters or layer.merged:
        return type(layer).forward_adapters(layer, x, active_adapters, *args, **kwargs)
    layer._check_overlapping_tokens(active_adapters)
    weight = base.weight
    ids = torch.tensor([i for a in active_adapters for i in layer.token_indices[a]], device=weight.device)
    rows = torch.cat([layer.trainable_tokens_delta[a] for a in active_adapters]).to(weight.dtype)
    if isinstance(base, torch.nn.Embedding):
        slot = torch.full((base.num_embeddings,), -1, dtype=torch.long, device=x.device)
        slot[ids] = torch.arange(len(ids), device=x.device)
        slot = slot[x]                                   # the new row each token reads, or -1
        out = F.embedding(x, weight, padding_idx=base.padding_idx, max_norm=base.max_norm,
                          norm_type=base.norm_type, scale_grad_by_freq=base.scale_grad_by_freq, sparse=base.sparse)
        out = torch.where((slot >= 0).unsqueeze(-1), F.embedding(slot.clamp(min=0), rows).to(out.dtype), out)
        scale = layer._get_embed_scale()
        return out * scale.to(out.dtype) if scale is not None else out
    if isinstance(base, torch.nn.Linear):              # a head tied to the embedding (no bias, as in peft)
        out = F.linear(x, weight)
        return out.index_copy(-1, ids, F.linear(x, rows).to(out.dtype))
    return type(layer).forward_adapters(layer, x, active_adapters, *args, **kwargs)
