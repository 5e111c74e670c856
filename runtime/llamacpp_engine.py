"""The live tool loop on llama.cpp (through llama-cpp-python): a GGUF model decodes, the toolkit does the rest.

The same contract as `runtime.engine.ToolLoopEngine`: the prompt ids come from the model's own Hugging
Face tokenizer (exactly the ids training fed), llama.cpp computes the logits, the call grammar masks them
(runtime/constrained.py: xgrammar compiled from `ChatFormat.call_grammar`, the transformers engine's own)
and every sampled id goes through the same row step (runtime/rows.py), so both backends accept and refuse
exactly the same calls and run the same tool loop: the figures of one stand for the other.

Several conversations decode together: each holds one of the context's `parallel` sequences (its own
region of the key/value cache, `n_ctx` tokens), and one `llama_decode` a step feeds every sequence its
next id, the prompts of conversations that just joined and the tool-response ids of those that called
(up to `n_batch` ids; a longer prompt is fed over several steps). A finished conversation's sequence keeps
its keys and values: the next conversation that starts like it (the same system prompt and tools, an
earlier turn of the same chat) takes that sequence and computes only the rest.

Drafted decoding (`draft_tokens`, on by default): a decoding row's newest id goes in with up to
`draft_tokens` drafted ids after it (runtime/drafting.py: what the call grammar forces, and with
`draft_lookup` what followed the same ids in the request), with logits at every position. The row takes
the model's own choice at each position, under the grammar, for as long as it equals the draft; the
drafted ids past that leave the cache. Plain decoding writes the same ids, one pass each, up to the
rounding of a several-id pass against a one-id pass at near-ties (docs/on-device.md). Not on models
whose cache is a recurrent state (LFM2, Mamba): it cannot be cut back.

Not here: the opt-in assists (next_call_p, divert_repeats).
"""

from __future__ import annotations

import atexit
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Sequence

from toolcore.conversation import Conversation
from toolcore.errors import ToolkitError
from toolcore.executors import ExecutionContext
from toolcore.formats import ChatFormat
from toolcore.tokenize import encode_prompt_parts

from .generation import GenerationConfig
from .kv_cache import common_prefix
from .drafting import DraftStats, grammar_draft, lookup_draft
from .rows import Event, Row, RowSteps, Timing, default_context, sample, stop_ids

PREFIX_SCAN = 64        # waiting conversations compared with a free sequence's cache to pick the next one


class LlamaCppContext:
    """A GGUF model and one llama.cpp context of `parallel` sequences, `n_ctx` tokens each.

    `repack` lets llama.cpp move weights into its CPU "extra" buffers (AMX and repacked int8 layouts): on
    an AMX CPU its q8_0 matmul crashed here on a small model (hidden size 64, llama.cpp of llama-cpp-python
    0.3.36), so it is off unless asked for."""

    def __init__(self, gguf: str, *, n_ctx: int, parallel: int, threads: int, repack: bool, n_batch: int = 512):
        import llama_cpp
        from llama_cpp._internals import LlamaBatch, LlamaContext, LlamaModel

        self.lib = llama_cpp
        logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)   # the binding's log: errors only
        mp = llama_cpp.llama_model_default_params()
        mp.use_extra_bufts = repack
        self.model = LlamaModel(path_model=gguf, params=mp, verbose=False)
        cp = llama_cpp.llama_context_default_params()
        cp.n_ctx = n_ctx * parallel
        cp.n_batch = cp.n_ubatch = n_batch
        cp.n_seq_max = parallel
        cp.kv_unified = False                 # each sequence its own cache region of n_ctx tokens
        cp.n_threads = cp.n_threads_batch = threads
        cp.no_perf = True
        self.context = LlamaContext(model=self.model, params=cp, verbose=False)
        self.ctx, self.memory = self.context.ctx, self.context.memory
        self.batch = LlamaBatch(n_tokens=n_batch, embd=0, n_seq_max=1, verbose=False)
        self.n_batch, self.parallel = n_batch, parallel
        self.n_ctx_seq = llama_cpp.llama_n_ctx_seq(self.ctx)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.model.vocab)
        self.held: list[list[int]] = [[] for _ in range(parallel)]   # the ids each sequence's cache holds
        self.last_used = [0] * parallel       # when each sequence last took a conversation (a counter)
        self.clock = 0
        # whether a sequence's cache can be cut back to any position (not a recurrent state)
        self.rollback = not (llama_cpp.llama_model_is_recurrent(self.model.model)
                             or llama_cpp.llama_model_is_hybrid(self.model.model))
        # freed before the interpreter tears down the binding's module (its own __del__ then fails noisily)
        atexit.register(self.close)

    def close(self) -> None:
        for part in ("batch", "context", "model"):
            obj = getattr(self, part, None)
            if obj is not None:
                obj.close()
                setattr(self, part, None)

    def keep(self, seq: int, n: int) -> int:
        """Drop all but the first `n` ids of sequence `seq`'s cache; returns how many it holds after. A
        recurrent state (LFM2's convolutions, Mamba) cannot be cut back to a position: the sequence is
        cleared instead."""
        if n < len(self.held[seq]):
            if not self.lib.llama_memory_seq_rm(self.memory, seq, n, -1):
                self.lib.llama_memory_seq_rm(self.memory, seq, 0, -1)
                n = 0
            del self.held[seq][n:]
        return len(self.held[seq])

    def clear(self) -> None:
        """Empty every sequence's cache: the next conversation computes its whole prompt."""
        for seq in range(self.parallel):
            self.keep(seq, 0)

    def feed(self, seq: int, ids: list[int], logits: bool = False):
        """Feed `ids` to sequence `seq` alone, over as many batches as they need; the last id's logits
        (a vector) when asked for, else None."""
        out = None
        for at in range(0, len(ids), self.n_batch):
            last = at + self.n_batch >= len(ids)
            out = self.decode([(seq, ids[at:at + self.n_batch], int(logits and last))])
        return out[0] if logits and out is not None else None

    def touch(self, seq: int) -> None:
        self.clock += 1
        self.last_used[seq] = self.clock

    def decode(self, feeds: list[tuple[int, list[int], int]]):
        """One llama_decode of (sequence, ids, logits wanted for the last n of them) feeds, at most n_batch
        ids in all; the wanted logits come back as rows of a (wanted, vocab) array, in feed order."""
        import numpy as np

        b = self.batch.batch
        n, wanted = 0, []
        for seq, ids, n_logits in feeds:
            start = len(self.held[seq])
            for j, tid in enumerate(ids):
                b.token[n], b.pos[n], b.n_seq_id[n] = tid, start + j, 1
                b.seq_id[n][0] = seq
                b.logits[n] = j >= len(ids) - n_logits
                if b.logits[n]:
                    wanted.append(n)
                n += 1
            self.held[seq] += ids
        b.n_tokens = n
        rc = self.lib.llama_decode(self.ctx, b)
        if rc != 0:
            raise ToolkitError(f"llama.cpp could not decode a batch (llama_decode returned {rc})", field="model.n_ctx",
                               fix="a larger model.n_ctx, or fewer model.parallel sequences")
        out = np.empty((len(wanted), self.n_vocab), dtype=np.float32)
        for k, i in enumerate(wanted):
            out[k] = np.ctypeslib.as_array(self.lib.llama_get_logits_ith(self.ctx, i), shape=(self.n_vocab,))
        return out


class LlamaCppEngine(RowSteps):
    def __init__(self, gguf: str, tokenizer: Any, fmt: ChatFormat, config: GenerationConfig | None = None,
                 n_ctx: int = 4096, parallel: int = 4, threads: int | None = None, repack: bool = False,
                 draft_tokens: int = 8, draft_lookup: bool = False, context: Callable[[], ExecutionContext] | None = None):
        import torch

        self.torch = torch
        self.cfg = config or GenerationConfig()
        if self.cfg.next_call_p > 0 or self.cfg.divert_repeats:
            raise ToolkitError("the llama.cpp backend decodes without the assists", field="model.generation",
                               fix="leave next_call_p and divert_repeats off, or use the transformers engine (model=hf)")
        if parallel < 1:
            raise ToolkitError(f"model.parallel={parallel}: at least one sequence", field="model.parallel",
                               fix="model.parallel=4")
        self.tok, self.fmt = tokenizer, fmt
        self.lc = LlamaCppContext(str(gguf), n_ctx=n_ctx, parallel=parallel, threads=threads or os.cpu_count() or 1,
                                  repack=repack)
        self.n_ctx = self.lc.n_ctx_seq
        self.context_length = self.n_ctx        # what the server tells clients a request may hold
        self.n_vocab = self.lc.n_vocab
        if self.n_vocab < len(tokenizer):
            raise ToolkitError(f"the GGUF has {self.n_vocab} tokens, its tokenizer {len(tokenizer)}", file=str(gguf),
                               field="model.tokenizer", fix="give the tokenizer the model was trained with (train.export "
                                                            "writes it beside the GGUF)")
        self.eos_ids, self.turn_end_id = stop_ids(tokenizer, fmt)
        self.call_start = getattr(fmt, "call_start", "")
        self.timing = Timing()
        self.reused_tokens = 0                  # prompt ids taken from a sequence's cache instead of computed
        if draft_tokens < 0:
            raise ToolkitError(f"model.draft_tokens={draft_tokens}: 0 (off) or more", field="model.draft_tokens",
                               fix="model.draft_tokens=8")
        # drafted decoding (runtime/drafting.py): never on a recurrent cache, which cannot drop a rejected draft
        self.draft_tokens = draft_tokens if self.lc.rollback else 0
        self.draft_lookup = draft_lookup
        self.drafts = DraftStats()
        self.context = context or default_context
        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tool")
        self.hand_back = None
        self.constraint = None
        if self.cfg.constrained and self.call_start:
            from .constrained import CallConstraint

            self.constraint = CallConstraint(tokenizer, fmt, self.n_vocab)

    # ----- public API --------------------------------------------------------------------------
    def stream(self, conversation: Conversation) -> Iterator[Event]:
        return self.events([conversation])

    def events(self, conversations: Sequence[Conversation], batch_size: int | None = None) -> Iterator[Event]:
        """What the transformers engine streams ('text', 'call', 'result', 'done'), up to `batch_size`
        (at most `parallel`) conversations decoding together."""
        width = min(batch_size or self.lc.parallel, self.lc.parallel)
        waiting = []
        for index, conv in enumerate(conversations):
            ids, head = self._prompt(conv)
            waiting.append((index, conv, ids, head))
        gen = self.torch.Generator().manual_seed(self.cfg.seed)
        live: dict[int, Row] = {}               # sequence -> its conversation
        fresh: set[int] = set()                 # sequences whose prompt is still being fed
        while waiting or live:
            free = [seq for seq in range(width) if seq not in live]
            while free and waiting:
                seq, r = self._admit(free, waiting)
                free.remove(seq)
                live[seq] = r
                fresh.add(seq)
            # every sequence's next id (and its draft) first: a decoding row is never held up by a long
            # prompt; then prompts and tool responses, as much as the batch holds
            feeds, budget, stepping, drafts = [], self.lc.n_batch, [], {}
            for seq in sorted(live, key=lambda s: len(live[s].pending) > 1):
                r = live[seq]
                room = self.n_ctx - len(self.lc.held[seq]) - len(r.pending)
                if room < 0:
                    self._close(r, "context_full")
                    continue
                take = r.pending[:budget]
                if not take:
                    continue
                whole = len(take) == len(r.pending)
                draft = self._draft(r, min(room, budget - len(take))) if whole else []
                feeds.append((seq, take + draft, 1 + len(draft) if whole else 0))
                r.pending = r.pending[len(take):]
                budget -= len(take) + len(draft)
                if whole:
                    stepping.append(seq)
                    drafts[seq] = draft
            t0 = time.perf_counter()
            logits = self.lc.decode(feeds) if feeds else None
            elapsed = time.perf_counter() - t0
            if any(seq in fresh for seq, _, _ in feeds):
                self.timing.prefill_s += elapsed
            elif any(n == 0 or len(ids) > n for _, ids, n in feeds):
                self.timing.continuation_s += elapsed
            else:
                self.timing.decode_s += elapsed
            self.timing.steps += 1
            for seq in [s for s, r in live.items() if r.done]:      # closed for a full context
                yield Event(live[seq].index, "done", output=live.pop(seq).out)
            if not stepping:
                continue
            fresh.difference_update(stepping)
            scores = self.torch.from_numpy(logits)
            # a stepping row's logits: its newest id's, then one row per drafted id
            first, at = [], 0
            for seq, _, n in feeds:
                if n:
                    first.append(at)
                    at += n
            rows = [live[seq] for seq in stepping]
            nexts = scores[first]
            self._apply_grammar(rows, nexts)
            for seq, r, tid, k in zip(stepping, rows, sample(nexts, self.cfg, gen).tolist(), first):
                yield from self._take(seq, r, tid, drafts[seq], scores[k + 1:k + 1 + len(drafts[seq])], gen)
                if r.done:
                    del live[seq]

    def _draft(self, r: Row, room: int) -> list[int]:
        """At most `room` ids to check after the row's newest one (runtime/drafting.py), the grammar's first."""
        limit = min(self.draft_tokens, room)      # draft_tokens is 0 where the cache cannot be cut back
        if limit <= 0:
            return []
        draft = grammar_draft(r.matcher, limit)
        r.draft_source = "grammar"
        if not draft and r.in_call and self.draft_lookup:
            draft = lookup_draft(r.ids[r.lookup_from:r.out.prompt_tokens], r.ids[-3:], limit)
            r.draft_source = "lookup"
        self.drafts.proposed[r.draft_source] += len(draft)
        return draft

    def _take(self, seq: int, r: Row, tid: int, draft: list[int], later: Any, gen: Any) -> Iterator[Event]:
        """Take the sampled `tid`, then, while it equals the next drafted id, the id the model chooses at
        that drafted position (`later`: their logits) under the grammar; the drafted ids past the last one
        taken leave the cache."""
        yield from self._step_row(r, tid)
        t = 0
        while not r.done and t < len(draft) and tid == draft[t] and r.pending == [tid]:
            r.pending = []                   # already in the cache
            row = later[t:t + 1].clone()
            self._apply_grammar([r], row)
            t += 1
            tid = int(sample(row, self.cfg, gen)[0])
            yield from self._step_row(r, tid)
        hit = t < len(draft) and tid == draft[t]     # the last id taken is in the cache too (tools follow it)
        if hit and not r.done:
            r.pending = r.pending[1:]
        if draft:
            self.drafts.accepted[r.draft_source] += t + hit
            self.lc.keep(seq, len(self.lc.held[seq]) - (len(draft) - t - hit))

    def _prompt(self, conv: Conversation) -> tuple[list[int], int]:
        """The prompt's ids and how many of them are the system prompt and tools."""
        ids, head = encode_prompt_parts(self.tok, self.fmt, conv)
        if len(ids) >= self.n_ctx:
            raise ToolkitError(f"a prompt of {len(ids)} tokens does not fit llama.cpp's context of {self.n_ctx}",
                               field="model.n_ctx", fix=f"model.n_ctx={2 ** (len(ids) + 256).bit_length()}")
        return ids, head

    def _pick(self, free: list[int], prompts: Sequence[tuple[list[int], int]]) -> tuple[int, int, int]:
        """(sequence, prompt, shared ids) for the next conversation: of (prompt ids, system prompt and tools
        length) pairs, one whose system prompt and tools a free sequence holds whole, where it shares the
        most; else the first prompt, in the free sequence used longest ago (keeping whatever it shares). So
        each sequence keeps the last tool set it served, and an app's few tool sets each keep theirs."""
        best = None
        for k, (ids, head) in enumerate(prompts):
            for s in free:
                n = common_prefix(self.lc.held[s], ids, len(ids) - 1)   # the last id is always fed: its logits
                if n >= head and (best is None or n > best[2]):
                    best = (s, k, n)
        if best is not None:
            return best
        seq = min(free, key=lambda s: self.lc.last_used[s])
        ids = prompts[0][0]
        return seq, 0, common_prefix(self.lc.held[seq], ids, len(ids) - 1)

    def _admit(self, free: list[int], waiting: list[tuple[int, Conversation, list[int], int]]) -> tuple[int, Row]:
        """The waiting conversation and free sequence that share the most (`_pick`); only what differs is fed."""
        seq, k, shared = self._pick(free, [(w[2], w[3]) for w in waiting[:PREFIX_SCAN]])
        index, conv, ids, head = waiting.pop(k)
        shared = self.lc.keep(seq, shared)
        self.lc.touch(seq)
        self.reused_tokens += shared
        r = Row(index, conv, ids)
        r.lookup_from = head
        r.pending = ids[shared:]
        return seq, r

    def hold_prefix(self, conversation: Conversation) -> int:
        """Compute the system prompt and tools of `conversation` into a sequence now (the one already holding
        most of them, else the one used longest ago), so that a request over these tools pays only for its
        own words; returns the ids computed."""
        ids, head = self._prompt(conversation)
        seq, _, shared = self._pick(list(range(self.lc.parallel)), [(ids[:head + 1], head)])
        shared = self.lc.keep(seq, min(shared, head))
        self.lc.touch(seq)
        self.lc.feed(seq, ids[shared:head])
        return head - shared
