"""Drafts for drafted decoding: tokens the next step can check in the same forward pass, proposed from
what is already known, so that a token the model would write anyway costs no pass of its own.

Two sources, tried in this order:
- "grammar": inside a call, the longest continuation every valid call starts with (the rest of a tool's
  name, key names, punctuation), as token ids (xgrammar's jump-forward tokens, which hold back a last
  token that a longer token could absorb).
- "lookup" (opt-in, `model.draft_lookup`): inside a call, the ids that followed the newest n-gram written
  (3 ids, then 2, then 1) where it occurs in the conversation's own words (the request and earlier turns, not the system prompt and
  tools): a value copied from the request (prompt lookup decoding, as llama.cpp's lookup decoding and
  transformers' `prompt_lookup_num_tokens`). Measured here, lookup over everything (the tools' JSON, the
  call being written) proposed mostly the call's own syntax again and the model took about 5% of it;
  over the request alone it took 13%. On a CPU, where a pass over two ids costs nearly twice one, that
  still costs more than it saves (hackathon 30, q8_0, tools kept: p95 604-616 ms with it, 537-539
  without), so it is off unless turned on (a GPU pays almost nothing for a few more ids in a pass).

A draft is only a proposal. The engine feeds it after the newest id, reads the logits at every drafted
position and keeps the longest prefix the model itself chooses there under the grammar (greedy: the same
argmax; sampling: a sample of the model's own distribution equal to the draft token), so what is written
is what plain decoding writes; the rest is cut from the cache. Measured per source by `DraftStats`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

SOURCES = ("grammar", "lookup")


def grammar_draft(matcher: Any, limit: int) -> list[int]:
    """The ids the call grammar forces next (empty outside a call or where the model has a choice)."""
    if matcher is None or limit <= 0:
        return []
    return list(matcher.find_jump_forward_tokens()[:limit])


def lookup_draft(source: list[int], recent: list[int], limit: int, max_ngram: int = 3, min_ngram: int = 1) -> list[int]:
    """What followed, in `source`, the newest occurrence of the last `max_ngram` (then fewer, down to
    `min_ngram`) ids of `recent`."""
    if limit <= 0 or not source or not recent:
        return []
    arr = np.asarray(source)
    ends = np.flatnonzero(arr[:-1] == recent[-1])[::-1]       # where the newest id occurs, newest first
    for n in range(min(max_ngram, len(recent)), min_ngram - 1, -1):
        tail = np.asarray(recent[-n:])
        for end in ends:
            begin = end - n + 1
            if begin >= 0 and np.array_equal(arr[begin:end + 1], tail):
                return source[end + 1:end + 1 + limit]
    return []


@dataclass
class DraftStats:
    """Drafted ids proposed and accepted, per source. Every accepted id is a forward pass plain decoding
    would have spent."""

    proposed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SOURCES, 0))
    accepted: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SOURCES, 0))

    def as_dict(self) -> dict[str, int]:
        """Flat counters (eval sums them over batches): draft_<source>_proposed / _accepted."""
        return {f"draft_{s}_{k}": getattr(self, k)[s] for s in SOURCES for k in ("proposed", "accepted")}

    def shares(self) -> dict[str, float]:
        """The share of each source's drafted ids that the model took."""
        return {s: round(self.accepted[s] / self.proposed[s], 3) if self.proposed[s] else 0.0 for s in SOURCES}
