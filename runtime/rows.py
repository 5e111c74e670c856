"""One conversation's decoding step, shared by the engines (runtime/engine.py on transformers,
runtime/llamacpp_engine.py on llama.cpp): each computes logits its own way, then both mask them with the
same call grammar and hand every sampled id to the same `RowSteps._step_row`, which tracks the call
being written, ends the turn, runs the tools and appends the format's tool-response ids. So what one
backend answers for a conversation, the other answers too: only the logits differ.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from toolcore.conversation import Conversation, Message
from toolcore.executors import ExecutionContext, ToolResult, execute
from toolcore.formats import ChatFormat
from toolcore.schema import ToolCall
from toolcore.tokenize import encode_continuation

from .generation import GenerationConfig


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


class Row:
    """One conversation being decoded."""

    def __init__(self, index: int, conv: Conversation, prompt_ids: list[int]):
        self.index, self.conv = index, conv
        self.ids = list(prompt_ids)          # everything fed or to be fed, for re-prefill
        self.t_start = time.perf_counter()    # when it joined the batch (its latency counts from here)
        self.segment: list[int] = []          # tokens of the assistant text since the last tool response
        self.out = CaseOutput(prompt_tokens=len(prompt_ids))
        self.pending: list[int] = []          # tokens to feed next step
        self.lookup_from = 0                  # ids before this are the system prompt and tools (not looked up)
        self.draft_source = ""                # where the ids drafted after them came from (llama.cpp engine)
        self.done = False
        self.in_call = False                  # between call_start and call_end
        self.matcher: Any = None              # the call grammar's matcher while in a call (constrained)
        self.end_now = False                  # a forced call (tool_choice) just closed: the turn ends here
        self.after_call = False               # the last token closed a call
        self.diverted = 0                     # calls rewritten by divert_repeats in this row
        self.rewound_text = ""                # what the last rewind took back (streamed as 'rewind')
        self.diverting: dict[str, Any] | None = None   # while writing one: its record (min_p: the least
        #                                               probability the model gave one of its tokens)

    @property
    def choice(self) -> str:
        """conv.meta["tool_choice"]: "auto", "required" or a tool's name (the OpenAI server's forced calls)."""
        return self.conv.meta.get("tool_choice", "auto")


class RowSteps:
    """What an engine does with a row's logits and its sampled id. The engine sets tok, fmt, cfg,
    constraint (or None), eos_ids, turn_end_id, call_start, timing, pool, context and hand_back."""

    tok: Any
    fmt: ChatFormat
    cfg: GenerationConfig
    constraint: Any
    eos_ids: set[int]
    turn_end_id: int | None
    call_start: str
    timing: Timing
    pool: ThreadPoolExecutor
    context: Callable[[], ExecutionContext]
    # hand_back(conv, calls) -> True: the row ends with these calls unexecuted (stop_reason "tool_calls")
    # for a caller that runs them itself (the OpenAI server returns them to its client)
    hand_back: Callable[[Conversation, list[ToolCall]], bool] | None

    def events(self, conversations: Sequence[Conversation], batch_size: int | None = None) -> Iterator[Event]:
        raise NotImplementedError

    def run(self, conversations: Sequence[Conversation]) -> list[CaseOutput]:
        """Every conversation's output, in order (the 'done' events of `events`)."""
        outputs: list[CaseOutput | None] = [None] * len(conversations)
        for ev in self.events(conversations):
            if ev.kind == "done":
                outputs[ev.index] = ev.output
        return outputs  # type: ignore[return-value]

    def _apply_grammar(self, rows: list[Row], logits: Any) -> None:
        """Mask each row's logits (one row of `logits` per row) under the call grammar."""
        if self.constraint is None:
            return
        t0 = time.perf_counter()
        self.constraint.mask(logits, [r.matcher for r in rows], [not r.conv.tools and not r.in_call for r in rows])
        # a turn never ends inside an open call (a tokenizer whose turn-end token xgrammar does not know as
        # special would let it through as string text)
        open_calls = [k for k, r in enumerate(rows) if r.in_call]
        if open_calls and self.eos_ids:
            logits[open_calls, sorted(self.eos_ids)] = float("-inf")
        # tool_choice "required" or a tool's name: the turn opens with a call, and ends when it closes
        self.constraint.force(logits, [k for k, r in enumerate(rows) if r.out.new_tokens == 0 and r.choice != "auto"])
        self.constraint.force(logits, [k for k, r in enumerate(rows) if r.end_now], self.turn_end_id)
        self.timing.constrain_s += time.perf_counter() - t0

    def _taken_back(self, r: Row) -> bool:
        """An assist may take the call that just closed back (runtime/engine.py divert_repeats): none here."""
        return False

    def _step_row(self, r: Row, tid: int) -> Iterator[Event]:
        """Take the sampled `tid` into the row; yields its events and returns what the row needs next:
        "rewind" (an assist took tokens back), "tools" (tool-response ids are pending) or None."""
        r.out.new_tokens += 1
        r.end_now = False
        r.segment.append(tid)
        r.ids.append(tid)
        r.pending = [tid]
        yield Event(r.index, "text", text=self.tok.decode([tid], skip_special_tokens=False))
        tail = self.tok.decode(r.segment[-24:], skip_special_tokens=False)
        r.after_call = bool(self.fmt.call_end) and tail.endswith(self.fmt.call_end)
        if self.constraint is not None:
            self._track_call(r, tid, tail)
        if r.after_call and self._taken_back(r):
            yield Event(r.index, "rewind", text=r.rewound_text)
            return "rewind"
        ended = tid in self.eos_ids or self.fmt.turn_end in tail
        text = self.tok.decode(r.segment, skip_special_tokens=False) if ended or r.after_call else ""
        parsed = self.fmt.parse(text) if text else None
        outcome = None
        if ended and not (parsed and parsed.calls):
            self._close(r, "end_of_turn")
        elif parsed and parsed.calls and ended and self.hand_back and self.hand_back(r.conv, parsed.calls):
            self._commit(r, text, parsed)
            self._close(r, "tool_calls")
        elif parsed and parsed.calls and (ended or self.fmt.pauses_after(parsed.calls[-1])):
            # the turn ended with calls (or an inline call finished): run them, feed results
            yield from self._run_tools(r, text, parsed)
            outcome = None if r.done else "tools"
        elif r.out.new_tokens >= self.cfg.max_new_tokens:
            self._close(r, "max_new_tokens")
        if r.done:
            yield Event(r.index, "done", output=r.out)
        return outcome

    def _track_call(self, r: Row, tid: int, tail: str) -> None:
        """Enter a call at its start marker (with a matcher for the case's tools), advance the matcher
        inside it, leave at the end marker."""
        t0 = time.perf_counter()
        if r.in_call:
            if r.matcher is not None:
                r.matcher.accept_token(tid)
                r.out.constrained_tokens += 1
            if tail.endswith(self.fmt.call_end):
                r.in_call, r.matcher = False, None
                r.end_now = r.choice != "auto" and self.turn_end_id is not None
        elif tail.endswith(self.call_start):
            tools = [t for t in r.conv.tools if t.name == r.choice] or r.conv.tools   # a named tool: only its calls
            r.in_call, r.matcher = True, self.constraint.start(tools)
        self.timing.constrain_s += time.perf_counter() - t0

    def _commit(self, r: Row, text: str, parsed: Any) -> None:
        """The turn's text so far into the output with `parsed`'s calls."""
        r.out.text += text
        r.out.calls += parsed.calls
        r.out.parse_failures += parsed.failures
        r.segment = []

    def _run_tools(self, r: Row, text: str, parsed) -> Iterator[Event]:
        r.out.text += text
        r.segment = []
        r.out.parse_failures += parsed.failures
        if r.out.first_call_ms is None:
            r.out.first_call_ms = (time.perf_counter() - r.t_start) * 1000
        results = []
        for call in parsed.calls:
            r.out.calls.append(call)
            yield Event(r.index, "call", call=call)
            ev = self._execute(call, r.conv)
            r.out.tool_events.append(ev)
            yield Event(r.index, "result", tool=ev)
            results.append(Message.text("tool", _json(ev.result), name=call.name))
        if len(r.out.calls) >= self.cfg.max_tool_calls:
            self._close(r, "max_tool_calls")
            return
        r.out.text += self.fmt.continuation(results)
        cont_ids = encode_continuation(self.tok, self.fmt, results)
        r.pending += cont_ids
        r.ids += cont_ids

    def _execute(self, call: ToolCall, conv: Conversation) -> ToolEvent:
        ev = run_tool(call, conv, self.pool, self.context, self.cfg.tool_timeout_s)
        self.timing.tools_s += ev.ms / 1000
        return ev

    def _close(self, r: Row, reason: str) -> None:
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
        r.out.latency_ms = (time.perf_counter() - r.t_start) * 1000


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
    return json.dumps(obj, ensure_ascii=False)
