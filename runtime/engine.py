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
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from toolcore.conversation import Conversation, Message
from toolcore.executors import ExecutionContext, ToolResult, execute
from toolcore.formats import ChatFormat
from toolcore.schema import ToolCall
from toolcore.tokenize import encode_continuation, encode_prompt

from .constrained import keep_only, single_token_id
from .generation import GenerationConfig
from .kv_cache import PrefixStore, cast_cache, common_prefix, new_cache
from .precision import bf16_autocast_allowed

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


@dataclass
class ToolEvent:
    call: ToolCall
    result: dict[str, Any]
    simulated: bool
    error: str | None
    ms: float


@dataclass
class CaseOutput:
    calls: list[ToolCall] = field(default_factory=list)
    text: str = ""                      # everything the model wrote, tool responses included
    parse_failures: list[str] = field(default_factory=list)
    tool_events: list[ToolEvent] = field(default_factory=list)
    first_call_ms: float | None = None
    latency_ms: float = 0.0
    prompt_tokens: int = 0
    new_tokens: int = 0
    output_ids: list[int] = field(default_factory=list)   # every id after the prompt (tool responses too)
    stop_reason: str = ""
    constrained_tokens: int = 0          # tokens sampled under a call grammar
    # what an opt-in assist changed, one record a touched call: {"assist": "next_call_p", "p", "after_calls"}
    # (a call opened where the model would have stopped, with the probability it gave the call's start) or
    # {"assist": "divert_repeats", "call", "min_p", "taken_back"?} (a repeated call written again with
    # another tool). Empty under the default decoding.
    assists: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Event:
    """What the streaming API yields: kind is 'text', 'call', 'result', 'rewind' (the last `text`
    characters streamed are taken back: a repeated call rewritten by `divert_repeats`) or 'done'."""

    index: int
    kind: str
    text: str = ""
    call: ToolCall | None = None
    tool: ToolEvent | None = None
    output: CaseOutput | None = None


@dataclass
class Timing:
    prefill_s: float = 0.0
    decode_s: float = 0.0
    continuation_s: float = 0.0
    tools_s: float = 0.0
    constrain_s: float = 0.0           # grammar masks and matcher updates
    steps: int = 0

    def as_dict(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in self.__dict__.items()}


class _Row:
    """One conversation being decoded."""

    def __init__(self, index: int, conv: Conversation, prompt_ids: list[int]):
        self.index, self.conv = index, conv
        self.ids = list(prompt_ids)          # everything fed or to be fed, for re-prefill
        self.t_start = time.perf_counter()    # when it joined the batch (its latency counts from here)
        self.segment: list[int] = []          # tokens of the assistant text since the last tool response
        self.out = CaseOutput(prompt_tokens=len(prompt_ids))
        self.pending: list[int] = []          # tokens to feed next step
        self.done = False
        self.in_call = False                  # between call_start and call_end
        self.matcher: Any = None              # the call grammar's matcher while in a call (constrained)
        self.end_now = False                  # a forced call (tool_choice) just closed: the turn ends here
        self.after_call = False               # the last token closed a call
        self.rewound_text = ""                # the text the last rewind took back
        self.diverted = 0                     # repeated calls written again with another tool
        self.diverting: dict[str, Any] | None = None   # while writing one: its record (min_p: the least
        #                                               probability the model gave one of its tokens)


class ToolLoopEngine:
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
        # hand_back(conv, calls) -> True: the row ends with these calls unexecuted (stop_reason "tool_calls")
        # for a caller that runs them itself (the OpenAI server returns them to its client)
        self.hand_back: Callable[[Conversation, list[ToolCall]], bool] | None = None
        self.constraint = None
        if self.cfg.constrained and self.call_start:
            from .constrained import CallConstraint

            head = model.get_output_embeddings()
            vocab = head.weight.shape[0] if head is not None else model.config.vocab_size
            self.constraint = CallConstraint(tokenizer, fmt, vocab)

    # ----- public API --------------------------------------------------------------------------
    def run(self, conversations: Sequence[Conversation]) -> list[CaseOutput]:
        outputs: list[CaseOutput | None] = [None] * len(conversations)
        for ev in self.events(conversations):
            if ev.kind == "done":
                outputs[ev.index] = ev.output
        return outputs  # type: ignore[return-value]

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
    def _admit(self, waiting: list[tuple[int, Conversation]], rows: list[_Row], bs: int) -> list[_Row]:
        """The waiting conversations that join now: all that fit when the batch is empty, else once
        a prefill group's worth of places is free (or the last ones are waiting)."""
        free = bs - len(rows)
        if not waiting or free <= 0 or (rows and free < min(self.cfg.prefill_group, len(waiting))):
            return []
        new = [_Row(i, c, encode_prompt(self.tok, self.fmt, c)) for i, c in waiting[:free]]
        del waiting[:free]
        return new

    def _batch(self, items: list[tuple[int, Conversation]], bs: int) -> Iterator[Event]:
        torch = self.torch
        waiting = list(items)
        rows: list[_Row] = []
        rewound: list[_Row] = []        # rows whose calls were withdrawn: prefilled again from before the call
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
                if self.constraint is not None:
                    t0 = time.perf_counter()
                    self.constraint.mask(logits, [r.matcher for r in rows],
                                         [not r.conv.tools and not r.in_call for r in rows])
                    # a turn never ends inside an open call (a tokenizer whose turn-end token xgrammar does
                    # not know as special would let it through as string text)
                    open_calls = [k for k, r in enumerate(rows) if r.in_call]
                    if open_calls and self.eos_ids:
                        logits[open_calls, sorted(self.eos_ids)] = float("-inf")
                    # conv.meta["tool_choice"] "required" or a tool's name: the turn opens with a call, and
                    # ends when it closes (the OpenAI server's forced calls)
                    self.constraint.force(logits, [k for k, r in enumerate(rows) if
                                                   r.out.new_tokens == 0 and r.conv.meta.get("tool_choice", "auto") != "auto"])
                    self.constraint.force(logits, [k for k, r in enumerate(rows) if r.end_now], self.turn_end_id)
                    self.timing.constrain_s += time.perf_counter() - t0
                if self.cfg.next_call_p > 0 and self.call_start_id is not None:
                    self._open_next_calls(rows, logits)
                next_ids = self._sample(logits, gen)
                if unmasked is not None:
                    for k, j in unmasked[0].items():
                        rec = rows[k].diverting
                        rec["min_p"] = min(rec["min_p"], float(unmasked[1][j, int(next_ids[k])]))
                finished: list[_Row] = []
                tool_step = False
                for r, tid in zip(rows, next_ids.tolist()):
                    r.out.new_tokens += 1
                    r.end_now = False
                    r.segment.append(tid)
                    r.ids.append(tid)
                    r.pending = [tid]
                    piece = self.tok.decode([tid], skip_special_tokens=False)
                    yield Event(r.index, "text", text=piece)
                    tail = self.tok.decode(r.segment[-24:], skip_special_tokens=False)
                    r.after_call = bool(self.fmt.call_end) and tail.endswith(self.fmt.call_end)
                    if self.constraint is not None:
                        self._track_call(r, tid, tail)
                    # taken back (`divert_repeats` only): a repeated call, or its rewrite the model was unsure of
                    taken_back = r.after_call and (self._divert_repeat(r) or self._take_back_diverted(r))
                    ended, parsed = False, None
                    if not taken_back:
                        ended = tid in self.eos_ids or self.fmt.turn_end in tail
                        text = self.tok.decode(r.segment, skip_special_tokens=False) if ended or (
                            self.fmt.call_end and tail.endswith(self.fmt.call_end)) else ""
                        parsed = self.fmt.parse(text) if text else None
                    if taken_back:
                        yield Event(r.index, "rewind", text=r.rewound_text)
                        if self.reprefill:
                            tool_step = True        # every live row is prefilled again anyway
                        else:
                            rewound.append(r)       # leaves the batch, joins again prefilled
                        continue
                    if ended and not (parsed and parsed.calls):
                        self._close(r, "end_of_turn", r.t_start)
                    elif parsed and parsed.calls and ended and self.hand_back and self.hand_back(r.conv, parsed.calls):
                        self._commit(r, text, parsed)
                        self._close(r, "tool_calls", r.t_start)
                    elif parsed and parsed.calls and (ended or self.fmt.pauses_after(parsed.calls[-1])):
                        # the turn ended with calls (or an inline call finished): run them, feed results
                        for ev in self._run_tools(r, r.t_start, text, parsed):
                            yield ev
                        tool_step = tool_step or not r.done
                    elif r.out.new_tokens >= self.cfg.max_new_tokens:
                        self._close(r, "max_new_tokens", r.t_start)
                    if r.done:
                        finished.append(r)
                        yield Event(r.index, "done", output=r.out)
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

    def _open_next_calls(self, rows: list[_Row], logits) -> None:
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

    def _track_call(self, r: _Row, tid: int, tail: str) -> None:
        """Enter a call at its start marker (with a matcher for the case's tools), advance the matcher
        inside it, leave at the end marker."""
        t0 = time.perf_counter()
        if r.in_call:
            if r.matcher is not None:
                r.matcher.accept_token(tid)
                r.out.constrained_tokens += 1
            if tail.endswith(self.fmt.call_end):
                r.in_call, r.matcher = False, None
                r.end_now = r.conv.meta.get("tool_choice", "auto") != "auto" and self.turn_end_id is not None
        elif tail.endswith(self.call_start):
            choice = r.conv.meta.get("tool_choice", "auto")    # a named tool: only its calls are valid
            tools = [t for t in r.conv.tools if t.name == choice] or r.conv.tools
            r.in_call, r.matcher = True, self.constraint.start(tools)
        self.timing.constrain_s += time.perf_counter() - t0

    def _prefill(self, rows: list[_Row]):
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

    def _prefill_group(self, rows: list[_Row]):
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

    def _extend(self, rows: list[_Row], cache, mask, last_pos):
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
    def _commit(self, r: _Row, text: str, parsed: Any) -> None:
        """The turn's text so far into the output with `parsed`'s calls (as grounded: `_close` would parse
        the text again and find them as written)."""
        r.out.text += text
        r.out.calls += parsed.calls
        r.out.parse_failures += parsed.failures
        r.segment = []

    def _cut(self, r: _Row, start: int) -> None:
        """Take the row's turn back to its `start`-th token (ids too), keeping what was taken back as the
        same pieces the text events streamed, so a client can take back exactly that many characters."""
        removed = r.segment[start:]
        r.rewound_text = "".join(self.tok.decode([t], skip_special_tokens=False) for t in removed)
        r.segment = r.segment[:start]
        del r.ids[len(r.ids) - len(removed):]

    def _divert_repeat(self, r: _Row) -> bool:
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

    def _take_back_diverted(self, r: _Row) -> bool:
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
    def _run_tools(self, r: _Row, t_start: float, text: str, parsed) -> Iterator[Event]:
        r.out.text += text
        r.segment = []
        r.out.parse_failures += parsed.failures
        if r.out.first_call_ms is None:
            r.out.first_call_ms = (time.perf_counter() - t_start) * 1000
        results = []
        for call in parsed.calls:
            r.out.calls.append(call)
            yield Event(r.index, "call", call=call)
            ev = self._execute(call, r.conv)
            r.out.tool_events.append(ev)
            yield Event(r.index, "result", tool=ev)
            results.append(Message.text("tool", _json(ev.result), name=call.name))
        if len(r.out.calls) >= self.cfg.max_tool_calls:
            self._close(r, "max_tool_calls", t_start)
            return
        r.out.text += self.fmt.continuation(results)
        cont_ids = encode_continuation(self.tok, self.fmt, results)
        r.pending += cont_ids
        r.ids += cont_ids

    def _execute(self, call: ToolCall, conv: Conversation) -> ToolEvent:
        ev = run_tool(call, conv, self.pool, self.context, self.cfg.tool_timeout_s)
        self.timing.tools_s += ev.ms / 1000
        return ev

    def _close(self, r: _Row, reason: str, t_start: float) -> None:
        if r.segment:
            text = self.tok.decode(r.segment, skip_special_tokens=False)
            parsed = self.fmt.parse(text)
            r.out.text += text
            r.out.calls += parsed.calls
            r.out.parse_failures += parsed.failures
            r.segment = []
        r.done = True
        r.out.stop_reason = reason
        r.out.output_ids = r.ids[r.out.prompt_tokens:]
        r.out.latency_ms = (time.perf_counter() - t_start) * 1000


def stop_ids(tokenizer: Any, fmt: ChatFormat) -> tuple[set[int], int | None]:
    """The ids that end a turn (eos and the format's turn end, where the tokenizer has them), and the
    turn-end id alone (None where it is not one known token)."""
    turn_end = tokenizer.convert_tokens_to_ids(fmt.turn_end)
    turn_end = turn_end if isinstance(turn_end, int) and turn_end != tokenizer.unk_token_id else None
    eos = {i for i in [tokenizer.eos_token_id, turn_end] if isinstance(i, int) and i != tokenizer.unk_token_id}
    return eos, turn_end


def sample(logits: Any, cfg: GenerationConfig, gen: Any) -> Any:
    """The next id of each row of `logits` (rows x vocab): greedy, or top-p sampling at the temperature."""
    import torch

    if not cfg.do_sample:
        return logits.argmax(-1)
    probs = torch.softmax(logits / max(cfg.temperature, 1e-5), -1)
    sorted_p, sorted_i = probs.sort(-1, descending=True)
    cut = sorted_p.cumsum(-1) - sorted_p > cfg.top_p
    sorted_p[cut] = 0
    choice = torch.multinomial(sorted_p / sorted_p.sum(-1, keepdim=True), 1, generator=gen)
    return sorted_i.gather(-1, choice).squeeze(-1)


def run_tool(call: ToolCall, conv: Conversation, pool: ThreadPoolExecutor,
             context: Callable[[], ExecutionContext], timeout_s: float) -> ToolEvent:
    """Run one call against the conversation's tools in a worker thread with a timeout. Never raises:
    an unknown tool, an exception or a timeout becomes an error result the model gets to read."""
    t0 = time.perf_counter()
    tool = next((t for t in conv.tools if t.name == call.name), None)
    if tool is None:
        res = ToolResult(False, {"error": f"unknown tool {call.name!r}"})
    else:
        future = pool.submit(execute, tool, call.arguments, context())
        try:
            res = future.result(timeout=timeout_s)
        except FutureTimeout:
            res = ToolResult(False, {"error": f"timed out after {timeout_s}s"})
    ms = (time.perf_counter() - t0) * 1000
    return ToolEvent(call, res.content, res.simulated, None if res.ok else str(res.content.get("error")), ms)


def default_context() -> ExecutionContext:
    from toolcore.vocab import load_vocabulary

    global _VOCAB
    if _VOCAB is None:
        _VOCAB = {name: [e.value for e in entries] for name, entries in load_vocabulary().lists.items()}
    return ExecutionContext(vocab=_VOCAB)


_VOCAB: dict[str, list[str]] | None = None


def _json(obj: Any) -> str:
    import json

    return json.dumps(obj, ensure_ascii=False)
