"""Word error rate between a reference text and a transcript, after one shared normalisation.

`normalize_for_wer` makes written and spoken forms of the same words equal: digits, clock times,
arithmetic and symbols become words with toolcore.spoken's rules ("7:30 a.m." and "seven thirty AM"
both give ``seven thirty am``), then case, accents, punctuation, hyphens and hesitation fillers go.
The time of day is one token ("am"/"pm") so that a transcript normalised word by word ("a.m." on
its own, as recognisers with word timestamps give it) still matches.
data_gen checks synthesised clips with it and the eval report scores speech recognition with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from .spoken import NUMBER_WORDS, spoken_form
from .text import fold_accents

# hesitations a recogniser drops (Whisper's own normaliser removes these too)
FILLERS = frozenset("um umm uh uhm uhh er erm hmm hm mm mmm mhm ah".split())
SPELLINGS = {"ok": "okay"}
# "eight o'clock" = "8:00" = "eight": the word adds nothing a transcript must get right
DROP = frozenset({"o'clock", "oclock"})
# an operator transcribed as a word of its own ("70", "-", "5" with word timestamps)
LONE_OPERATORS = {"-": "minus", "−": "minus", "+": "plus", "*": "times", "×": "times", "/": "divided by",
                  "÷": "divided by", "=": "equals", "**": "to the power of", "^": "to the power of", "%": "percent"}
_ACRONYM = re.compile(r"(?<!\w)((?:[^\W\d_]\.)+[^\W\d_])\.?(?![\w])")   # "U.S.A." -> "usa"
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_BIG = ("hundred", "thousand", "million", "billion")


def normalize_for_wer(text: str, *, drop_fillers: bool = True) -> list[str]:
    """Lowercase words without punctuation, with numbers, times and symbols spelled out.

    "Set an alarm for 7:30 a.m." -> ["set", "an", "alarm", "for", "seven", "thirty", "am"];
    "twenty-five" -> ["twenty", "five"]; "one hundred and five" -> ["one", "hundred", "five"];
    "8:00" and "eight o'clock" -> ["eight"].
    Contractions stay as written ("what's"). Never raises.
    """
    text = text if isinstance(text, str) else str(text)
    if text.strip() in LONE_OPERATORS:
        return LONE_OPERATORS[text.strip()].split()
    text = spoken_form(text, meridiem=("am", "pm"))
    text = _ACRONYM.sub(lambda m: m.group(1).replace(".", ""), text)
    text = fold_accents(text.lower().replace("’", "'")).replace("-", " ")
    words = [SPELLINGS.get(w, w) for w in _WORD.findall(text) if w not in DROP]
    if drop_fillers:
        words = [w for w in words if w not in FILLERS]
    # "seven a m" (letters said one by one) -> "seven am"
    for i in range(len(words) - 2, 0, -1):
        if words[i] in ("a", "p") and words[i + 1] == "m" and words[i - 1] in NUMBER_WORDS:
            words[i:i + 2] = [words[i] + "m"]
    # "one hundred and twenty" = "one hundred twenty": the "and" inside a number is optional
    return [w for i, w in enumerate(words)
            if not (w == "and" and 0 < i < len(words) - 1 and words[i - 1] in _BIG and words[i + 1] in NUMBER_WORDS)]


@dataclass(frozen=True)
class WerDetails:
    """Edit counts of the word alignment; `wer` = (S + D + I) / reference words."""

    hits: int
    substitutions: int
    deletions: int
    insertions: int
    reference: tuple[str, ...]
    hypothesis: tuple[str, ...]

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def wer(self) -> float:
        if not self.reference:
            # nothing to say: a silent transcript is right, anything else is all wrong
            return 0.0 if not self.hypothesis else 1.0
        return self.errors / len(self.reference)


def _words(x: str | Sequence[str]) -> tuple[str, ...]:
    """A text is normalised; a list of words is taken as already normalised."""
    return tuple(normalize_for_wer(x)) if isinstance(x, str) else tuple(x)


def wer_details(reference: str | Sequence[str], hypothesis: str | Sequence[str]) -> WerDetails:
    ref, hyp = _words(reference), _words(hypothesis)
    if not ref or not hyp:
        return WerDetails(0, 0, len(ref), len(hyp), ref, hyp)
    import jiwer

    # words hold no spaces after normalisation; jiwer splits on spaces
    out = jiwer.process_words(" ".join(ref), " ".join(hyp))
    return WerDetails(out.hits, out.substitutions, out.deletions, out.insertions, ref, hyp)


def wer(reference: str | Sequence[str], hypothesis: str | Sequence[str]) -> float:
    """Word-level edit distance / number of reference words (may exceed 1 with many insertions)."""
    return wer_details(reference, hypothesis).wer


def corpus_wer(pairs: Iterable[tuple[str | Sequence[str], str | Sequence[str]]]) -> float:
    """All errors over all reference words (not the mean of per-utterance rates)."""
    errors = words = 0
    for ref, hyp in pairs:
        d = wer_details(ref, hyp)
        errors += d.errors
        words += len(d.reference)
    return errors / words if words else 0.0
