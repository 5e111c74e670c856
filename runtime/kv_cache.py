"""A KV cache that does not copy itself every token.

`DynamicCache` grows by `torch.cat`, which copies every layer's whole key/value history at each
decoding step: measured here, 71% of a batch-16 SmolLM2 decode step. `GrowingLayer` writes into a
buffer that doubles when full and hands out views, so a step copies only the new token's states.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

MIN_CAPACITY = 256


def common_prefix(a: Sequence[int], b: Sequence[int], limit: int | None = None) -> int:
    """How many leading ids `a` and `b` share (at most `limit`)."""
    m = min(len(a), len(b)) if limit is None else min(limit, len(a), len(b))
    if m <= 0:
        return 0
    differ = np.flatnonzero(np.asarray(a[:m]) != np.asarray(b[:m]))    # prompts of thousands of ids
    return int(differ[0]) if differ.size else m


class GrowingLayer(DynamicLayer):
    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        super().lazy_initialization(key_states, value_states)
        self._k: torch.Tensor | None = None
        self._v: torch.Tensor | None = None
        self._n = 0

    def _view(self) -> None:
        self.keys = self._k[..., : self._n, :]
        self.values = self._v[..., : self._n, :]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        new = key_states.shape[-2]
        if self._k is None or self._n + new > self._k.shape[-2]:
            cap = max(MIN_CAPACITY, 2 * (self._n + new))
            # one dtype for both (under bf16 autocast values leave v_proj in bf16, keys leave RoPE in fp32)
            dtype = self._k.dtype if self._k is not None else torch.promote_types(key_states.dtype, value_states.dtype)
            k = key_states.new_empty(*key_states.shape[:-2], cap, key_states.shape[-1], dtype=dtype)
            v = value_states.new_empty(*value_states.shape[:-2], cap, value_states.shape[-1], dtype=dtype)
            if self._n:
                k[..., : self._n, :] = self._k[..., : self._n, :]
                v[..., : self._n, :] = self._v[..., : self._n, :]
            self._k, self._v = k, v
        self._k[..., self._n:self._n + new, :] = key_states
        self._v[..., self._n:self._n + new, :] = value_states
        self._n += new
        self._view()
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self._n if self.is_initialized else 0

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self.is_initialized and self._k is not None:
            self._k, self._v = self._k[indices], self._v[indices]
            self._view()

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self.batch_select_indices(beam_idx)

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove < 0 and self.is_initialized:
            self._n = max(0, self._n + tokens_to_remove)
            self._view()

    def reset(self) -> None:
        self._k = self._v = None
        self._n = 0
        super().reset()


def cast_cache(cache: DynamicCache, dtype: torch.dtype) -> None:
    """Keys and values in `dtype` (after a bf16-autocast prefill, before fp32 decoding)."""
    for layer in cache.layers:
        if isinstance(layer, GrowingLayer) and getattr(layer, "_k", None) is not None:
            if layer._k.dtype != dtype:
                layer._k, layer._v = layer._k.to(dtype), layer._v.to(dtype)
                layer._view()
        elif getattr(layer, "keys", None) is not None and layer.keys.dtype != dtype:
            layer.keys, layer.values = layer.keys.to(dtype), layer.values.to(dtype)


def new_cache(config: Any) -> DynamicCache:
    """A DynamicCache for `config` whose full-attention layers grow in place (others stay as they are)."""
    cache = DynamicCache(config=config)
    cache.layers = [GrowingLayer() if type(layer) is DynamicLayer else layer for layer in cache.layers]
    return cache


class PrefixStore:
    """Keys and values of prompts already prefilled, for later prompts that start the same way.

    Each entry is one prompt's ids and its per-layer (1, kv_heads, tokens, head_dim) keys and values.
    Causal attention makes the states of the first n tokens depend on those n tokens only, so any
    common start of an entry and a new prompt can be copied instead of computed. Least recently used
    entries go first once the stored tokens pass `max_tokens`.
    """

    def __init__(self, max_tokens: int):
        from collections import OrderedDict

        self.max_tokens = max_tokens
        self.entries: OrderedDict[tuple[int, ...], list[tuple[torch.Tensor, torch.Tensor]]] = OrderedDict()
        self.tokens = 0
        self.hits = 0            # tokens served from the store (not computed)

    def lookup(self, ids: list[int], min_len: int = 1, count: bool = True) -> tuple[int, Any]:
        """(n, entry): the longest stored start of `ids`, at most len(ids) - 1 tokens (the last one
        must be fed to get logits); (0, None) below `min_len`."""
        best, key = 0, None
        limit = len(ids) - 1
        for k in self.entries:
            n = common_prefix(k, ids, limit)
            if n > best:
                best, key = n, k
        if key is None or best < min_len:
            return 0, None
        self.entries.move_to_end(key)
        self.hits += best if count else 0
        return best, self.entries[key]

    def add(self, ids: list[int], kv: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        key = tuple(ids)
        if key in self.entries:
            self.entries.move_to_end(key)
            return
        if len(key) > self.max_tokens:
            return
        for k in [k for k in self.entries if len(k) < len(key) and key[:len(k)] == k]:
            self.tokens -= len(k)       # a start of the new entry: it serves every lookup the old one did
            del self.entries[k]
        self.entries[key] = kv
        self.tokens += len(key)
        while self.tokens > self.max_tokens:
            old, _ = self.entries.popitem(last=False)
            self.tokens -= len(old)
