"""Offered tools whose names differ in one word, where the request says only one of the two (the engine's
`said_siblings`).

A small adapter picks between look-alike tools by habit rather than by the request: "Pan right 30 degrees"
-> pan_left, "the potential of the Solar farm" -> windFarm.potential, "the roots of a quadratic equation"
-> math.roots.polynomial beside math_roots.quadratic. Two names are siblings when they have as many words,
differ in exactly one, and share a word that is not an action word (runtime/recall.py: "get", "set",
"calculate", ...). Where the request says one sibling's word and not the other's, the other is left out of
the call grammar, until the said one has been called in the turn: "pan right 20 degrees, then back the
other way" leaves pan_left out of the first call only.

Not siblings: get_weather and get_time (they share only "get", so "a jacket in Leipzig, and the time"
keeps get_weather), set_alarm and get_alarm (the differing word is an action word: "get an alarm going"
keeps set_alarm). Over every prediction saved while building the CPU default (hand-written set, test
split, hackathon 30, BFCL), the calls this would have changed were 41 wrong picks made right, 2 wrong
picks made differently wrong and none right made wrong (README, Stop 53's rows). One request there needed
both siblings and said one's word only (a population "for the last 5 years", then "the projected" one:
the history and projection tools), hence the way back once the said one is called.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from toolcore.schema import Tool

from .leftover import _stems, name_words
from .recall import ACTION_WORDS


def _differing_words(a: set[str], b: set[str]) -> tuple[str, str] | None:
    """(a's word, b's word) where names of words `a` and `b` are siblings (module docstring), else None."""
    if len(a) != len(b) or len(a ^ b) != 2 or not (a & b) - ACTION_WORDS:
        return None
    mine, theirs = next(iter(a - b)), next(iter(b - a))
    if mine in ACTION_WORDS or theirs in ACTION_WORDS or mine[:4] == theirs[:4]:
        return None
    return mine, theirs


def unsaid_siblings(tools: Sequence[Tool], request: str, called: Iterable[str] = ()) -> set[str]:
    """The names of `tools` to leave out of the next call's grammar: each has a sibling among `tools`
    whose differing word `request` says while it does not say its own, and that sibling is not among
    the turn's `called` names."""
    said = _stems(request)
    done = set(called)
    words = {t.name: name_words(t.name) for t in tools}
    out = set()
    for name, mine in words.items():
        for other, theirs in words.items():
            pair = _differing_words(mine, theirs) if other != name else None
            if pair and pair[1][:4] in said and pair[0][:4] not in said and other not in done:
                out.add(name)
                break
    return out
