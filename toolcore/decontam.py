"""Decontamination: no kept user utterance may equal an eval utterance (after normalising case,
spacing and punctuation) or share a word 8-gram with one. Eval suites are registered by name or
path in the config (`decontaminate_against`: built-in names, suite JSONL files, BFCL question files); every
built-in suite is among them by default. Shared by
data_gen and the converter (`toolcore.convert`), which checks every user turn of an imported conversation.
"""

from __future__ import annotations

import re
from typing import Iterable

from .bfcl import suite_user_texts
from .registry import load_registry

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def normalize(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def ngrams(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


class Decontaminator:
    def __init__(self, utterances: Iterable[str], n: int = 8):
        self.n = n
        self.exact: set[str] = set()
        self.grams: set[tuple[str, ...]] = set()
        for u in utterances:
            norm = normalize(u)
            self.exact.add(norm)
            self.grams |= ngrams(norm.split(), n)

    @classmethod
    def from_suites(cls, suites: Iterable[str], n: int = 8) -> "Decontaminator":
        registry = load_registry()   # once: suites that name their tools would load it for every case
        # suite_user_texts reads imported BFCL question files too, so they can be decontaminated against
        return cls([t for s in suites for t in suite_user_texts(s, registry)], n)

    def reason(self, text: str) -> str | None:
        norm = normalize(text)
        if norm in self.exact:
            return "decontaminated:exact"
        words = norm.split()
        if len(words) >= self.n and not self.grams.isdisjoint(ngrams(words, self.n)):
            return "decontaminated:8gram"
        return None
