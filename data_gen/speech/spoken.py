"""What a person would SAY for a written request: the text a TTS voice reads.

toolcore.spoken spells out digits, clock times, arithmetic and symbols (shared with toolcore.wer, so a
transcript of the clip scores against the written request). This layer adds what only matters to a
voice: quotes go (a quoted message is said plainly), characters espeak-ng would read out ("*", "/",
"#", "_"...) go, and sentence punctuation (. , ? ! ' : ;) stays because it shapes prosody. Only the
text that gets synthesised changes; target calls keep their normalised values.
"""

from __future__ import annotations

import re
import unicodedata

from toolcore.spoken import spoken_form

__all__ = ["SPOKEN_KEEP", "SPOKEN_PUNCT_STRIP", "to_spoken"]

# punctuation kept: it shapes prosody and espeak-ng does not read it out
SPOKEN_KEEP = frozenset(".,?!';:-")
# characters spoken_form may leave that a voice would read out or stumble on; with any other symbol
# (not a letter, a combining mark, a space or SPOKEN_KEEP) they become a space
SPOKEN_PUNCT_STRIP = frozenset('"“”„«»‹›*/\\^_#|~`<>[]{}()=+@$%&€£¥°')

_QUOTE_APOSTROPHE = re.compile(r"(?<![^\W\d_])'|'(?![^\W\d_])(?<![sS]')")   # not inside a word, not "James'"
_DASH = re.compile(r"\s+-+\s+|\s+-+$|^-+\s+|--+")
_SPACES = re.compile(r"\s+")
_SPACE_BEFORE = re.compile(r"\s+([,.;:!?])")
_COMMAS = re.compile(r"([,;:])(?:\s*[,;:])+")
_DOTS = re.compile(r"(?<!\.)\.\.(?!\.)")
_LEAD = re.compile(r"^[\s,.;:!?'-]+")


def _keep(c: str) -> bool:
    return c.isspace() or c in SPOKEN_KEEP or (c.isalpha() or unicodedata.category(c).startswith("M"))


def to_spoken(text: str) -> str:
    """Spoken form of a written request, ready for TTS. Deterministic; never raises.

    "Set an alarm for 7:30 AM" -> "Set an alarm for seven thirty AM";
    'calc 12**2 and text "on my way" to Sam' -> "calc twelve squared and text on my way to Sam".
    """
    text = text if isinstance(text, str) else str(text)
    letters = [c for c in text if c.isalpha()]
    if len(letters) >= 6 and sum(c.isupper() for c in letters) >= 0.9 * len(letters):
        text = text.lower()      # shouted text: espeak-ng spells short capitalised words ("IT", "US") out
    s = spoken_form(text).replace("’", "'")
    s = "".join(c if _keep(c) and c not in SPOKEN_PUNCT_STRIP else " " for c in s)
    s = _QUOTE_APOSTROPHE.sub(" ", s)
    s = _DASH.sub(", ", s)
    s = _SPACE_BEFORE.sub(r"\1", _SPACES.sub(" ", s))
    s = _COMMAS.sub(r"\1", s)                        # "buddy,, plus" -> "buddy, plus"
    s = _DOTS.sub(".", s)                            # "P.M.." -> "PM."
    s = _SPACE_BEFORE.sub(r"\1", s)
    return _LEAD.sub("", s).strip()
