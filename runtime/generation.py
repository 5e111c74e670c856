"""How the engine decodes: `GenerationConfig`, in a module of its own so the entry points can register it
as the Hydra schema of `model.generation` (configs/model/hf.yaml) without importing torch at start-up.
`runtime.engine` re-exports it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class GenerationConfig:
    """How the engine decodes. (*) marks the fields people change."""

    max_new_tokens: int = 160          # (*) per case, over all its turns
    batch_size: int = 16               # (*) conversations decoded together
    do_sample: bool = False            # (*) greedy by default
    temperature: float = 0.7
    top_p: float = 0.95
    seed: int = 0
    max_tool_calls: int = 4            # a loop guard: calls per case before the engine stops it
    tool_timeout_s: float = 5.0        # a tool running longer returns a timeout error result
    continuation: str = "auto"         # auto | cache | reprefill (see the module docstring)
    prefill_group: int = 4             # prompts prefilled together before joining the decode batch
    refill: bool = True                # waiting conversations take the places of finished rows
    # KV of earlier prompts kept for the next ones that start alike (shared system prompt + tools);
    # about 46 kB a token for SmolLM2-135M in fp32; 0 turns it off
    prefix_cache_tokens: int = 4096
    # bf16 autocast of prompt prefill (GPUs, and CPUs with AVX512_BF16 or AMX: elsewhere it is turned off,
    # saying so; runtime/precision.py): about 1.7x faster prefill on such a CPU; decoding stays fp32 (under autocast the weights are cast again at every step: slower). Greedy
    # outputs drift from fp32 (benchmarks/bench_eval.py --autocast counts how often): off by default
    autocast: bool = False
    # (*) schema-constrained calls: inside a call only tokens that keep it valid for the offered tools
    # (names, keys, required keys, types, enums, bounds, the family's call syntax; runtime/constrained.py);
    # free text is never constrained. This is the whole default decoding: nothing reads the request's words
    # to rewrite a value, add a call or withdraw one.
    constrained: bool = True
    # ----- assists: off by default. Each is model-scored (it reads the model's probabilities, never the
    # request's words), so it behaves the same in every language; every call it touches gets a record in
    # CaseOutput.assists (predictions.jsonl `details.assists`, the server's `tool_call_assists`).
    # Right after a call closes, another call opens where the model gives its start at least this
    # probability (0: off). An under-trained adapter often ends the turn after the first call of a
    # two-call request while still giving the second 0.15-0.25; it also makes up extra calls (docs/results.md).
    next_call_p: float = 0.0
    # with constrained: a call that repeats one the turn already made, name and arguments, is taken back
    # as soon as it closes and written again with that tool left out of its grammar (at most `max_diverted`
    # times a case)
    divert_repeats: bool = False
    max_diverted: int = 2
    # a rewritten call is kept only where the model gave each of its tokens at least this probability
    # (before the grammar's mask); else it is taken back too and the turn ends after the calls before it
    divert_min_p: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.next_call_p < 1.0:
            raise ValueError(f"model.generation.next_call_p={self.next_call_p}: a probability in [0, 1) (0: off)")
        if self.divert_repeats and not self.constrained:
            raise ValueError("model.generation.divert_repeats=true needs model.generation.constrained=true "
                             "(the rewrite leaves the repeated tool out of the call grammar)")
