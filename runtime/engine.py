"""Batched generation with a live tool-execution loop.

Many conversations decode together (left padding, KV cache, greedy or sampled). When a sequence
ends a turn that holds calls, it pauses: the calls are parsed, the tools run (registered
executables really run; others return their simulated stub result, flagged as such), the format's
tool-response text is appended - exactly the text the trainer renders for the same conversation -
and decoding goes on from the cache until the assistant's final answer. Formats that feed a result
back inside the turn (Ovis crops) pause right at the end of that call instead.

Extending the cache: each step feeds every live row a right-aligned chunk (the sampled token, plus
the tool-response tokens for rows that just called a tool); rows with shorter chunks get masked pad
slots and explicit position ids. For attention-only models this is exact (pad slots are never
attended to). Models with convolution or recurrent state (LFM2's conv layers, SSM hybrids) would see
the pad slots in their state, so for them a tool step re-prefills the live rows instead
(`continuation: auto`); they are recognised from the layer types of their config and the cache
layers the model builds (`has_recurrent_state`), not from a list of model names.
Finished rows leave the batch (`DynamicCache.batch_select_indices`) so they cost nothing, and waiting
conversations take their places (`refill`): their prompts are prefilled and their caches merged into
the running batch (attention-only models; recurrent ones decode fixed batches).
Prompts that start like one prefilled before (the same system prompt and tool list; an earlier turn of
the same chat) reuse its keys and values (`prefix_cache_tokens`, kv_cache.PrefixStore): only the rest
is computed.
What comes back is the model's own call. Under the call grammar (`constrained`, runtime/constrained.py)
only valid calls can be written (offered names, the tool's keys, required keys, types, enums); nothing
reads the request's words to change a value, add a call or withdraw one. The assists in GenerationConfig
(`next_call_p`, `divert_repeats`) are off by default; where one is turned on, every call it touches gets a
record in `CaseOutput.assists`.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Sequence

from toolcore.conversation import Conversation
from toolcore.executors import ExecutionContext
from toolcore.formats import ChatFormat
from toolcore.schema import ToolCall
from toolcore.tokenize import encode_prompt

from .constrained import keep_only, single_token_id
from .generation import GenerationConfig
from .kv_cache import PrefixStore, cast_cache, common_prefix, new_cache
from .precision import bf16_autocast_allowed
# what the engines share (the row's step, its output and events): re-exported, callers import them from here
from .rows import (CaseOutput, Event, Row, RowSteps, Timing, ToolEvent, default_context, run_tool,  # noqa: F401
                   sample, stop_ids)

# Families with recurrent state, for the record only: `has_recurrent_state` decides from the model itself
# (lfm2, lfm2_vl, lfm2_moe, mamba, mamba2, falcon_mamba, jamba, rwkv, recurrent_gemma, zamba, zamba2, bamba...)
ATTENTION_LAYER_TYPES = {"full_attention", "sliding_attention", "chunked_attention", "attention", "global", "local"}
RECURRENT_CONFIG_KEYS = ("conv_kernel", "conv_L_cache", "ssm_state_size", "state_size", "mamba_d_state",
                         "d_state", "linear_conv_kernel_dim")
MIN_PREFIX = 8          # shorter shared prefixes are computed again (the copy is not worth it)


def has_recurrent_state(model: Any) -> bool:
    """Whether decoding carries state other than attention keys/values (convolution or SSM states),
    which a pad slot would corrupt. Judged from the model, so a new hybrid cannot silently take the
    cache-extension path: a layer type that is not attention, a recurrent-state size in the config, or a
    cache layer that is not a plain key/value layer. Unknown means recurrent (the safe, slower path)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    cfg = model.config
    cfg = getattr(cfg, "get_text_config", lambda: cfg)() or cfg
    if any(t not in ATTENTION_LAYER_TYPES for t in (getattr(cfg, "layer_types", None) or [])):
        return True
    if any(getattr(cfg, k, None) for k in RECURRENT_CONFIG_KEYS):
        return True
    try:
        layers = DynamicCache(config=cfg).layers
    except Exception:
        return True
    return not layers or any(not isinstance(layer, DynamicLayer) or hasattr(layer, "conv_states")
                             or hasattr(layer, "recurrent_states") for layer in layers)


class ToolLoopEngine(RowSteps):
    def __init__(self, model: Any, tokenizer: Any, fmt: ChatFormat, config: GenerationConfig | None = None,
                 context: Callable[[], ExecutionContext] | None = None):
        import torch

        self.torch = torch
        self.model, self.tok, self.fmt = model, tokenizer, fmt
        self.device = next(model.parameters()).device   # inputs are built on the CPU, then moved here
        self.dtype = next(model.parameters()).dtype
        self.cfg = config or GenerationConfig()
        # bf16 autocast of prefill only where this device computes bf16 natively (runtime/precision.py)
        self.autocast = bf16_autocast_allowed(self.cfg.autocast, self.device.type, "evaluation prefill")
        self.recurrent = has_recurrent_state(model)
        self.reprefill = self.cfg.continuation == "reprefill" or (self.cfg.continuation == "auto" and self.recurrent)
        self.store = PrefixStore(self.cfg.prefix_cache_tokens) if (
            self.cfg.prefix_cache_tokens > 0 and not self.recurrent) else None
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
        self.eos_ids, self.turn_end_id = stop_ids(tokenizer, fmt)
        self.timing = Timing()
        # simulated tools draw from vocabularies (weather conditions...); executables read the clock
        self.context = context or default_context
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tool")
        self.call_start = getattr(fmt, "call_start", "")
        self.call_start_id = single_token_id(tokenizer, self.call_start)
        self.hand_back: Callable[[Conversation, list[ToolCall]], bool] | None = None
        self.constraint = None
        if self.cfg.constrained and self.call_start:
            from .constrained import CallConstraint

            head = model.get_output_embeddings()
            vocab = head.weight.shape[0] if head is not None else model.config.vocab_size
            self.constraint = CallConstraint(tokenizer, fmt, vocab)

    # ----- public API --------------------------------------------------------------------------
    def stream(self, conversation: Conversation) -> Iterator[Event]:
        """Text pieces and call/result events of one conversation as they happen."""
        yield from self.events([conversation], batch_size=1)

    def events(self, conversations: Sequence[Conversation], batch_size: int | None = None) -> Iterator[Event]:
        bs = batch_size or self.cfg.batch_size
        # similar prompt lengths together: less left padding to compute
        order = sorted(range(len(conversations)), key=lambda i: len(self.fmt.prompt(conversations[i])))
        items = [(i, conversations[i]) for i in order]
        if self.cfg.refill and not self.reprefill:
            yield from self._batch(items, bs)      # one running batch, refilled as rows finish
        else:
            for start in range(0, len(items), bs):
                yield from self._batch(items[start:start + bs], bs)

    # ----- the loop ----------------------------------------------------------------------------
    def _admit(self, waiting: list[tuple[int, Conversation]], rows: list[Row], bs: int) -> list[Row]:
        """The waiting conversations that join now: all that fit when the batch is empty, else once
        a prefill group's worth of places is free (or the last ones are waiting)."""
        free = bs - len(rows)
        if not waiting or free <= 0 or (rows and free < min(self.cfg.prefill_group, len(waiting))):
            return []
        new = [Row(i, c, encode_prompt(self.tok, self.fmt, c)) for i, c in waiting[:free]]
        del waiting[:free]
        return new

    def _batch(self, items: list[tuple[int, Conversation]], bs: int) -> Iterator[Event]:
        torch = self.torch
        waiting = list(items)
        rows: list[Row] = []
        rewound: list[Row] = []        # rows whose calls were withdrawn: prefilled again from before the call
        logits = cache = mask = pos = None
        gen = torch.Generator(device=self.device).manual_seed(self.cfg.seed)
        with torch.inference_mode():
            while rows or waiting or rewound:
                new = rewound + self._admit(waiting, rows + rewound, bs)
                rewound = []
                if new:
                    t0 = time.perf_counter()
                    part = self._prefill(new)
                    logits, cache, mask, pos = self._merge([(logits, cache, mask, pos), part]) if rows else part
                    rows += new
                    self.timing.prefill_s += time.perf_counter() - t0
                # rows rewriting a repeated call: the model's own probabilities, before the grammar's mask
                diverting = {k: j for j, k in enumerate(k for k, r in enumerate(rows) if r.diverting is not None)}
                unmasked = (diverting, torch.softmax(logits[list(diverting)], -1)) if diverting else None
                self._apply_grammar(rows, logits)
                if self.cfg.next_call_p > 0 and self.call_start_id is not None:
                    self._open_next_calls(rows, logits)
                next_ids = self._sample(logits, gen)
                if unmasked is not None:
                    for k, j in unmasked[0].items():
                        rec = rows[k].diverting
                        rec["min_p"] = min(rec["min_p"], float(unmasked[1][j, int(next_ids[k])]))
                finished: list[Row] = []
                tool_step = False
                for r, tid in zip(rows, next_ids.tolist()):
                    outcome = yield from self._step_row(r, tid)
                    if outcome == "rewind":
                        if self.reprefill:
                            tool_step = True        # every live row is prefilled again anyway
                        else:
                            rewound.append(r)       # leaves the batch, joins again prefilled
                        continue
                    tool_step = tool_step or outcome == "tools"
                    if r.done:
                        finished.append(r)
                if finished or rewound:
                    keep = [k for k, r in enumerate(rows) if not r.done and r not in rewound]
                    rows = [rows[k] for k in keep]
                    if not rows:
                        logits = cache = mask = pos = None
                        continue
                    cache.batch_select_indices(torch.tensor(keep, device=self.device))
                    mask, pos = mask[keep], pos[keep]
                t0 = time.perf_counter()
                if tool_step and self.reprefill:
                    logits, cache, mask, pos = self._prefill(rows)
                else:
                    logits, cache, mask, pos = self._extend(rows, cache, mask, pos)
                elapsed = time.perf_counter() - t0
                if tool_step:
                    self.timing.continuation_s += elapsed
                else:
                    self.timing.decode_s += elapsed
                self.timing.steps += 1

    def _open_next_calls(self, rows: list[Row], logits) -> None:
        """`next_call_p` (an assist): rows whose last token closed a call open another one where the model
        gives it at least that probability (the row may call, and the caller did not force this turn's
        call). Each call opened where the model's own choice was to stop gets a record."""
        torch = self.torch
        ks = [k for k, r in enumerate(rows) if r.after_call and not r.end_now
              and r.conv.tools and r.conv.meta.get("tool_choice", "auto") == "auto"]
        if not ks:
            return
        p = torch.softmax(logits[ks], -1)[:, self.call_start_id]
        greedy = logits[ks].argmax(-1).tolist()
        opened = []
        for k, pk, g in zip(ks, p.tolist(), greedy):
            if pk >= self.cfg.next_call_p:
                opened.append(k)
                if g != self.call_start_id:
                    r = rows[k]
                    parsed = self.fmt.parse(self.tok.decode(r.segment, skip_special_tokens=False))
                    r.out.assists.append({"assist": "next_call_p", "p": round(pk, 4),
                                          "after_calls": len(r.out.calls) + len(parsed.calls if parsed else [])})
        keep_only(logits, opened, self.call_start_id)

    def _prefill(self, rows: list[Row]):
        """Prompt ids of all rows into a fresh cache. Attention-only models prefill in small groups of
        similar length (rows arrive sorted) and the caches are merged, left-padded, into one batch:
        a batch of 16 mixed-length prompts pads a quarter of its tokens, groups of 4 about 7%."""
        group = self.cfg.prefill_group if not self.reprefill else len(rows)
        parts = [self._prefill_group(rows[i:i + group]) for i in range(0, len(rows), group)]
        for r in rows:
            r.pending = []
        if len(parts) == 1:
            return parts[0]
        return self._merge(parts)

    def _prefill_group(self, rows: list[Row]):
        if self.store is not None and not self.reprefill:
            self._share_group_prefix([r.ids for r in rows])
        return self._prefill_ids([r.ids for r in rows])

    def _share_group_prefix(self, seqs: list[list[int]]) -> None:
        """Rows of one group that start alike (and that the store cannot serve yet) get their common
        start prefilled once, alone, into the store: the group then reuses it like an older prompt."""
        if len(seqs) < 2:
            return
        common = min(len(s) for s in seqs) - 1
        for s in seqs[1:]:
            common = min(common, common_prefix(seqs[0], s, common))
        if common < 2 * MIN_PREFIX:
            return
        stored = self.store.lookup(seqs[0][:common + 1], MIN_PREFIX, count=False)[0]
        if common - stored >= MIN_PREFIX:
            self._prefill_ids([seqs[0][:common]])

    def _prefill_ids(self, seqs: list[list[int]]):
        """Prompts into a fresh cache, right-aligned. With a prefix store, each row's longest stored
        prefix is copied in (right-aligned in a prefix region) and only the rest is computed:
        [pad | stored prefix | pad | rest], masked, with each row's true position ids."""
        torch = self.torch
        hits = [self.store.lookup(s, MIN_PREFIX) if self.store is not None and not self.reprefill else (0, None)
                for s in seqs]
        lead = max(n for n, _ in hits)
        rests = [s[n:] for s, (n, _) in zip(seqs, hits)]
        width = max(len(r) for r in rests)
        ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), lead + width), dtype=torch.long)
        pos = torch.zeros((len(seqs), width), dtype=torch.long)
        for k, (rest, (n, _)) in enumerate(zip(rests, hits)):
            ids[k, width - len(rest):] = torch.tensor(rest)
            mask[k, lead + width - len(rest):] = 1
            mask[k, lead - n:lead] = 1
            pos[k, width - len(rest):] = torch.arange(n, n + len(rest))
        ids, mask, pos = ids.to(self.device), mask.to(self.device), pos.to(self.device)
        cache = new_cache(self.model.config)
        if lead:
            stored = next(kv for n, kv in hits if n)
            for layer, (k0, v0) in enumerate(stored):
                keys = k0.new_zeros(len(seqs), k0.shape[1], lead, k0.shape[3])
                values = v0.new_zeros(len(seqs), v0.shape[1], lead, v0.shape[3])
                for k, (n, kv) in enumerate(hits):
                    if n:
                        keys[k, :, lead - n:] = kv[layer][0][0, :, :n]
                        values[k, :, lead - n:] = kv[layer][1][0, :, :n]
                cache.update(keys, values, layer)
        # logits for the last position only: the vocabulary projection of a whole prompt is wasted work
        out = self._forward(input_ids=ids, attention_mask=mask, position_ids=pos, past_key_values=cache,
                            amp=self.autocast)
        cache = out.past_key_values
        if self.store is not None and not self.reprefill:
            for k, s in enumerate(seqs):
                slots = mask[k].nonzero().squeeze(1)
                self.store.add(s, [(layer.keys[k:k + 1, :, slots].clone(), layer.values[k:k + 1, :, slots].clone())
                                   for layer in cache.layers])
        return out.logits[:, -1, :].float(), cache, mask, pos[:, -1:]

    def _forward(self, amp: bool = False, **inputs):
        torch = self.torch
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=amp):
            out = self.model(**inputs, use_cache=True, logits_to_keep=1)
        if amp:     # decoding goes on in the weights' dtype
            cast_cache(out.past_key_values, self.dtype)
        return out

    def _merge(self, parts):
        """One left-padded batch cache from several group caches (attention layers only). Leading
        slots that no row of a part uses are dropped (a running batch's rows that left)."""
        torch = self.torch

        leads = [int(m.any(0).long().argmax()) for _, _, m, _ in parts]
        width = max(p[2].shape[1] - lead for p, lead in zip(parts, leads))
        merged = new_cache(self.model.config)
        for layer in range(len(parts[0][1].layers)):
            keys, values = [], []
            for (_, cache, mask, _), lead in zip(parts, leads):
                k, v = cache.layers[layer].keys[:, :, lead:], cache.layers[layer].values[:, :, lead:]
                pad = width - k.shape[2]
                keys.append(torch.nn.functional.pad(k, (0, 0, pad, 0)))
                values.append(torch.nn.functional.pad(v, (0, 0, pad, 0)))
            merged.update(torch.cat(keys), torch.cat(values), layer)
        mask = torch.cat([torch.nn.functional.pad(m[:, lead:], (width - m.shape[1] + lead, 0))
                          for (_, _, m, _), lead in zip(parts, leads)])
        return (torch.cat([p[0] for p in parts]), merged, mask, torch.cat([p[3] for p in parts]))

    def _extend(self, rows: list[Row], cache, mask, last_pos):
        torch = self.torch
        width = max(len(r.pending) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        chunk_mask = torch.zeros((len(rows), width), dtype=torch.long)
        for k, r in enumerate(rows):
            n = len(r.pending)
            ids[k, width - n:] = torch.tensor(r.pending)
            chunk_mask[k, width - n:] = 1
        ids, chunk_mask = ids.to(self.device), chunk_mask.to(self.device)
        pos = last_pos + chunk_mask.cumsum(1)          # pad slots repeat a position; they are masked
        mask = torch.cat([mask, chunk_mask], dim=1)
        out = self._forward(input_ids=ids, attention_mask=mask, position_ids=pos, past_key_values=cache)
        for r in rows:
            r.pending = []
        return out.logits[:, -1, :].float(), out.past_key_values, mask, pos[:, -1:]

    def _sample(self, logits, gen):
        return sample(logits, self.cfg, gen)

    # ----- assists ---------------------------------------------------------------------------
    def _taken_back(self, r: Row) -> bool:
        """`divert_repeats` only: the call that just closed repeats an earlier one, or is a rewrite the
        model was unsure of."""
        return self._divert_repeat(r) or self._take_back_diverted(r)

    def _cut(self, r: Row, start: int) -> None:
        """Take the row's turn back to its `start`-th token (ids too), keeping what was taken back as the
        same pieces the text events streamed, so a client can take back exactly that many characters."""
        removed = r.segment[start:]
        r.rewound_text = "".join(self.tok.decode([t], skip_special_tokens=False) for t in removed)
        r.segment = r.segment[:start]
        del r.ids[len(r.ids) - len(removed):]

    def _divert_repeat(self, r: Row) -> bool:
        """Where the call that just closed repeats one of the turn's earlier calls (name and arguments as
        written), take it back to just after its start marker and write it again with its tool left out
        of the grammar: the model then writes the call it ranks next. False (nothing changed) where that
        cannot be done: unconstrained decoding, a call marker of several tokens, a forced call, a case
        with one tool, or the row's `max_diverted` used up."""
        if not (self.cfg.divert_repeats and self.constraint is not None and self.call_start_id is not None) \
                or r.diverted >= self.cfg.max_diverted or r.conv.meta.get("tool_choice", "auto") != "auto":
            return False
        calls = self.fmt.parse(self.tok.decode(r.segment, skip_special_tokens=False)).calls
        if len(calls) < 2 or calls[-1] not in calls[:-1]:
            return False
        others = [t for t in r.conv.tools if t.name != calls[-1].name]
        matcher = self.constraint.start(others) if others else None
        marker = max((k for k, t in enumerate(r.segment) if t == self.call_start_id), default=None)
        if matcher is None or marker is None:
            return False
        self._cut(r, marker + 1)
        r.in_call, r.matcher, r.after_call, r.end_now, r.pending = True, matcher, False, False, []
        r.diverted += 1
        r.diverting = {"assist": "divert_repeats", "call": calls[-1].to_dict(), "min_p": 1.0}
        r.out.assists.append(r.diverting)
        return True

    def _take_back_diverted(self, r: Row) -> bool:
        """A rewritten call (`_divert_repeat`) has just closed: kept where the model gave each of its
        tokens at least `divert_min_p`; else taken back with its start marker, and the turn ends there."""
        record, r.diverting = r.diverting, None
        if record is None or record["min_p"] >= self.cfg.divert_min_p:
            return False
        self._cut(r, max(k for k, t in enumerate(r.segment) if t == self.call_start_id))
        r.in_call, r.matcher, r.after_call, r.pending = False, None, False, []
        r.end_now = self.turn_end_id is not None
        record["taken_back"] = True
        return True

    # ----- tools -------------------------------------------------------------------------------
