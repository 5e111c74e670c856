"""Schema-constrained decoding: which grammar engine, and what it costs the batched engine.

    python benchmarks/bench_constrained.py [--adapter runs/demo/adapter] [--batch-size 16]

1. Grammar engines on the same call grammars (`ChatFormat.call_grammar`, generic format, the
   hackathon 30's tool sets, SmolLM2's 49k-token vocabulary with the tool tokens): compile time per
   tool set, mask time per token while the valid call is fed token by token, and whether every valid
   call was accepted. xgrammar (what `runtime/constrained.py` uses) and llguidance (if installed).
2. The engine on the hackathon 30 with constraints off and on, same model, same batches: wall time,
   tokens, the time spent on masks and matchers per generated token and per constrained token,
   and whether the calls differ.
"""

from __future__ import annotations

import argparse
import time

import torch
from rich.console import Console
from rich.table import Table

from runtime.constrained import CallConstraint
from runtime.engine import GenerationConfig, ToolLoopEngine
from runtime.models.hf import load_model_and_tokenizer
from toolcore.formats import get_format
from toolcore.suites import load_suite


def feed(ids: list[int], mask, accept, warm_up: bool = False) -> tuple[float, int, bool]:
    """Walk a valid call token by token under a grammar: the seconds spent masking (the first mask
    left out when `warm_up`), how many masks were timed, and whether every token was accepted."""
    seconds, timed, good = 0.0, 0, True
    for n, token in enumerate(ids):
        t0 = time.perf_counter()
        mask()
        if not (warm_up and n == 0):
            seconds += time.perf_counter() - t0
            timed += 1
        good = good and accept(token)
    return seconds, timed, good


def grammar_engines(tok, fmt, cases) -> list[list[str]]:
    rows = []
    end_id = tok.convert_tokens_to_ids(fmt.call_end)
    bodies = []
    for c in cases:
        call = c.expected_calls[0] if c.expected_calls else None
        if call is None:
            continue
        text = fmt.render_calls([call])[len(fmt.call_start):-len(fmt.call_end)]
        bodies.append((c.conversation.tools, tok.encode(text, add_special_tokens=False) + [end_id]))

    xc = CallConstraint(tok, fmt, len(tok))
    compile_s = mask_s = 0.0
    tokens = ok = 0
    logits = torch.zeros(1, len(tok))
    for tools, ids in bodies:
        t0 = time.perf_counter()
        xc._compile(tools)
        compile_s += time.perf_counter() - t0
        m = xc.start(tools)
        seconds, masks, good = feed(ids, lambda: xc.mask(logits, [m], [False]), m.accept_token)
        mask_s, tokens = mask_s + seconds, tokens + masks
        ok += good and m.is_terminated()
    rows.append(["xgrammar", f"{compile_s / len(bodies) * 1000:.2f}", f"{mask_s / tokens * 1000:.3f}",
                 f"{ok}/{len(bodies)}"])
    try:
        import llguidance
        import llguidance.hf
        import llguidance.torch as llt
    except ImportError:
        rows.append(["llguidance", "not installed", "-", "-"])
        return rows
    lltok = llguidance.hf.from_tokenizer(tok, n_vocab=len(tok), eos_token=end_id)
    bitmask = llt.allocate_token_bitmask(1, len(tok))
    compile_s = mask_s = 0.0
    tokens = ok = 0
    for k, (tools, ids) in enumerate(bodies):
        # the same grammar text; llguidance reads GBNF-style EBNF through its lark front end
        t0 = time.perf_counter()
        grammar = llguidance.grammar_from("ebnf", fmt.call_grammar(tools))
        m = llguidance.LLMatcher(lltok, grammar)
        compile_s += time.perf_counter() - t0
        def mask() -> None:
            llt.fill_next_token_bitmask(m, bitmask, 0)
            llt.apply_token_bitmask_inplace(logits, bitmask)

        # the very first mask call warms up a compiled kernel: not counted
        seconds, masks, good = feed(ids, mask, m.consume_token, warm_up=k == 0)
        mask_s, tokens = mask_s + seconds, tokens + masks
        ok += good and not m.is_error() and m.is_stopped()
    rows.append(["llguidance", f"{compile_s / len(bodies) * 1000:.2f}", f"{mask_s / max(tokens, 1) * 1000:.3f}",
                 f"{ok}/{len(bodies)}"])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--adapter", default=None, help="a trained adapter folder (default: the base model)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    args = ap.parse_args()
    console = Console()
    fmt = get_format("generic")
    model, tok = load_model_and_tokenizer("smollm2", adapter=args.adapter)
    if tok.convert_tokens_to_ids(fmt.call_end) == tok.unk_token_id or len(tok.encode(fmt.call_end)) != 1:
        tok.add_special_tokens({"additional_special_tokens": list(fmt.tool_tokens)})
        model.resize_token_embeddings(len(tok), mean_resizing=False)
    cases = load_suite("hackathon30")

    table = Table(title="grammar engines: the hackathon 30's call grammars, SmolLM2 vocabulary")
    for col in ("engine", "compile ms / tool set", "mask ms / token", "valid calls accepted"):
        table.add_column(col)
    for row in grammar_engines(tok, fmt, cases):
        table.add_row(*row)
    console.print(table)

    convs = [c.conversation for c in cases]
    table = Table(title=f"engine on the hackathon 30, batch {args.batch_size}, greedy "
                        f"({'adapter ' + args.adapter if args.adapter else 'base SmolLM2'})")
    for col in ("constrained", "wall s", "new tokens", "constrained tokens", "mask+matcher s",
                "overhead ms / token", "overhead ms / constrained token", "share of wall"):
        table.add_column(col)
    calls = {}
    for constrained in (False, True):
        cfg = GenerationConfig(max_new_tokens=args.max_new_tokens, batch_size=args.batch_size, constrained=constrained)
        engine = ToolLoopEngine(model, tok, fmt, cfg)
        engine.run(convs[:2])                      # warm-up (and the grammars of those tool sets)
        engine.timing.__init__()
        t0 = time.perf_counter()
        outs = engine.run(convs)
        wall = time.perf_counter() - t0
        new = sum(o.new_tokens for o in outs)
        con = sum(o.constrained_tokens for o in outs)
        cs = engine.timing.constrain_s
        calls[constrained] = [o.calls for o in outs]
        table.add_row(str(constrained), f"{wall:.1f}", str(new), str(con), f"{cs:.3f}", f"{cs / new * 1000:.3f}",
                      f"{cs / con * 1000:.3f}" if con else "-", f"{cs / wall:.1%}")
    console.print(table)
    differ = sum(a != b for a, b in zip(calls[False], calls[True]))
    console.print(f"cases whose calls differ with constraints on: {differ} of {len(cases)}")


if __name__ == "__main__":
    main()
