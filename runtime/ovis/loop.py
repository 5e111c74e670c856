"""The live crop loop: generate until `</tool_call>`, run the tool, feed its image (or its text) into the
context right after the call, and continue - from the KV cache: what was processed is never processed
again. Batched: rows pause at different steps, so each forward takes a block per row, right-aligned
(masked pads on the left); a row that feeds a crop sends [its last token, crop placeholders], the others
[their last token], finished rows a masked pad. Position ids count real tokens only, so a row's
positions are the ones a single unpadded sequence would have: `cache=False` recomputes the whole
sequence at every step instead (the reference the test compares against).

Streaming: `on_text(row, text)` is called with each decoded piece as it is generated, `on_event(row,
event)` with each tool call and its result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from toolcore.schema import ToolCall

from .chat import encode, merged
from .tools import CALL_END, CALL_START, ToolSet


@dataclass
class LoopResult:
    text: str = ""                                   # what the model wrote (calls included)
    calls: list[ToolCall] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)  # one per call: call, error, seconds, fed (image/text)
    tokens: list[int] = field(default_factory=list)  # generated token ids (tool insertions excluded)
    seconds: float = 0.0


@dataclass
class _Row:
    ids: list[int]
    images: list[Any]                 # every image of the sequence so far, in order (reference mode)
    view: Any                         # the image tools act on
    out: LoopResult
    pending: list[int] = field(default_factory=list)
    pending_images: list[Any] = field(default_factory=list)
    done: bool = False
    fed_from: int = 0                 # generated text up to here has been scanned for calls


class CropLoop:
    def __init__(self, model: Any, tokenizer: Any, adapter: Any, *, toolset: ToolSet | None = None,
                 max_new_tokens: int = 64, max_tool_calls: int = 3, tool_timeout_s: float | None = 5.0,
                 feed: str = "tool",
                 on_text: Callable[[int, str], None] | None = None, on_event: Callable[[int, dict], None] | None = None):
        self.model, self.tok, self.adapter = model, tokenizer, adapter
        self.toolset = toolset or ToolSet()
        self.max_new_tokens, self.max_tool_calls, self.timeout = max_new_tokens, max_tool_calls, tool_timeout_s
        # "tool": feed what the tool returns; "full": feed the whole image instead of any crop (the
        # no-zoom ablation: same model, same calls, no extra detail)
        self.feed = feed
        self.on_text, self.on_event = on_text, on_event
        self.eos = {tokenizer.convert_tokens_to_ids("<|im_end|>")} | ({tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set())
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    # ----- the public entry -------------------------------------------------------------------
    def run(self, prompts: Sequence[tuple], *, cache: bool = True) -> list[LoopResult]:
        """prompts: (prompt pieces ending with the assistant header, the image tools act on[, assistant text
        already written]) - the optional prefix is the start of the answer, continued as if generated
        (a call it opens is completed, run and fed back like any other)."""
        import torch

        t0 = time.perf_counter()
        rows = []
        for ps, view, *prefix in prompts:
            ids, _, images = encode(merged(list(ps)), self.tok, self.adapter)
            text = prefix[0] if prefix else ""
            ids += self.tok.encode(text, add_special_tokens=False) if text else []
            rows.append(_Row(ids, images, view, LoopResult(text=text)))
        with torch.no_grad():
            (self._run_cached if cache else self._run_reference)(rows)
        for r in rows:
            r.out.seconds = time.perf_counter() - t0
        return [r.out for r in rows]

    # ----- one generated token per row --------------------------------------------------------
    def _take(self, i: int, row: _Row, token: int) -> None:
        """Record a generated token; on `</tool_call>` run the tool and queue what is fed back."""
        row.out.tokens.append(token)
        row.ids.append(token)
        piece = self.tok.decode([token], skip_special_tokens=False)
        if token in self.eos:
            row.done = True
            return
        row.out.text += piece
        if self.on_text:
            self.on_text(i, piece)
        if len(row.out.tokens) >= self.max_new_tokens:
            row.done = True
            return
        if not row.out.text.endswith(CALL_END):
            return
        start = row.out.text.rfind(CALL_START, row.fed_from)
        row.fed_from = len(row.out.text)
        if start < 0:
            row.out.failures.append(f"unbalanced: {CALL_END} without {CALL_START}")
            return
        body = row.out.text[start + len(CALL_START):-len(CALL_END)]
        call, err = self.toolset.parse(body)
        event: dict[str, Any] = {"body": body}
        if call is None:
            row.out.failures.append(err or "unparseable call")
            result: Any = f"error: {err}"
        elif len(row.out.calls) >= self.max_tool_calls:
            row.out.failures.append("too many tool calls")
            row.done = True
            return
        else:
            row.out.calls.append(call)
            t = time.perf_counter()
            result, error = self.toolset.execute(call, row.view, self.timeout)
            event |= {"call": call.to_dict(), "error": error, "seconds": round(time.perf_counter() - t, 4)}
            if self.feed == "full" and not isinstance(result, str):
                result = row.view
        if isinstance(result, str):
            row.pending = self.tok.encode(result, add_special_tokens=False)
            event["fed"] = "text"
        else:
            row.pending = self.adapter.image_ids(result)
            row.pending_images = [result]
            event["fed"] = f"image {result.size[0]}x{result.size[1]}"
        row.out.events.append(event)
        if self.on_event:
            self.on_event(i, event)

    def _greedy(self, logits) -> list[int]:
        return logits[:, -1, :].argmax(-1).tolist()

    # ----- with the KV cache ------------------------------------------------------------------
    def _run_cached(self, rows: list[_Row]) -> None:
        import torch
        from transformers import DynamicCache

        n = len(rows)
        width = max(len(r.ids) for r in rows)
        ids = torch.full((n, width), self.pad, dtype=torch.long)
        mask = torch.zeros((n, width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, width - len(r.ids):] = torch.tensor(r.ids)
            mask[i, width - len(r.ids):] = 1
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        images = [im for r in rows for im in r.images]
        cache = DynamicCache()
        out = self.adapter.forward(self.model, ids, mask, position_ids=pos, past_key_values=cache,
                                   pixel_inputs=self.adapter.pixel_inputs(images), logits_to_keep=1)
        seen = [len(r.ids) for r in rows]          # real tokens each row has in the cache
        for i, (r, tok) in enumerate(zip(rows, self._greedy(out.logits))):
            self._take(i, r, tok)
        while not all(r.done for r in rows):
            blocks = [([] if r.done else [r.ids[-1], *r.pending]) for r in rows]
            w = max(max(len(b) for b in blocks), 1)
            bid = torch.full((n, w), self.pad, dtype=torch.long)
            bmask = torch.zeros((n, w), dtype=torch.long)
            bpos = torch.zeros((n, w), dtype=torch.long)
            feed_images = []
            for i, (r, b) in enumerate(zip(rows, blocks)):
                if b:
                    bid[i, w - len(b):] = torch.tensor(b)
                    bmask[i, w - len(b):] = 1
                    bpos[i, w - len(b):] = torch.arange(seen[i], seen[i] + len(b))
                    seen[i] += len(b)
                    feed_images += r.pending_images
                    r.ids += r.pending
                    r.images += r.pending_images
                    r.pending, r.pending_images = [], []
            mask = torch.cat([mask, bmask], 1)
            out = self.adapter.forward(self.model, bid, mask, position_ids=bpos, past_key_values=cache,
                                       pixel_inputs=self.adapter.pixel_inputs(feed_images), logits_to_keep=1)
            for i, (r, tok) in enumerate(zip(rows, self._greedy(out.logits))):
                if not r.done:
                    self._take(i, r, tok)

    # ----- the reference: no cache, the whole sequence at every step ---------------------------
    def _run_reference(self, rows: list[_Row]) -> None:
        import torch

        for i, r in enumerate(rows):
            while not r.done:
                if r.pending:
                    r.ids += r.pending
                    r.images += r.pending_images
                    r.pending, r.pending_images = [], []
                ids = torch.tensor([r.ids])
                out = self.adapter.forward(self.model, ids, torch.ones_like(ids),
                                           pixel_inputs=self.adapter.pixel_inputs(r.images), logits_to_keep=1)
                self._take(i, r, self._greedy(out.logits)[0])
