"""Copied values: a required string the request never states is decoded again, as a copy of its words.

A 135M adapter copies names badly: it reads "will it be nice in leipzig today?" and writes
get_weather(location="Lüneburg"), "Remind me about groceries" becomes title="goberments", a city it
saw often in training ("San Francisco") replaces the one asked about. The grounding check
(runtime/grounding.py) withdraws such a call, because "Lüneburg" is said nowhere, and the request is
lost although the model picked the right tool and the right argument. Here the model gets one more
try at that value: it is decoded again from the same point (everything the model wrote before the
value's opening quote), greedily, with only the tokens that spell a span of the request's words
allowed (a trie over every span of 1 to `MAX_SPAN_WORDS` consecutive words, as written and Title
Cased, each followed by the closing quote). The model chooses both where the span starts and where
it ends; it cannot write a word the user did not say.

A copy is taken only when the model supports it: its first token (where the span starts, the choice
that matters most) must carry at least `MIN_SUPPORT` of the model's probability summed over every
span start the trie allows, and the whole span (closing quote included) a log-probability of at
least `MIN_LOGPROB`. A model that made a value up for a request no offered tool serves (irrelevance)
mostly puts little on the request's words there, and the call stays withdrawn. Both floors were set on
development sets that no reported figure uses (the generated validation split, and a second unseen-tool
suite drawn with another seed): right copies there had support 0.06-1.0 and log-probability -2.9 to
-8.5; the made-up values the floors turn away -11 and below ("Timer" for a weather location, an email
address for a country). Some wrong copies pass (a spurious weather call for a song request copies the
band's name "Oasis" at -1.0): the model cannot tell those apart.

Only strings without digits are copied (times, dates and expressions have canonical forms that differ
from what was said on purpose, as in `StatedValues.snap`).

Measured on stop 26's default adapter (seed 0), only decoding changed, off -> on: test split 0.789 ->
0.796, unseen tools 0.738 -> 0.752, BFCL live_simple 0.125 -> 0.175 ("Naponia" -> "Naples, Florida",
"Quieta Rojo" -> "Quintana Roo, Mexico"); hackathon 30, hand-written set and the other seven BFCL files
unchanged. Per case 10 won and 2 lost (a withdrawn call became a wrong one: F1 falls, BFCL unchanged).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from .grounding import WORD
from .kv_cache import common_prefix

MAX_SPAN_WORDS = 8
MIN_SUPPORT = 0.05
MIN_LOGPROB = -10.0
_QUOTES = "\"'"


@dataclass
class Copy:
    value: str            # the span chosen, as the request writes it (or Title Cased)
    support: float        # the model's probability on every allowed first token, summed
    logprob: float        # the chosen path's log-probability under the model (closing quote included)


def request_spans(text: str, max_words: int = MAX_SPAN_WORDS) -> list[str]:
    """Every run of 1..max_words consecutive words of `text` (inner punctuation kept: "Berkeley, CA"),
    also Title Cased where that differs, without duplicates, in order of appearance."""
    words = [m.span() for m in WORD.finditer(text)]
    out: dict[str, None] = {}
    for i in range(len(words)):
        for j in range(i, min(i + max_words, len(words))):
            span = text[words[i][0]:words[j][1]]
            if "\n" in span:
                break
            out[span] = None
            if span.islower():      # "kinshasa" may be written Kinshasa; "in Daytona Beach" stays as it is
                out[" ".join(w[:1].upper() + w[1:] for w in span.split(" "))] = None
    return list(out)


def locate(text: str, key: str, value: str) -> tuple[int, str, bool] | None:
    """Where the written `value` of argument `key` starts in a call's `text`, the quote that closes it
    and whether it was written JSON-escaped; None where it cannot be found unambiguously."""
    at = text.find(key)
    if at < 0:
        return None
    for written, escaped in ((value, False), (json.dumps(value)[1:-1], True)):
        pos = text.find(written, at + len(key))
        if pos > 0 and text[pos - 1] in _QUOTES and text[pos + len(written):pos + len(written) + 1] == text[pos - 1]:
            return pos, text[pos - 1], escaped
    return None


class SpanCopier:
    """Greedy decoding under a trie of request spans, for a causal LM and its tokenizer."""

    def __init__(self, model: Any, tokenizer: Any, min_support: float = MIN_SUPPORT, min_logprob: float = MIN_LOGPROB):
        import torch

        self.torch, self.model, self.tok = torch, model, tokenizer
        self.device = next(model.parameters()).device
        self.min_support, self.min_logprob = min_support, min_logprob

    def copy(self, context_ids: Sequence[int], prefix_text: str, spans: Sequence[str], close: str,
             escaped: bool) -> Copy | None:
        """The span the model writes after `context_ids` + `prefix_text` (the call so far, up to and
        including the value's opening quote) when only spans, each closed by `close`, are allowed.
        None when no span can be written, or the model's support for them or its probability of the
        span it wrote is below the floor."""
        render = (lambda s: json.dumps(s)[1:-1]) if escaped else (lambda s: s)    # noqa: E731
        spans = [s for s in spans if close not in render(s) and "\\" not in render(s)]
        if not spans:
            return None
        enc = lambda t: self.tok.encode(t, add_special_tokens=False)             # noqa: E731
        full = [enc(prefix_text + render(s) + close) for s in spans]
        # the tokens every candidate shares with the prefix are context; the rest is what is chosen
        base = enc(prefix_text)
        shared = min(common_prefix(base, f) for f in full)
        tails = [tuple(f[shared:]) for f in full]
        if any(not t for t in tails):
            return None
        torch = self.torch
        ids = torch.tensor([list(context_ids) + base[:shared]], device=self.device)
        with torch.inference_mode():
            out = self.model(input_ids=ids, use_cache=True)
            cache, logits = out.past_key_values, out.logits[0, -1].float()
            alive = list(range(len(tails)))
            logprob, support, step = 0.0, 0.0, 0
            while True:
                allowed = sorted({tails[k][step] for k in alive if len(tails[k]) > step})
                if not allowed:
                    break
                lp = torch.log_softmax(logits, -1)
                scores = lp[allowed]
                pick = allowed[int(scores.argmax())]
                if step == 0:
                    support = float(scores.exp().sum())
                    if support < self.min_support:
                        return None
                logprob += float(lp[pick])
                alive = [k for k in alive if len(tails[k]) > step and tails[k][step] == pick]
                step += 1
                finished = [k for k in alive if len(tails[k]) == step]
                if finished:
                    return Copy(spans[finished[0]], support, logprob) if logprob >= self.min_logprob else None
                out = self.model(input_ids=torch.tensor([[pick]], device=self.device), past_key_values=cache,
                                 use_cache=True)
                cache, logits = out.past_key_values, out.logits[0, -1].float()
        return None
