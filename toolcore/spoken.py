"""Written text as it is said: digits, clock times, arithmetic and symbols spelled out in words.

One vocabulary for every stage that turns text into speech or compares speech with text: data_gen
makes the text a TTS voice reads ("7:30 AM" -> "seven thirty AM", "sqrt(256) - 32" -> "the square root
of two hundred fifty six minus thirty two") and toolcore.wer normalises references and transcripts with
the same rules, so a transcript "7:30 a.m." and a reference "seven thirty AM" compare equal.

`spoken_form` only rewrites what has a written form (digits, symbols, a few abbreviations); every other
word and the sentence punctuation stay as they are. It is deterministic and never raises.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from num2words import num2words

__all__ = ["NUMBER_WORDS", "cardinal", "clock_words", "ordinal", "spoken_form", "year_words"]

ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen").split()
TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
# words that say a number: after them "am"/"pm" is the time of day and "min" means minutes
NUMBER_WORDS = frozenset(ONES + TENS + ["hundred", "thousand", "million", "oh", "o'clock", "half", "quarter"])
MAX_DIGITS = 15                  # longer digit runs (ids, phone numbers) are read digit by digit

# After a number: "5 mins" -> "five minutes" (singular after one)
UNITS = {
    "min": ("minute", "minutes"), "mins": ("minute", "minutes"), "hr": ("hour", "hours"),
    "hrs": ("hour", "hours"), "sec": ("second", "seconds"), "secs": ("second", "seconds"),
    "km": ("kilometer", "kilometers"), "kg": ("kilogram", "kilograms"), "lb": ("pound", "pounds"),
    "lbs": ("pound", "pounds"), "ft": ("foot", "feet"), "cm": ("centimeter", "centimeters"),
}
# Written shorthands people would not say letter by letter (whole words, any case)
ABBREVIATIONS = {"pls": "please", "plz": "please", "thx": "thanks", "thnx": "thanks", "thanx": "thanks",
                 "msg": "message", "txt": "text", "vs": "versus", "etc": "et cetera", "approx": "approximately"}
# "Dr. Dre", "St. Louis", "Sault Ste. Marie": a title word followed by a dot and a name
TITLES = {"dr": "doctor", "mr": "mister", "mrs": "missus", "ms": "miz", "st": "saint", "ste": "sainte"}
DOTTED = {"eg": "for example", "ie": "that is", "aka": "also known as"}
FUNCTIONS = {"sqrt": "the square root of", "abs": "the absolute value of", "log": "the log of",
             "ln": "the natural log of"}
CURRENCY = {"$": ("dollar", "dollars"), "£": ("pound", "pounds"), "€": ("euro", "euros"), "¥": ("yen", "yen")}
HALF_UNITS = {"hour", "hours", "minute", "minutes", "day", "days", "week", "weeks", "mile", "miles", "year", "years"}
# brackets and quotes a voice does not say: "(7) am" is still 7 am
_TRANSPARENT = frozenset('()[]{}"“”„«»‹›\'’`_|~*/^-') | {"**", "//"}
ARITH = {"+", "-", "−", "–", "*", "**", "×", "x", "X", "/", "//", "÷", "^", "=", "%"}

_PRE = (
    (re.compile(r"(?<=\d)\s*½"), " and a half"), (re.compile(r"½"), " a half "),
    (re.compile(r"(?<=\d)\s*¼"), " and a quarter"), (re.compile(r"¼"), " a quarter "),
    (re.compile(r"(?<=\d)\s*¾"), " and three quarters"), (re.compile(r"¾"), " three quarters "),
    (re.compile(r"²"), " squared "), (re.compile(r"³"), " cubed "), (re.compile(r"√"), " sqrt "),
)
_TOKEN = re.compile(r"""
    (?P<time>(?<![\d.:])\d{1,2}:\d{2}(?![\d:]))
  | (?P<mer>(?<![^\W\d_])(?<!\.)[AaPp]\.\ ?[Mm](?![^\W\d_])\.?)
  | (?P<acro>(?<![\w.])(?:[A-Za-z]\.){2,}(?![A-Za-z])|(?<![\w.])(?:[A-Za-z]\.)+[A-Za-z](?![\w.]))
  | (?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|\d+\.\d+|\d+|(?<!\w)\.\d+)
  | (?P<word>[^\W\d_]+(?:['’][^\W\d_]+)*)
  | (?P<space>\s+)
  | (?P<op>\*\*|//|[^\w\s]|_)
""", re.X)
_SPACES = re.compile(r"\s+")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?])")


def _clean(words: str) -> str:
    """num2words style -> plain words: no "and", hyphens or commas ("one hundred twenty five")."""
    words = words.replace("-", " ").replace(",", "")
    return _SPACES.sub(" ", re.sub(r"\band\b", " ", words)).strip()


def _digits(s: str) -> str:
    return " ".join(ONES[int(c)] for c in s)


def cardinal(n: int | str) -> str:
    """125 -> "one hundred twenty five"; digit runs longer than MAX_DIGITS are read digit by digit."""
    s = str(n)
    if len(s) > MAX_DIGITS:
        return _digits(s)
    return _clean(num2words(int(s)))


def ordinal(n: int) -> str:
    return _clean(num2words(n, to="ordinal")) if len(str(n)) <= MAX_DIGITS else _digits(str(n))


def year_words(n: int) -> str:
    """2018 -> "twenty eighteen", 1900 -> "nineteen hundred", 2005 -> "two thousand five"."""
    return _clean(num2words(n, to="year"))


def clock_words(h: int, m: int, *, meridiem: bool = False) -> str:
    """7:05 -> "seven oh five"; 8:00 -> "eight o'clock" ("eight" before AM/PM); 15:00 -> "fifteen hundred"."""
    if h > 24 or m > 59:
        return f"{cardinal(h)} {cardinal(m)}"
    if m == 0:
        if meridiem:
            return cardinal(h)
        return f"{cardinal(h)} o'clock" if 1 <= h <= 12 else f"{cardinal(h)} hundred"
    return f"{cardinal(h)} {'oh ' + ONES[m] if m < 10 else cardinal(m)}"


def _plural(words: str) -> str:
    """ "sixty" -> "sixties", "two thousand" -> "two thousands" (decades: "60s", "1990s")."""
    head, _, last = words.rpartition(" ")
    last = last[:-1] + "ies" if last.endswith("y") else last + ("es" if last.endswith(("x", "s")) else "s")
    return f"{head} {last}".strip()


@dataclass
class _Tok:
    kind: str
    text: str


class _Speaker:
    """Renders one text token by token; each rule looks at its neighbours (previous/next non-space)."""

    def __init__(self, text: str, meridiem: tuple[str, str]):
        self.toks = [_Tok(m.lastgroup or "op", m.group()) for m in _TOKEN.finditer(text)]
        self.am, self.pm = meridiem
        self.skip: set[int] = set()

    # -- neighbourhood -------------------------------------------------------------------------
    def _skip(self, j: int, transparent: bool) -> bool:
        t = self.toks[j]
        return t.kind == "space" or (transparent and t.kind == "op" and t.text in _TRANSPARENT)

    def prev(self, i: int, transparent: bool = False) -> int | None:
        """Index of the previous token that is not a space (nor a bracket or quote if `transparent`)."""
        j = i - 1
        while j >= 0 and self._skip(j, transparent):
            j -= 1
        return j if j >= 0 else None

    def next(self, i: int, transparent: bool = False) -> int | None:
        j = i + 1
        while j < len(self.toks) and self._skip(j, transparent):
            j += 1
        return j if j < len(self.toks) else None

    def tok(self, j: int | None) -> _Tok:
        return self.toks[j] if j is not None and 0 <= j < len(self.toks) else _Tok("end", "")

    def adjacent(self, i: int, j: int | None) -> bool:
        return j is not None and abs(i - j) == 1

    def is_number_word(self, j: int | None) -> bool:
        t = self.tok(j)
        return t.kind in ("num", "time") or (t.kind == "word" and t.text.lower() in NUMBER_WORDS)

    def is_meridiem(self, j: int | None) -> bool:
        t = self.tok(j)
        if not (t.kind == "mer" or (t.kind == "word" and t.text.lower() in ("am", "pm"))):
            return False
        p = self.prev(j, True)
        # "$5 pm" is money, not a time
        return self.is_number_word(p) and not (self.tok(p).kind == "num" and self.tok(self.prev(p)).text in CURRENCY)

    def ends_operand(self, j: int | None) -> bool:
        t = self.tok(j)
        return t.kind == "num" or (t.kind == "op" and t.text in (")", "]")) or (
            t.kind == "word" and t.text.lower() in ("squared", "cubed"))

    def starts_operand(self, j: int | None) -> bool:
        t = self.tok(j)
        if t.kind == "num" or (t.kind == "op" and t.text in ("(", "[")):
            return True
        if t.kind == "word" and t.text.lower() in FUNCTIONS:
            return True
        # a unary minus: "7 - -3"
        return t.kind == "op" and t.text in ("-", "−") and self.tok(j + 1).kind == "num"

    def math_next_to(self, i: int) -> bool:
        return any(self.tok(j).kind == "op" and self.tok(j).text in ARITH for j in (self.prev(i), self.next(i)))

    # -- rendering -----------------------------------------------------------------------------
    def render(self) -> str:
        out: list[str] = []
        for i, t in enumerate(self.toks):
            if i in self.skip:
                continue
            if t.kind == "space":
                out.append(" ")
                continue
            said = getattr(self, "say_" + t.kind)(i, t.text)
            # words made from digits or symbols stand apart from their neighbours ("deadmau5" -> "deadmau five")
            out.append(f" {said} " if isinstance(said, _Said) else said)
        text = _SPACES.sub(" ", "".join(out))
        return _SPACE_BEFORE_PUNCT.sub(r"\1", text).strip()

    def say_word(self, i: int, w: str) -> str:
        low = w.lower()
        p, n = self.prev(i), self.next(i)
        if self.is_meridiem(i):
            return _Said(self.am if low == "am" else self.pm)
        if low in ("x",) and self.ends_operand(p) and self.starts_operand(n):
            return _Said("times")
        if low in UNITS and self.is_number_word(self.prev(i, True)):
            one = self.tok(self.prev(i, True)).text.lower() in ("1", "one")
            return _Said(UNITS[low][0 if one else 1])
        if low in FUNCTIONS and (self.tok(n).text == "(" or self.tok(n).kind == "num"):
            return _Said(FUNCTIONS[low])
        if low in ABBREVIATIONS:
            return _Said(ABBREVIATIONS[low])
        if self.tok(p).kind == "num" and self.adjacent(i, p):
            return _Said(w.upper() if len(w) == 1 else w)     # "5k", "22er": the letters, apart from the number
        if self.tok(n).kind == "num" and self.adjacent(i, n):
            return _Said(w.upper() if len(w) == 1 else w)     # "UB40", "u2", "deadmau5"
        if w == "u" and self.tok(i - 1).text not in (".", "'", "-") and self.tok(i + 1).text not in (".", "'", "-"):
            return _Said("you")
        if low in TITLES and self.tok(i + 1).text == "." and self.tok(i + 2).kind == "space" \
                and self.tok(i + 3).kind == "word" and (self.tok(i + 3).text[:1].isupper() or w.islower()):
            self.skip.add(i + 1)
            said = TITLES[low]
            return said.capitalize() if w[:1].isupper() else said
        return w

    def say_time(self, i: int, s: str) -> str:
        h, m = (int(x) for x in s.split(":"))
        # "7:30 pm" -> "seven thirty PM", "12:00 noon" -> "twelve noon", "12:00" -> "twelve o'clock"
        n = self.next(i, True)
        said_with = self.is_meridiem(n) or self.tok(n).text.lower() in ("noon", "midnight")
        return _Said(clock_words(h, m, meridiem=said_with))

    def say_mer(self, i: int, s: str) -> str:
        if not self.is_meridiem(i):
            return s     # "in the a.m.": no time to attach it to; said as written
        said = self.am if s[0] in "Aa" else self.pm
        n = self.tok(self.next(i))
        # "at 6 a.m. Then ..." / "... 6:54 p.m." : the dot also ended the sentence
        if s.endswith(".") and (n.kind == "end" or (n.kind == "word" and n.text[:1].isupper())):
            return _Said(said) + "."
        return _Said(said)

    def say_acro(self, i: int, s: str) -> str:
        key = s.replace(".", "").lower()
        return _Said(DOTTED[key]) if key in DOTTED else s

    def say_num(self, i: int, s: str) -> str:
        p, n = self.prev(i), self.next(i)
        ptok, ntok = self.tok(p), self.tok(n)
        unit = ""
        if ptok.kind == "op" and ptok.text in CURRENCY:
            one = s.lstrip("0") == "1"
            unit = CURRENCY[ptok.text][0 if one else 1]
        s = s.replace(",", "")
        if "." in s:
            whole, frac = s.split(".", 1)
            if self.is_meridiem(self.next(i, True)) and len(frac) == 2 and whole and int(whole) <= 12 \
                    and int(frac) < 60:
                return _Said(clock_words(int(whole), int(frac), meridiem=True))       # "7.30am"
            if unit and len(frac) == 2 and whole:                                      # "$5.50"
                return _Said(f"{cardinal(whole)} {unit} {cardinal(frac)}".strip())
            if frac == "5" and whole and ntok.kind == "word" and ntok.text.lower() in HALF_UNITS:
                return _Said(f"{cardinal(whole)} and a half")                          # "1.5 hours"
            words = (cardinal(whole) + " " if whole else "") + "point " + _digits(frac)
            return _Said(f"{words} {unit}".strip())
        if len(s) > 1 and s.startswith("0"):
            return _Said(f"{_digits(s)} {unit}".strip())
        value = int(s)
        adj = self.tok(i + 1)
        # "1st", "22nd"; "60s", "1990s", "'90s"
        if adj.kind == "word" and adj.text.lower() in ("st", "nd", "rd", "th") and len(s) <= MAX_DIGITS:
            self.skip.add(i + 1)
            return _Said(ordinal(value))
        plural = adj.kind == "word" and adj.text in ("s", "S") and value % 10 == 0
        if plural:
            self.skip.add(i + 1)
        if len(s) == 4 and 1100 <= value <= 2099 and not unit and not self.math_next_to(i):
            words = year_words(value)
        else:
            words = cardinal(s)
        if plural:
            words = _plural(words)
        return _Said(f"{words} {unit}".strip())

    def say_op(self, i: int, c: str) -> str:
        p, n = self.prev(i), self.next(i)
        between = self.ends_operand(p) and self.starts_operand(n)
        if c in ("**", "^"):
            if between and self.tok(n).kind == "num" and self.tok(n).text in ("2", "3"):
                self.skip.add(n)
                return _Said("squared" if self.tok(n).text == "2" else "cubed")
            return _Said("to the power of") if between else ""
        if c in ("*", "×", "·"):
            return _Said("times") if between else ""
        if c in ("/", "÷", "⁄", "//"):
            if between:
                return _Said("divided by")
            return " " if c != "÷" else ""
        if c == "+":
            return _Said("plus")
        if c in ("-", "−", "–"):
            spaced_words = (not self.adjacent(i, p) and not self.adjacent(i, n)
                            and self.is_number_word(p) and self.is_number_word(n))
            if between or spaced_words:
                return _Said("minus")
            unary = self.tok(n).kind == "num" and self.adjacent(i, n) and not (
                self.adjacent(i, p) and self.tok(p).kind in ("word", "num", "acro"))
            if unary:
                return _Said("minus")
            if self.tok(p).kind in ("num", "time") or self.tok(n).kind in ("num", "time"):
                return " "       # "5-minute", "blink-182"
            if not self.adjacent(i, p) and not self.adjacent(i, n):
                return ","       # "song - artist": a pause
            return c if c != "−" else "-"
        if c == "—":
            return ","
        if c == "=":
            return _Said("equals")
        if c == "%":
            if self.ends_operand(p) and self.starts_operand(n):
                return _Said("modulo")
            return _Said("percent")
        if c == "&":
            return _Said("and")
        if c == "@":
            return _Said("at")
        if c == "#":
            if self.tok(n).kind == "num" and self.adjacent(i, n):
                return _Said("number")
            if self.tok(p).kind == "word" and self.adjacent(i, p) and len(self.tok(p).text) == 1:
                return _Said("sharp")                                    # "C#"
            return _Said("hashtag") if self.tok(n).kind == "word" and self.adjacent(i, n) else ""
        if c in ("<", ">") and between:
            return _Said("less than" if c == "<" else "greater than")
        if c == "~" and self.tok(n).kind == "num":
            return _Said("about")
        if c == "°":
            return _Said("degrees")
        if c in CURRENCY:
            return "" if self.tok(n).kind == "num" else _Said(CURRENCY[c][1])
        if c == "!" and self.tok(i - 1).text in ("p", "P") and self.tok(i + 1).text.lower() == "nk":
            return "i"                                                   # "p!nk"
        if c in ("'", "’") and self.tok(i + 1).kind == "num" and self.tok(i - 1).kind != "word":
            return ""                                                    # "Summer of '69"
        if c == ":" and self.ends_operand(p) and self.starts_operand(n):
            return " "
        if c in "()[]{}":
            return " "
        if c in "_|\\`~^<>":
            return " "
        return c


class _Said(str):
    """Words produced from digits or symbols (padded with spaces when rendered)."""

    def __add__(self, other: str) -> "_Said":
        return _Said(str(self) + other)


def spoken_form(text: str, *, meridiem: tuple[str, str] = ("AM", "PM")) -> str:
    """The words a person says for `text`: numbers, times, arithmetic and symbols spelled out.

    `meridiem` is how "am"/"pm" are written: ("AM", "PM") reads well in TTS (espeak says "a m" as
    "uh em"); toolcore.wer uses ("am", "pm"). Other words and sentence punctuation are kept.
    """
    if not isinstance(text, str):
        text = str(text)
    for pattern, repl in _PRE:
        text = pattern.sub(repl, text)
    text = unicodedata.normalize("NFKC", text)
    try:
        return _Speaker(text, meridiem).render()
    except Exception:            # never raise on odd text: fall back to a plain digit-by-digit reading
        return _SPACES.sub(" ", re.sub(r"\d", lambda m: f" {ONES[int(m.group())]} " if m.group().isascii()
                                       else f" {ONES[unicodedata.digit(m.group(), 0)]} ", text)).strip()
