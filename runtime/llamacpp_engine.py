"""The live tool loop on llama.cpp (through llama-cpp-python): a GGUF model decodes, the toolkit does the rest.

The same contract as `runtime.engine.ToolLoopEngine`, one conversation at a time: the prompt ids come
from the model's own Hugging Face tokenizer (exactly the ids training fed, as in the transformers
engine), llama.cpp computes the logits, the call grammar masks them, the greedy pick (or a sample) is
fed back; a turn that ends with calls runs the tools and the format's tool-response ids are appended
before the answer. The grammar is the transformers engine's own (runtime/constrained.py: xgrammar
compiled from `ChatFormat.call_grammar`), applied to llama.cpp's logits, so both backends accept and
refuse exactly the same calls: the figures of one stand for the other. Keys and values of earlier
prompts stay in llama.cpp's context: a prompt that starts like the last one (the same system prompt
and tools, an earlier turn of the chat) computes only the rest.

Not here: the opt-in assists (next_call_p, divert_repeats), and decoding several conversations together
(llama-cpp-python's context holds one sequence).
"""

from __future__ import annotations

import atexit
import os
import time
from typing import Any, Callable, Iterator, Sequence

from toolcore.conversation import Conversation, Message
from toolcore.errors import ToolkitError
from toolcore.executors import ExecutionContext
from toolcore.formats import ChatFormat
from toolcore.tokenize import encode_continuation, encode_prompt

from .engine import CaseOutput, Event, Timing, _json, default_context, run_tool, sample, stop_ids
from .generation import GenerationConfig


def load_llama(gguf: str, *, n_ctx: int, threads: int, repack: bool) -> Any:
    """llama-cpp-python's Llama. `repack` lets llama.cpp move weights into its CPU "extra" buffers (AMX and
    repacked int8 layouts): on an AMX CPU its q8_0 matmul crashed here on a small model (hidden size 64,
    llama.cpp of llama-cpp-python 0.3.36), so it is off unless asked for. The binding has no argument for
    it: its default model parameters are adjusted for the one load."""
    import llama_cpp
    from llama_cpp import llama as binding

    defaults = binding.llama_cpp.llama_model_default_params

    def params():
        p = defaults()
        p.use_extra_bufts = repack
        return p

    binding.llama_cpp.llama_model_default_params = params
    try:
        return llama_cpp.Llama(model_path=gguf, n_ctx=n_ctx, n_threads=threads, n_batch=512, logits_all=False,
                               verbose=False)
    finally:
        binding.llama_cpp.llama_model_default_params = defaults


class LlamaCppEngine:
    def __init__(self, gguf: str, tokenizer: Any, fmt: ChatFormat, config: GenerationConfig | None = None,
                 n_ctx: int = 4096, threads: int | None = None, repack: bool = False,
                 context: Callable[[], ExecutionContext] | None = None):
        import torch

        self.torch = torch
        self.cfg = config or GenerationConfig()
        if self.cfg.next_call_p > 0 or self.cfg.divert_repeats:
            raise ToolkitError("the llama.cpp backend decodes without the assists", field="model.generation",
                               fix="leave next_call_p and divert_repeats off, or use the transformers engine (model=hf)")
        self.tok, self.fmt = tokenizer, fmt
        self.llm = load_llama(str(gguf), n_ctx=n_ctx, threads=threads or os.cpu_count() or 1, repack=repack)
        # closed before the interpreter tears down the binding's module (its own __del__ then fails noisily)
        atexit.register(self.llm.close)
        self.n_ctx = n_ctx
        self.context_length = n_ctx           # what the server tells clients a request may hold
        self.n_vocab = self.llm.n_vocab()
        if self.n_vocab < len(tokenizer):
            raise ToolkitError(f"the GGUF has {self.n_vocab} tokens, its tokenizer {len(tokenizer)}", file=str(gguf),
                               field="model.tokenizer", fix="give the tokenizer the model was trained with (train.export "
                                                            "writes it beside the GGUF)")
        self.eos_ids, self.turn_end_id = stop_ids(tokenizer, fmt)
        self.call_start = getattr(fmt, "call_start", "")
        self.timing = Timing()
        self.context = context or default_context
        from concurrent.futures import ThreadPoolExecutor

        self.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tool")
        self.hand_back: Callable[[Conversation, list], bool] | None = None
        self.constraint = None
        if self.cfg.constrained and self.call_start:
            from .constrained import CallConstraint

            self.constraint = CallConstraint(tokenizer, fmt, self.n_vocab)
        self.gen = torch.Generator().manual_seed(self.cfg.seed)

    # ----- llama.cpp's context -------------------------------------------------------------------
    def _hold(self, ids: list[int]) -> None:
        """Make the context hold exactly `ids`, computing only what differs from what it holds."""
        held = self.llm.n_tokens
        prev = self.llm.input_ids[:held]
        k = 0
        limit = min(held, len(ids) - 1)            # the last id is always fed: its logits are needed
        while k < limit and prev[k] == ids[k]:
            k += 1
        self.llm.n_tokens = k
        self.llm.eval(ids[k:])

    def _logits(self):
        import numpy as np
        from llama_cpp import llama_get_logits_ith

        ptr = llama_get_logits_ith(self.llm._ctx.ctx, -1)
        return self.torch.from_numpy(np.ctypeslib.as_array(ptr, shape=(1, self.n_vocab)).copy())

    # ----- the loop ------------------------------------------------------------------------------
    def run(self, conversations: Sequence[Conversation]) -> list[CaseOutput]:
        return [ev.output for ev in self.events(conversations) if ev.kind == "done"]

    def stream(self, conversation: Conversation) -> Iterator[Event]:
        return self.events([conversation])

    def events(self, conversations: Sequence[Conversation], batch_size: int | None = None) -> Iterator[Event]:
        """What the transformers engine streams ('text', 'call', 'result', 'done'), one conversation after
        the other."""
        for index, conv in enumerate(conversations):
            yield from self._events(index, conv)

    def _events(self, index: int, conv: Conversation) -> Iterator[Event]:
        t_start = time.perf_counter()
        ids = encode_prompt(self.tok, self.fmt, conv)
        out = CaseOutput(prompt_tokens=len(ids))
        segment: list[int] = []
        in_call, matcher, end_now = False, None, False
        choice = conv.meta.get("tool_choice", "auto")
        t0 = time.perf_counter()
        self._fits(ids, out)
        self._hold(ids)
        self.timing.prefill_s += time.perf_counter() - t0
        while True:
            logits = self._logits()
            if self.constraint is not None:
                t0 = time.perf_counter()
                self.constraint.mask(logits, [matcher], [not conv.tools and not in_call])
                if in_call and self.eos_ids:        # a turn never ends inside an open call
                    logits[0, sorted(self.eos_ids)] = float("-inf")
                if out.new_tokens == 0 and choice != "auto":
                    self.constraint.force(logits, [0])
                if end_now:
                    self.constraint.force(logits, [0], self.turn_end_id)
                self.timing.constrain_s += time.perf_counter() - t0
            tid = int(sample(logits, self.cfg, self.gen)[0])
            out.new_tokens += 1
            end_now = False
            segment.append(tid)
            ids.append(tid)
            feed = [tid]
            yield Event(index, "text", text=self.tok.decode([tid], skip_special_tokens=False))
            tail = self.tok.decode(segment[-24:], skip_special_tokens=False)
            if self.constraint is not None:
                if in_call:
                    if matcher is not None:
                        matcher.accept_token(tid)
                        out.constrained_tokens += 1
                    if tail.endswith(self.fmt.call_end):
                        in_call, matcher = False, None
                        end_now = choice != "auto" and self.turn_end_id is not None
                elif tail.endswith(self.call_start):
                    tools = [t for t in conv.tools if t.name == choice] or conv.tools
                    in_call, matcher = True, self.constraint.start(tools)
            ended = tid in self.eos_ids or self.fmt.turn_end in tail
            text = self.tok.decode(segment, skip_special_tokens=False) if ended or (
                self.fmt.call_end and tail.endswith(self.fmt.call_end)) else ""
            parsed = self.fmt.parse(text) if text else None
            if ended and not (parsed and parsed.calls):
                yield self._close(index, out, segment, "end_of_turn", t_start, ids)
                return
            if parsed and parsed.calls and ended and self.hand_back and self.hand_back(conv, parsed.calls):
                out.text += text
                out.calls += parsed.calls
                out.parse_failures += parsed.failures
                yield self._close(index, out, [], "tool_calls", t_start, ids)
                return
            if parsed and parsed.calls and (ended or self.fmt.pauses_after(parsed.calls[-1])):
                out.text += text
                out.parse_failures += parsed.failures
                segment = []
                if out.first_call_ms is None:
                    out.first_call_ms = (time.perf_counter() - t_start) * 1000
                results = []
                for call in parsed.calls:
                    out.calls.append(call)
                    yield Event(index, "call", call=call)
                    ev = run_tool(call, conv, self.pool, self.context, self.cfg.tool_timeout_s)
                    self.timing.tools_s += ev.ms / 1000
                    out.tool_events.append(ev)
                    yield Event(index, "result", tool=ev)
                    results.append(Message.text("tool", _json(ev.result), name=call.name))
                if len(out.calls) >= self.cfg.max_tool_calls:
                    yield self._close(index, out, [], "max_tool_calls", t_start, ids)
                    return
                out.text += self.fmt.continuation(results)
                cont = encode_continuation(self.tok, self.fmt, results)
                feed += cont
                ids += cont
            elif out.new_tokens >= self.cfg.max_new_tokens:
                yield self._close(index, out, segment, "max_new_tokens", t_start, ids)
                return
            if not self._fits(ids, out):
                yield self._close(index, out, segment, "context_full", t_start, ids)
                return
            t0 = time.perf_counter()
            self.llm.eval(feed)
            elapsed = time.perf_counter() - t0
            if len(feed) > 1:
                self.timing.continuation_s += elapsed
            else:
                self.timing.decode_s += elapsed
            self.timing.steps += 1

    def _fits(self, ids: list[int], out: CaseOutput) -> bool:
        if len(ids) < self.n_ctx:
            return True
        if out.new_tokens == 0:
            raise ToolkitError(f"a prompt of {len(ids)} tokens does not fit llama.cpp's context of {self.n_ctx}",
                               field="model.n_ctx", fix=f"model.n_ctx={2 ** (len(ids) + 256).bit_length()}")
        return False

    def _close(self, index: int, out: CaseOutput, segment: list[int], reason: str, t_start: float,
               ids: list[int]) -> Event:
        if segment:
            text = self.tok.decode(segment, skip_special_tokens=False)
            parsed = self.fmt.parse(text)
            out.text += text
            out.calls += parsed.calls
            out.parse_failures += parsed.failures
        out.stop_reason = reason
        out.output_ids = ids[out.prompt_tokens:]
        out.latency_ms = (time.perf_counter() - t_start) * 1000
        return Event(index, "done", output=out)
