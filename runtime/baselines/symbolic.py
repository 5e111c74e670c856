"""Symbolic pre-parser: a model-free, rule-based baseline that turns an utterance into tool calls.

It knows a fixed set of everyday tools by name (weather, alarms, timers, messages, reminders,
contacts, music, camera panning, time, arithmetic, web search) and emits calls only for the tools
that are offered. Any other offered tool has no rules, so it is never called.

Pipeline (each step is a small function below):

1. normalise - tidy quotes and whitespace. Every piece of text is kept in three aligned forms:
   the original (for the casing of extracted values), a lowercase copy of the same length (for
   matching), and a copy with spelled-out numbers turned into digits plus an index map back to
   the original ("set an alarm for seven thirty" -> "... for 7 30").
2. segment - split into intents on "and", "then", "also", commas, semicolons and sentence ends.
   A fragment with no trigger of its own ("roll" in "play rock and roll", "dad at 5" in "remind
   me to call mom and dad at 5") is glued back to the previous intent, so values keep their "and".
3. classify - keyword triggers per tool, in two tiers: specific phrases ("alarm", "remind me",
   "weather") beat generic verbs ("start", "look up", "find"). Within a tier the earliest trigger
   wins, because the main verb usually comes first ("remind me to check the weather" is a reminder).
4. extract - regex slot filling per tool; "him/her/them" resolve to the last person named.
5. fit - keep only offered tools and the arguments they declare, cast to the schema's types.

Never uses eval/exec: arithmetic is translated to an expression string, not computed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolcore.schema import Tool, ToolCall

# ================================================================================================
# Numbers written as words
# ================================================================================================

_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine".split())}
_TEENS = {w: i + 10 for i, w in enumerate(
    "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: (i + 2) * 10 for i, w in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split())}
_SCALES = {"thousand": 1000, "million": 1_000_000}
_NUMBER_WORDS = set(_UNITS) | set(_TEENS) | set(_TENS) | {"hundred"} | set(_SCALES)


class _NumberReader:
    """Reads number words one at a time and refuses a word that cannot continue the number.

    "twenty five", "one hundred and five" and "a thousand" become one number each, but a unit
    is never followed by a tens word, so "seven thirty" stays two numbers (7, 30): exactly what
    spoken clock times need.
    """

    def __init__(self) -> None:
        self.total = 0      # completed thousands/millions
        self.current = 0    # the part below the last scale word
        self.last: str | None = None

    @property
    def value(self) -> int:
        return self.total + self.current

    def accept(self, word: str, next_word: str | None) -> bool:
        last = self.last
        if word == "zero":
            ok, kind, add = last is None, "zero", 0
        elif word in _UNITS:
            ok, kind, add = last in (None, "tens", "hundred", "scale", "and"), "unit", _UNITS[word]
        elif word in _TEENS:
            ok, kind, add = last in (None, "hundred", "scale", "and"), "teen", _TEENS[word]
        elif word in _TENS:
            ok, kind, add = last in (None, "hundred", "scale", "and"), "tens", _TENS[word]
        elif word == "hundred":
            if last in ("unit", "teen", "a") and self.current < 100:
                self.current *= 100
                self.last = "hundred"
                return True
            return False
        elif word in _SCALES:
            if last in ("unit", "teen", "tens", "hundred", "a"):
                self.total += self.current * _SCALES[word]
                self.current = 0
                self.last = "scale"
                return True
            return False
        elif word == "and":  # only inside "one hundred and five", never "five and six"
            ok = last in ("hundred", "scale") and next_word in (set(_UNITS) | set(_TEENS) | set(_TENS))
            if ok:
                self.last = "and"
            return ok
        elif word in ("a", "an"):  # "a hundred", "a thousand"
            ok = last is None and next_word in ("hundred", "thousand", "million")
            if ok:
                self.current, self.last = 1, "a"
            return ok
        else:
            return False
        if ok:
            self.current += add
            self.last = kind
        return ok


_WORD_RE = re.compile(r"[a-z]+")


def _number_runs(low: str) -> list[tuple[int, int, int]]:
    """Spans of spelled-out numbers in lowercase text, as (start, end, value)."""
    words = [(m.start(), m.end(), m.group()) for m in _WORD_RE.finditer(low)]
    runs: list[tuple[int, int, int]] = []
    i = 0
    while i < len(words):
        reader, j = _NumberReader(), i
        while j < len(words):
            # words of one number are separated by a single space or a hyphen ("forty-five")
            if j > i and low[words[j - 1][1]:words[j][0]] not in (" ", "-"):
                break
            nxt = words[j + 1][2] if j + 1 < len(words) else None
            if not reader.accept(words[j][2], nxt):
                break
            j += 1
        if j > i:
            runs.append((words[i][0], words[j - 1][1], reader.value))
            i = j
        else:
            i += 1
    return runs


def words_to_number(text: str) -> int | None:
    """The integer a string spells out ("twenty-five", "one hundred and five", "12"), else None."""
    low = text.strip().lower()
    if re.fullmatch(r"[+-]?\d+", low):
        return int(low)
    runs = _number_runs(low)
    if len(runs) == 1 and runs[0][0] == 0 and runs[0][1] == len(low):
        return runs[0][2]
    return None


def digitize(text: str) -> str:
    """Lowercase text with spelled-out numbers as digits: "Seven thirty" -> "7 30"."""
    return _Text(text).num


# ================================================================================================
# Aligned text
# ================================================================================================

_CHAR_FIX = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"',
                           "\u00a0": " ", "\u2013": "-", "\u2014": "-"})


def _normalise(text: str) -> str:
    """Straight quotes and single spaces; the casing stays."""
    return re.sub(r"\s+", " ", text.translate(_CHAR_FIX)).strip()


def _lower_aligned(raw: str) -> str:
    # str.lower() can change the length of a few characters ("İ"); keep those as they are so
    # every index into the lowercase copy is also an index into the original.
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in raw)


@dataclass
class _Text:
    """One piece of the utterance in three aligned forms.

    raw: original casing. low: lowercase, same length as raw. num: low with spelled-out
    numbers replaced by digits; starts/ends map each num index to the raw span it came from.
    """

    raw: str
    low: str = ""
    num: str = ""
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.low = _lower_aligned(self.raw)
        parts, starts, ends, pos = [], [], [], 0
        for s, e, value in _number_runs(self.low):
            parts.append(self.low[pos:s])
            starts += range(pos, s)
            ends += range(pos + 1, s + 1)
            digits = str(value)
            parts.append(digits)
            starts += [s] * len(digits)
            ends += [e] * len(digits)
            pos = e
        parts.append(self.low[pos:])
        starts += range(pos, len(self.low))
        ends += range(pos + 1, len(self.low) + 1)
        self.num, self.starts, self.ends = "".join(parts), starts, ends

    def raw_index(self, i: int) -> int:
        """The raw index where num index i begins (len(raw) at the end)."""
        return self.starts[i] if i < len(self.starts) else len(self.raw)

    def raw_of(self, s: int, e: int) -> str:
        """The original text behind num[s:e]."""
        return self.raw[self.starts[s]:self.ends[e - 1]] if s < e else ""


# ================================================================================================
# Clock times and durations (shared with repair.py)
# ================================================================================================


@dataclass(frozen=True)
class Clock:
    """A clock time found in text: its span in the digitised text and the 24-hour reading."""

    start: int
    end: int
    hour: int
    minute: int
    explicit: bool  # AM/PM, or a word that implies it ("in the evening", "noon"), was stated


_CLOCK_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("named", re.compile(r"\b(?P<named>noon|midday|midnight)\b")),
    ("relative", re.compile(
        r"\b(?P<rel>half|quarter|\d{1,2})(?:\s+minutes?)?\s+(?P<dir>past|after|to|till|til|before|of)"
        r"\s+(?P<base>\d{1,2}|noon|midnight)\b")),
    ("colon", re.compile(r"(?<![\d.:])(?P<h>\d{1,2})\s?(?P<sep>[:.])\s?(?P<m>\d{2})(?![\d:])")),
    ("spoken", re.compile(r"(?<![\d.:])(?P<h>\d{1,2})\s+(?:(?:oh|o)\s+(?P<m1>\d)|(?P<m2>[0-5]\d))\b(?![.:]\d)")),
    ("hour", re.compile(r"(?<![\d.:,$])(?P<h>\d{1,2})(?P<oclock>\s*o'?\s?clock)?(?![\d]|[.:,]\d)")),
]
_PERIOD_RE = re.compile(
    r"\s*(?:(?P<am>a\.?\s?m\b\.?|(?:in\s+the|this|tomorrow)\s+morning)"
    r"|(?P<pm>p\.?\s?m\b\.?|(?:in\s+the|this|tomorrow)\s+(?:afternoon|evening)|tonight|tomorrow\s+night)"
    r"|(?P<night>at\s+night|in\s+the\s+night))")
# A period named earlier in the intent: "tomorrow morning at 7", "tonight at 9".
_PERIOD_BEFORE_PM = re.compile(r"\b(?:tonight|evening|afternoon|night)\b")
_PERIOD_BEFORE_AM = re.compile(r"\bmorning\b")
_TIME_PREP = re.compile(r"(?:\b(?:at|for|to|by|around|about|until|till|from|before|after|alarm)|@)\s*$"
                        # the next item of a list of times: "at 6, 6:30 and 7"
                        r"|(?:\d|noon|midnight|\bm\.?)\s*(?:,|\band|\bor|&)\s*(?:\band\s+)?$")
_NOT_A_TIME_UNIT = {
    "minute", "minutes", "min", "mins", "hour", "hours", "hr", "hrs", "second", "seconds", "sec",
    "secs", "day", "days", "week", "weeks", "month", "months", "year", "years", "degree", "degrees",
    "percent", "people", "times", "x", "dollars", "dollar", "bucks", "euros", "pills", "items",
    "results", "links", "miles", "km", "kilometers", "pounds", "kg", "more", "of", "plus", "minus",
}


def _to_24h(hour: int, period: str | None) -> int:
    if period == "am":
        return 0 if hour == 12 else hour
    if period == "pm":
        return hour + 12 if hour < 12 else hour
    if period == "night":  # "9 at night" -> 21, "12 at night" -> 0, "2 at night" -> 2
        return 0 if hour == 12 else hour + 12 if 6 <= hour < 12 else hour
    return hour


def _read_clock(kind: str, m: re.Match[str], s: str) -> Clock | None:
    """Turn one pattern match into a Clock, or None if the context says it is not a time."""
    before = s[:m.start()]
    if kind == "named":
        hour = 0 if m.group("named") == "midnight" else 12
        return Clock(m.start(), m.end(), hour, 0, True)
    if kind == "relative":
        if re.search(r"\bfrom\s*$", before):  # "from 5 to 7" is a range
            return None
        rel = m.group("rel")
        mins = 30 if rel == "half" else 15 if rel == "quarter" else int(rel)
        base = m.group("base")
        bh = 12 if base == "noon" else 0 if base == "midnight" else int(base)
        if mins >= 60 or bh > 23:
            return None
        if m.group("dir") in ("past", "after"):
            hour, minute = bh, mins
        else:  # "quarter to eight" -> 7:45; "ten to one" -> 12:50
            hour, minute = bh - 1, 60 - mins
            hour = 23 if hour < 0 else 12 if hour == 0 and base != "midnight" else hour
    else:
        hour = int(m.group("h"))
        if kind == "colon":
            minute = int(m.group("m"))
        elif kind == "spoken":
            minute = int(m.group("m1") or m.group("m2"))
        else:
            minute = 0
    if hour > 23 or minute > 59:
        return None
    end, period = m.end(), None
    pm = _PERIOD_RE.match(s, end)
    if pm and hour <= 12:
        period = "am" if pm.group("am") else "pm" if pm.group("pm") else "night"
        end = pm.end()
    # A bare number is a time only where the words around it say so.
    has_prep = bool(_TIME_PREP.search(before))
    if kind == "hour":
        if not period and re.match(r"[a-z]", s[m.end():m.end() + 1]):
            return None  # "5th", "3d"
        after = re.match(r"\s*-?\s*([a-z%]+)", s[m.end():])
        if after and after.group(1) in _NOT_A_TIME_UNIT | {"%"}:
            return None
        if not (m.group("oclock") or period or has_prep):
            return None
    if kind == "spoken" and not (period or has_prep):
        return None
    if kind == "colon" and m.group("sep") == "." and not (period or has_prep):
        return None  # "3.50" is more likely money than a time
    if period is None and hour <= 12:
        clause = re.split(r"[,;.!?]", before)[-1]
        if _PERIOD_BEFORE_PM.search(clause):
            period = "night" if "night" in clause and "tonight" not in clause else "pm"
        elif _PERIOD_BEFORE_AM.search(clause):
            period = "am"
    return Clock(m.start(), end, _to_24h(hour, period), minute, period is not None)


def find_clocks(num: str) -> list[Clock]:
    """Every clock time in digitised lowercase text, in order ("7:30 a.m.", "half past six", "noon")."""
    taken: list[tuple[int, int]] = []
    found: list[Clock] = []
    for kind, rx in _CLOCK_PATTERNS:  # earlier kinds win overlaps ("7:30" is not the hour "7")
        for m in rx.finditer(num):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            clock = _read_clock(kind, m, num)
            if clock:
                taken.append((clock.start, clock.end))
                found.append(clock)
    return sorted(found, key=lambda c: c.start)


def format_clock_12h(hour: int, minute: int, explicit: bool = True) -> str:
    """ "H:MM AM/PM". Without a stated period, 1-6 o'clock reads as afternoon (people rarely
    mean 3 AM), 7-11 as morning."""
    if not explicit and 1 <= hour <= 6:
        hour += 12
    suffix = "AM" if hour < 12 else "PM"
    return f"{hour % 12 or 12}:{minute:02d} {suffix}"


_DURATION_PARTS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], float]]] = [
    (re.compile(r"\b(?P<n>\d+)\s+and\s+a\s+half\s+hours?\b"), lambda m: int(m["n"]) * 60 + 30),
    (re.compile(r"\b(?:an?|1)\s+hour\s+and\s+a\s+half\b"), lambda m: 90),
    (re.compile(r"\b(?:half\s+an?\s+hour|a\s+half[\s-]hour|half[\s-]hour)\b"), lambda m: 30),
    (re.compile(r"\b(?:a\s+)?quarter\s+(?:of\s+an\s+)?hour\b"), lambda m: 15),
    (re.compile(r"\b(?P<n>\d+(?:\.\d+)?)\s*-?\s*(?:hours?|hrs?|h)\b"), lambda m: float(m["n"]) * 60),
    (re.compile(r"\b(?:an|a)\s+hour\b"), lambda m: 60),
    (re.compile(r"\b(?P<n>\d+)\s+and\s+a\s+half\s+minutes?\b"), lambda m: int(m["n"]) + 0.5),
    (re.compile(r"\b(?P<n>\d+(?:\.\d+)?)\s*-?\s*(?:minutes?|mins?|m)\b"), lambda m: float(m["n"])),
    (re.compile(r"\ba\s+minute\b"), lambda m: 1),
    (re.compile(r"\ba\s+couple(?:\s+of)?\s+minutes\b"), lambda m: 2),
    (re.compile(r"\b(?P<n>\d+)\s*-?\s*(?:seconds?|secs?|s)\b"), lambda m: int(m["n"]) / 60),
]


def parse_duration_minutes(num: str) -> int | None:
    """Total minutes in digitised text: "1 hour and 30 minutes" -> 90, "half an hour" -> 30."""
    taken: list[tuple[int, int]] = []
    total, found = 0.0, False
    for rx, value in _DURATION_PARTS:  # longer phrases first, so "an hour and a half" is one part
        for m in rx.finditer(num):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            taken.append(m.span())
            total += value(m)
            found = True
    if not found or total <= 0:
        return None
    return max(1, round(total))


# ================================================================================================
# Segmentation
# ================================================================================================

_SPLIT_RE = re.compile(
    r"\s*[,;]\s*(?:(?:and|but)\s+)?(?:(?:then|also)\s*,?\s+)?"
    r"|(?<=[.!?])\s+(?:(?:and|but)\s+)?(?:(?:then|also)\s*,?\s+)?"
    r"|\s+(?:and\s+)?(?:then|also|after\s+that|afterwards)\s*,?\s+"
    r"|\s+(?:and|&)\s+")
# "add 5 and 7", "between 3 and 4": an "and" between two numbers joins operands, not intents
_NUMBER_ALT = "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True))
_NUM_END = re.compile(rf"(?:\d|\b(?:{_NUMBER_ALT}))$")
_NUM_START = re.compile(rf"(?:\d|(?:{_NUMBER_ALT})\b)")
# "Dr. Smith", "St. Louis", "7 a.m. then": a dot after these is not a sentence end
_ABBREV_BEFORE = re.compile(r"\b(?:dr|mr|mrs|ms|st|jr|sr|prof|mt|ft|vs|etc|[a-z])\.$")
_QUOTE_RE = re.compile(r"\"[^\"]*\"|(?:(?<=\s)|^)'.+?'(?=[\s.,!?;:]|$)")


def _quote_spans(raw: str) -> list[tuple[int, int]]:
    return [m.span() for m in _QUOTE_RE.finditer(raw)]


_FREE_TEXT_TOOLS = {"send_message", "create_reminder"}
_OTHER_COMMAND = re.compile(
    r"(?:please\s+|can\s+you\s+|could\s+you\s+)?(?:set|turn|open|close|call|book|order|stop|pause|resume|lock"
    r"|unlock|navigate|schedule|increase|decrease|raise|lower|dim|mute|unmute|adjust|change|switch|cancel"
    r"|delete|add|buy|email|read|make|create|translate|check)\b")


def _segments(raw: str) -> list[_Text]:
    """Intents in order. Fragments without a trigger join their neighbour (see module doc)."""
    low = _lower_aligned(raw)
    quotes = _quote_spans(raw)
    cuts = [m.span() for m in _SPLIT_RE.finditer(low)
            if m.end() > m.start() and not any(s < m.start() < e for s, e in quotes)
            and not _ABBREV_BEFORE.search(low, 0, m.start())
            and not (_NUM_END.search(low, 0, m.start()) and _NUM_START.match(low, m.end()))]
    pieces, pos = [], 0
    for s, e in cuts:
        if s > pos:
            pieces.append((pos, s))
        pos = max(pos, e)
    if pos < len(raw):
        pieces.append((pos, len(raw)))

    merged: list[list[Any]] = []  # [start, end, tool or None]
    lead: int | None = None  # start of trigger-less text before the first intent
    for s, e in pieces:
        tool = _classify(_Text(raw[s:e]))
        if tool is not None:
            merged.append([lead if lead is not None else s, e, tool])
            lead = None
        elif merged and _OTHER_COMMAND.match(low, s) and merged[-1][2] not in _FREE_TEXT_TOOLS:
            # "play some jazz and set the volume to 5": a request we have no rule for ends the
            # previous intent instead of leaking into its value. Messages and reminders keep it
            # ("remind me to pick up the kids and buy milk"): their values are free text.
            merged.append([s, e, None])
        elif merged:
            merged[-1][1] = e
        elif lead is None:
            lead = s
    return [_Text(raw[s:e]) for s, e, _ in merged]


# ================================================================================================
# Classification
# ================================================================================================

_NAME_WORD = r"[^\W\d_][\w'\-]*"
_ROLE_WORDS = {
    "mom", "mum", "mother", "mommy", "mama", "dad", "father", "daddy", "papa", "wife", "husband",
    "boss", "sister", "brother", "sis", "bro", "grandma", "grandpa", "grandmother", "grandfather",
    "nana", "son", "daughter", "aunt", "uncle", "cousin", "friend", "partner", "boyfriend",
    "girlfriend", "team", "manager", "roommate", "neighbor", "neighbour", "doctor", "dentist",
    "teacher", "coach", "landlord", "colleague", "coworker", "babysitter", "family", "parents",
}
_PRONOUNS = {"him", "her", "them"}


def _looks_like_person(raw_after: str) -> bool:
    """True when text starts with a name: a capitalised word, or my/a role word ("my mom")."""
    m = re.match(rf"\s*(?:my\s+|our\s+)?({_NAME_WORD})", raw_after)
    if not m:
        return False
    word = m.group(1)
    rest = raw_after[m.end():]
    if len(re.findall(_NAME_WORD, rest)) > 3 and not re.match(r"\s*(?:'s|in\b|from\b|on\b)", rest):
        return False  # a long phrase is a topic, not a name
    return word[0].isupper() or word.lower().rstrip("'s") in _ROLE_WORDS


@dataclass(frozen=True)
class _Trigger:
    tool: str
    tier: int  # 1: specific phrase, 2: generic verb
    pattern: re.Pattern[str]
    check: Callable[[_Text, re.Match[str]], bool] | None = None


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _calc_after(t: _Text, m: re.Match[str]) -> bool:
    return _expression(t.num[m.end():]) is not None


def _bare_calc(t: _Text, m: re.Match[str]) -> bool:
    expr = _expression(t.num)
    return expr is not None and bool(re.search(r"\s[-+*/]\s|\*\*|sqrt|/ 100", expr))


def _person_after(t: _Text, m: re.Match[str]) -> bool:
    return _looks_like_person(t.raw[t.raw_index(m.end()):])


def _topic_after(t: _Text, m: re.Match[str]) -> bool:
    rest = t.raw[t.raw_index(m.end()):].strip()
    return bool(rest) and not _looks_like_person(rest)


_PAN_GAP = r"(?:\s+(?!(?:and|then|also|left|right)\b)[\w°]+){0,5}?"
_PAN_VERBS = r"\b(?:look|pan|turn|rotate|swing|move|point|face|swivel|spin|glance|camera)\b"
_PAN_TAIL = r"\s+(?:to\s+(?:the|your)\s+|towards?\s+(?:the\s+)?)?"

_TRIGGERS: list[_Trigger] = [
    _Trigger("create_reminder", 1, _rx(
        r"\bremind(?:ing)?\s+(?:me|us)\b|\breminders?\b|\bdon'?t\s+let\s+me\s+forget\b|\bdon'?t\s+forget\b"
        r"|\bmake\s+sure\s+i\s+remember\b")),
    _Trigger("set_alarm", 1, _rx(
        r"\balarms?\b|\bwake\s+(?:me|us)\b|\b(?:need|want|have|got)\s+to\s+(?:wake|get)\s+up\b"
        r"|\bget\s+me\s+up\b|\bwake[\s-]?up\s+call\b")),
    _Trigger("set_timer", 1, _rx(r"\btimers?\b|\bcount\s?down\b")),
    _Trigger("get_time", 1, _rx(
        r"\bwhat\s+time\s+is\s+it\b|\bwhat\s+time\s+it\s+is\b|\bwhat(?:'s|\s+is)?\s+the\s+(?:current\s+)?time\b"
        r"|\btell\s+me\s+the\s+time\b|\bwhat\s+hour\s+is\s+it\b|\bcurrent\s+time\b|\btime\s+is\s+it\b"
        r"|\b(?:got|check|know)\s+the\s+time\b|^\s*(?:the\s+)?(?:current\s+)?time\s*(?:please|now)?\s*[?.!]*$")),
    _Trigger("send_message", 1, _rx(
        r"\b(?:send|shoot|drop|write)\s+(?:\S+\s+){0,3}?(?:text|message|msg|note|sms|dm|line)\b"
        r"|\b(?:text|message|msg|sms|dm|ping)\s+(?!me\b|us\b)(?=\S)"
        r"|\btell\s+(?!(?:me|us|you|it|a|an|if|whether|what|how|when|where|who|why|which|jokes?|stor(?:y|ies))\b)(?=\S)"
        r"|\blet\s+(?!me\b|us\b)\S+(?:\s+\S+)?\s+know\b")),
    _Trigger("web_search", 1, _rx(
        r"\b(?:do|run|perform)?\s*(?:a\s+)?(?:web|google|internet|online)\s+search\b"
        r"|\bsearch\s+(?:the\s+)?(?:web|internet|net|online|google)\b"
        r"|\b(?:search|look\s+up|find)\b[^,;]*?\b(?:online|on\s+the\s+(?:web|internet)|on\s+google)\b"
        r"|\bgoogle\b|\bbrowse\s+(?:the\s+web\s+)?for\b")),
    _Trigger("search_contacts", 1, _rx(
        r"\b(?:contacts?|contact\s+list|address\s+book|phone\s?book)\b"
        r"|'s\s+(?:phone\s+number|number|email|cell|contact)\b"
        r"|\b(?:phone\s+number|number|email(?:\s+address)?|contact\s+(?:info|details))\s+for\b"
        r"|\b(?:phone\s+number|email\s+address|contact\s+(?:info|details))\s+of\b")),
    _Trigger("calculate", 1, _rx(
        r"\b(?:calculate|compute|evaluate|solve|work\s+out|figure\s+out|what(?:'s|\s+is|\s+are)|whats"
        r"|how\s+much\s+is|how\s+much\s+are)\b"), _calc_after),
    _Trigger("calculate", 1, _rx(r"\b(?:square\s+root|sqrt|add|subtract|multiply|divide)\b"
                                 r"|\b(?:sum|product|difference|quotient)\s+(?:of|between)\b"), _bare_calc),
    _Trigger("get_weather", 1, _rx(
        r"\b(?:weather|forecasts?|temperature|temp|humidity|humid)\b|\bhow\s+(?:hot|cold|warm|chilly)\b"
        r"|\b(?:is|will)\s+it\s+(?:be\s+|going\s+to\s+(?:be\s+)?|gonna\s+(?:be\s+)?)?"
        r"(?:rain|raining|snow|snowing|sunny|cloudy|windy|hot|cold|warm|stormy|foggy|freezing)\b"
        r"|\b(?:rain(?:ing|y)?|snow(?:ing|y)?|sunny)\b|\b(?:what|how)(?:'s|\s+is)\s+it\s+(?:like\s+)?outside\b"
        r"|\bumbrella\b|\bneed\s+a\s+(?:jacket|coat)\b")),
    _Trigger("play_music", 1, _rx(
        r"\bplay\b(?!\s+(?:a\s+|the\s+|some\s+)?(?:games?|video\s+games|cards|chess|football|soccer|tennis"
        r"|basketball|golf|catch|with|outside|dead|guitar|piano|drums|violin|sports?)\b)|\blisten\s+to\b")),
    _Trigger("pan_left", 1, _rx(_PAN_VERBS + _PAN_GAP + _PAN_TAIL + r"left(?:wards?)?\b")),
    _Trigger("pan_right", 1, _rx(_PAN_VERBS + _PAN_GAP + _PAN_TAIL
                                 + r"right(?:wards?)?\b(?!\s+(?:now|away|there|here|back)\b)")),
    # a bare direction continues a camera request: "turn left, then right by 30 degrees"
    _Trigger("pan_left", 2, _rx(r"^\s*(?:to\s+the\s+)?left\b")),
    _Trigger("pan_right", 2, _rx(r"^\s*(?:to\s+the\s+)?right\b(?!\s+(?:now|away|there|here|back)\b)")),
    # tier 2: generic verbs, used only when nothing specific matched
    _Trigger("search_contacts", 2, _rx(r"\b(?:look\s+up|lookup|find|look\s+for|pull\s+up)\b"), _person_after),
    _Trigger("web_search", 2, _rx(r"\b(?:look\s+up|lookup)\b"), _topic_after),
    _Trigger("web_search", 2, _rx(
        r"\bsearch\b|\bfind\s+(?:me\s+)?(?:info|information|articles|results|out)\b")),
    _Trigger("play_music", 2, _rx(
        r"\b(?:put|throw)\s+on\b|\bblast\b|\b(?:start|keep)\s+playing\b|\bstart\b|\bqueue(?:\s+up)?\b"
        r"|\bshuffle\b|\bhear\b")),
    _Trigger("calculate", 2, _rx(r"^"), _bare_calc),
]


def _classify(t: _Text) -> str | None:
    """The tool an intent asks for: lowest tier, then earliest trigger, then list order."""
    best: tuple[tuple[int, int], str] | None = None
    for trig in _TRIGGERS:
        for m in trig.pattern.finditer(t.num):
            if trig.check is not None and not trig.check(t, m):
                continue
            key = (trig.tier, m.start())
            if best is None or key < best[0]:
                best = (key, trig.tool)
            break
    return best[1] if best else None


# ================================================================================================
# Value cleaning helpers
# ================================================================================================

_ABBREV_END = re.compile(r"(?:\b[A-Za-z]\.){2,}$")


def _strip_punct(value: str) -> str:
    """Drop trailing . ! ? , ; : but keep the dot of an abbreviation ("Washington D.C.")."""
    value = value.strip()
    while value and value[-1] in ".!?,;:" and not (value[-1] == "." and _ABBREV_END.search(value)):
        value = value[:-1].rstrip()
    return value


def _unquote(value: str) -> tuple[str, bool]:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1].strip(), True
    return value, False


def _take_person(t: _Text, pos: int) -> tuple[str | None, int]:
    """Read a recipient or contact name from raw index pos; returns (name, end index).

    A pronoun comes back as itself (resolved later). Otherwise up to three capitalised or
    role words ("John Smith", "my mom" -> "mom", "my sister Sarah" -> "Sarah"), or one
    lowercase word when the user typed the name in lowercase ("text john ...").
    """
    raw = t.raw
    m = re.compile(r"\s*(?:to\s+)?").match(raw, pos)
    pos = m.end() if m else pos
    m = re.compile(r"(him|her|them)\b", re.I).match(raw, pos)
    if m:
        return m.group(1).lower(), m.end()
    m = re.compile(r"(?:my|our|the)\s+", re.I).match(raw, pos)
    if m:
        pos = m.end()
    words: list[str] = []
    word_re = re.compile(rf"\s*((?:Dr|Mr|Mrs|Ms|Mx|Prof)\.|{_NAME_WORD}|\+?\d[\d\-\s()]{{5,}}\d)")
    while len(words) < 3:
        m = word_re.match(raw, pos)
        if not m:
            break
        word = m.group(1)
        low = word.lower()
        if low in _NAME_STOP or (words and low in _ROLE_WORDS and words[-1].lower() in _ROLE_WORDS):
            break
        possessive = low.endswith("'s")
        if possessive:
            word, low = word[:-2], low[:-2]
        is_name = word[0].isupper() or word[0].isdigit() or low in _ROLE_WORDS
        if not is_name and words:
            break
        words.append(word)
        pos = m.end()
        if possessive or not is_name:
            break
    if len(words) > 1 and words[0].lower() in _ROLE_WORDS and words[1][0].isupper():
        words = words[1:]  # "my sister Sarah" -> "Sarah"
    return (" ".join(words) or None), pos


# Words that end a name: the message or a connective starts here.
_NAME_STOP = {
    "i", "i'm", "i'll", "i've", "i'd", "im", "saying", "that", "to", "and", "about", "with", "a",
    "an", "the", "know", "if", "asking", "telling", "on", "at", "in", "for", "from", "what", "when",
    "please", "hi", "hello", "hey", "this", "but", "or", "then", "also", "so", "who", "which",
    "whether", "we", "we're", "we'll", "you", "you're", "it", "it's", "happy", "good", "thanks",
    "thank", "sorry", "congrats", "congratulations", "call", "don't", "can", "are", "is", "do",
    "did", "will", "meet", "see", "let's", "dinner", "lunch", "running", "just", "love", "miss",
    "how", "where", "why", "message", "text", "number", "phone", "email", "contact", "contacts",
    "up", "back", "again", "now", "today", "tomorrow", "tonight", "my", "your", "our", "be",
}


# ================================================================================================
# Extractors: one per tool, each returns a list of argument dicts (usually one)
# ================================================================================================


@dataclass
class _Context:
    last_person: str | None = None  # for "send him a message"


# --- get_weather --------------------------------------------------------------------------------

_LOC_PREP = re.compile(r"\b(?:in|for|at|near|around)\s+")
_LOC_STOP = re.compile(
    r"\s*(?:[?!;]|(?<!\b[a-z])\.(?:\s|$)|,\s*(?:and|then|also|please|today|tomorrow|tonight|right|now|too)\b"
    r"|\b(?:today|tonight|tomorrow|now|right\s+now|currently|at\s+the\s+moment|this|next|later|please"
    r"|like|on|in|at|for|during|over|with|then|also|and\s+(?:in|for|at|then|also|what|how|is|will)"
    r"|weekend|morning|afternoon|evening|night|outside|looking|going|gonna|will|is|be|do|does"
    r"|should|if|weather|forecast|temperature|too|as\s+well"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|january|february|march|april|june|july|august|september|october|november|december)\b)")
_NOT_A_PLACE = {"me", "us", "here", "there", "my area", "my location", "home", "the moment",
                "now", "it", "you", "a", "an"}
_WEATHER_WORD = re.compile(r"\b(?:weather|forecast|temperature)\b")
_NOT_A_NAME_START = {"what", "what's", "whats", "how", "how's", "hows", "check", "tell", "show",
                     "get", "is", "the", "please", "can", "could", "give", "hey", "will", "do",
                     "i", "and", "then", "also", "today's", "tomorrow's", "current", "local"}


def _location_at(t: _Text, start: int) -> str:
    """The place name starting at raw index start, cut at the first filler or time word."""
    stop = _LOC_STOP.search(t.low, start)
    # "St. Louis": the dot of an abbreviation does not end the name
    while stop and t.low.startswith(".", stop.start()) and _ABBREV_BEFORE.search(t.low, 0, stop.start() + 1):
        stop = _LOC_STOP.search(t.low, stop.end())
    end = stop.start() if stop else len(t.raw)
    # a comma ends the place unless a capitalised region follows ("Paris, France", "Austin, TX")
    comma = re.search(r",(?!\s*[A-Z])", t.raw[start:end])
    end = start + comma.start() if comma else end
    value = re.sub(r"^(?:the)\s+", "", t.raw[start:end].strip(), flags=re.I)
    value = _strip_punct(value)
    return "" if value.lower() in _NOT_A_PLACE or not value[:1].isalpha() else value


def _extract_weather(t: _Text, ctx: _Context) -> list[dict[str, Any]]:
    candidates = [(m.end(), _location_at(t, m.end())) for m in _LOC_PREP.finditer(t.low)]
    candidates = [(pos, loc) for pos, loc in candidates if loc]
    # Prefer a capitalised place over "at the beach": capitals mark names.
    chosen = next(((p, loc) for p, loc in candidates if loc[0].isupper()), None) or \
        (candidates[0] if candidates else None)
    if chosen is None:
        loc = _location_before_weather_word(t) or _location_after_weather_word(t)
        return [{"location": loc}] if loc else [{}]
    places = [chosen[1]]
    # "in Paris and London", "in Paris and in Rome": one call per place.
    if " and " in chosen[1]:
        places = [p.strip() for p in re.split(r",\s*|\s+and\s+", chosen[1]) if p.strip()]
    for m in re.finditer(r"\band\s+(?:in|for|at)\s+", t.low[chosen[0]:]):
        extra = _location_at(t, chosen[0] + m.end())
        if extra and extra not in places:
            places.append(extra)
    return [{"location": p} for p in places]


def _location_after_weather_word(t: _Text) -> str:
    """ "Forecast Berlin", "weather Tokyo tomorrow": a capitalised place right after the keyword."""
    m = re.search(r"\b(?:weather|forecast|temperature)\s+", t.low)
    if not m or not t.raw[m.end():m.end() + 1].isupper():
        return ""
    return _location_at(t, m.end())


def _location_before_weather_word(t: _Text) -> str:
    """ "Paris weather", "what's London's forecast": capitalised words just before the keyword."""
    m = _WEATHER_WORD.search(t.low)
    if not m:
        return ""
    words = list(re.finditer(r"[^\W\d_][\w'\-.]*", t.raw[:m.start()]))
    picked: list[str] = []
    for w in reversed(words):
        word = w.group()
        if not word[0].isupper() or word.lower() in _NOT_A_NAME_START:
            break
        picked.insert(0, word)
    value = " ".join(picked)
    return value[:-2] if value.endswith("'s") else value


# --- set_alarm ----------------------------------------------------------------------------------

def _extract_alarm(t: _Text, ctx: _Context) -> list[dict[str, Any]]:
    clocks = find_clocks(t.num)
    if not clocks:
        return [{}]
    # Several alarms only when the times are listed together: "at 6, 6:30 and 7".
    picked = [clocks[0]]
    for c in clocks[1:]:
        between = t.num[picked[-1].end:c.start]
        if re.fullmatch(r"\s*(?:,|and|&|,\s*and)\s*(?:(?:at|for)\s+)?", between):
            picked.append(c)
    out: list[dict[str, Any]] = []
    for c in picked:
        args = {"hour": c.hour, "minute": c.minute}
        if args not in out:
            out.append(args)
    return out


# --- set_timer ----------------------------------------------------------------------------------

def _extract_timer(t: _Text, ctx: _Context) -> list[dict[str, Any]]:
    minutes = parse_duration_minutes(t.num)
    return [{"minutes": minutes}] if minutes else [{}]


# --- send_message -------------------------------------------------------------------------------

_MSG_WORD = r"(?:text|message|msg|note|sms|dm|line|whatsapp)"
_SEND_TO = re.compile(rf"\b(?:send|shoot|drop|write)\s+(?:a\s+|an\s+)?(?:quick\s+|short\s+)?"
                      rf"(?:text\s+)?{_MSG_WORD}(?:\s+message)?\s+to\s+")
_SEND_X_A_MSG = re.compile(rf"\b(?:send|shoot|drop|write)\s+(?=\S+(?:\s+\S+){{0,2}}?\s+(?:a|an|the)\s+"
                           rf"(?:quick\s+|short\s+)?{_MSG_WORD}\b)")
_SEND_BARE = re.compile(rf"\b(?:send|shoot|drop|write)\s+(?:a\s+|an\s+)?(?:quick\s+|short\s+)?"
                        rf"(?:text\s+)?{_MSG_WORD}\b")
_TEXT_X = re.compile(r"\b(?:text|message|msg|sms|dm|ping)\s+(?!me\b|us\b)")
_TELL_X = re.compile(r"\btell\s+(?!(?:me|us|you|it|a|an)\b)")
_LET_X = re.compile(r"\blet\s+(?!me\b|us\b)(?=\S+(?:\s+\S+)?\s+know\b)")
_MSG_MARKER = re.compile(
    rf"\s*[,:\-]?\s*(?:(?:a|an|the)\s+(?:quick\s+|short\s+)?{_MSG_WORD}\s+)?(?:know\s+)?"
    r"(?:(?:saying|that\s+says|which\s+says|that\s+reads|which\s+reads|to\s+say|and\s+say|reading"
    r"|with\s+the\s+(?:message|text)|telling\s+(?:him|her|them)|and\s+tell\s+(?:him|her|them)|about|that|to)\b"
    r"\s*[:,]?\s*|[:,\-]\s*)?",
    re.I)
_MSG_MARKER_ONLY = re.compile(r"\s*(?:saying|that\s+says|which\s+says|reading|:)\s*", re.I)


def _clean_message(body: str) -> str:
    body = body.strip()
    unquoted, was_quoted = _unquote(body)
    if was_quoted:
        return unquoted  # the user's own punctuation inside quotes stays
    body = re.sub(r"^(?:please)\b[\s,]*", "", body, flags=re.I)
    body = re.sub(r"[\s,]+please$", "", body, flags=re.I)
    return _strip_punct(body)


def _recipient_cue(low: str) -> re.Match[str] | None:
    """Where the recipient's name starts: after "send a message to", "text", "tell", "let"."""
    send_bare = _SEND_BARE.search(low)
    for rx in (_SEND_TO, _SEND_X_A_MSG, _TEXT_X, _TELL_X, _LET_X):
        m = rx.search(low)
        if m and rx is _TEXT_X and send_bare and send_bare.start() < m.start():
            continue  # "send a text saying hi to Tom": "text saying" is not "text <name>"
        if m:
            return m
    return None


def _message_then_recipient(rest: str) -> tuple[str | None, str]:
    """ "(send a message) saying hi to Tom": the recipient comes last."""
    mk = _MSG_MARKER_ONLY.match(rest)
    rest = rest[mk.end():] if mk else rest
    tail = re.search(rf"\s+to\s+((?:my\s+)?{_NAME_WORD}(?:\s+{_NAME_WORD})?)\s*[.!?]?$", rest)
    if tail and _looks_like_person(tail.group(1)):
        return _take_person(_Text(tail.group(1)), 0)[0], rest[:tail.start()]
    return None, rest


def _extract_message(t: _Text, ctx: _Context) -> list[dict[str, Any]]:
    raw = t.raw
    recipient, body = None, None
    cue = _recipient_cue(t.low)
    if cue:
        recipient, pos = _take_person(t, cue.end())
        body = raw[_MSG_MARKER.match(raw, pos).end():] if recipient else None
    elif bare := _SEND_BARE.search(t.low):
        recipient, body = _message_then_recipient(raw[bare.end():])
    quoted = next((raw[s:e] for s, e in _quote_spans(raw)), None)
    if quoted:  # a quoted message wins wherever it sits
        body = quoted
    if recipient in _PRONOUNS:
        recipient = ctx.last_person or recipient
    elif recipient:
        ctx.last_person = recipient
    args: dict[str, Any] = {}
    if recipient:
        args["recipient"] = recipient
    message = _clean_message(body) if body else ""
    if message:
        args["message"] = message
    return [args]


# --- create_reminder ----------------------------------------------------------------------------

_REMIND_RE = re.compile(
    r"\bremind(?:ing)?\s+(?:me|us)\b|\b(?:(?:set|create|add|make)\s+)?(?:(?:a|an|the)\s+)?reminders?\b"
    r"|\bdon'?t\s+let\s+me\s+forget\b|\bdon'?t\s+forget\b|\bmake\s+sure\s+i\s+remember\b")
_TITLE_LEAD = re.compile(
    r"^(?:[\s,:]|for\s+me\b|(?:to|about|that|of|for|titled|called|named|saying|that\s+says|tomorrow|today"
    r"|tonight|later|this\s+(?:morning|afternoon|evening))\b)*"
    r"(?:remind\s+me\s+(?:to\s+|about\s+)?)?"
    r"(?:i\s+(?:need|have|should|must|gotta|got)\s+to\s+(?:remember\s+to\s+)?|to\s+)?(?:the\s+)?", re.I)
_TITLE_TAIL = re.compile(
    r"(?:[\s,]+(?:at|on|by|around|for|@|tomorrow|today|tonight|later|please|this\s+(?:morning|afternoon|evening)"
    r"|in\s+the\s+(?:morning|afternoon|evening)|tomorrow\s+(?:morning|afternoon|evening|night)"
    r"|in\s+(?:[\w-]+\s+){0,2}(?:minutes?|mins?|hours?|hrs?|days?|weeks?)|(?:next|this)\s+\w+))+\s*[.!?]*$",
    re.I)


def _clean_title(body: str) -> str:
    title = _TITLE_LEAD.sub("", body.strip(), count=1)
    title = _TITLE_TAIL.sub("", title)
    return _strip_punct(re.sub(r"\s+", " ", title))


def _extract_reminder(t: _Text, ctx: _Context) -> list[dict[str, Any]]:
    m = _REMIND_RE.search(t.num)
    clocks = find_clocks(t.num)
    args: dict[str, Any] = {}
    start = t.raw_index(m.end()) if m else 0
    body = t.raw[start:]
    if clocks:
        c = clocks[0]
        args["time"] = format_clock_12h(c.hour, c.minute, c.explicit)
        cs, ce = t.raw_index(c.start) - start, t.raw_index(c.end) - start
        if 0 <= cs < len(body):  # cut the time (and its "at") out of the title
            left = re.sub(r"\s*(?:\b(?:at|by|around|for|on)|@)\s*$", "", body[:cs], flags=re.I)
            body = left + " " + body[max(ce, 0):]
    title = _clean_title(body)
    if not title and m:  # "I have to renew my passport at 1pm, remind me": the task came first
        before = t.raw[:t.raw_index(m.start())]
        if clocks and t.raw_index(clocks[0].start) < len(before):
            cs = t.raw_index(clocks[0].start)
            before = re.sub(r"\s*(?:\b(?:at|by|around|for|on)|@)\s*$", "", before[:cs], flags=re.I) + " " + \
                before[t.raw_index(clocks[0].end):]
        title = _clean_title(re.sub(r"^(?:please\s+|can\s+you\s+|could\s+you\s+)", "", before.strip(), flags=re.I))
    if title:
        args = {"title": title, **args}
    return [args]


# --- search_contacts ----------------------------------------------------------------------------

_BOOK = r"(?:contacts?|contact\s+list|address\s+book|phone\s?book)"
_CONTACT_PATTERNS = [
    re.compile(rf"\b(?:search|look\s+through|check|go\s+through)\s+(?:in\s+|through\s+)?(?:my\s+|the\s+)?{_BOOK}"
               r"\s+(?:for\s+)?(?P<q>.+)$"),
    re.compile(rf"\b(?:find|look\s+up|lookup|search\s+for|look\s+for|pull\s+up|get|show(?:\s+me)?|check|open"
               rf"|bring\s+up|is|do\s+i\s+have)\s+(?P<q>.+?)\s+(?:in|from|on|within)\s+(?:my\s+|the\s+)?{_BOOK}"),
    re.compile(r"\b(?:what(?:'s|\s+is)|whats|get(?:\s+me)?|find(?:\s+me)?|give\s+me|show\s+me|look\s+up|lookup"
               r"|pull\s+up|need)\s+"
               r"(?P<q>.+?)'s\s+(?:phone\s+number|number|email|cell|contact|address|phone)"),
    re.compile(r"\b(?:phone\s+number|number|email(?:\s+address)?|contact\s+(?:info|details))\s+(?:for|of)\s+"
               r"(?P<q>.+)$"),
    re.compile(r"\b(?:find|look\s+up|lookup|look\s+for|pull\s+up|search\s+for)\s+(?P<q>.+)$"),
]


def _extract_contacts(t: _Text, ctx: _Context) -> list[dict[str, Any]]:
    for rx in _CONTACT_PATTERNS:
        m = rx.search(t.low)
        if not m:
            continue
        q = t.raw[m.start("q"):m.end("q")]
        q = re.sub(r"^(?:my|the|a|contact|someone|somebody|person)\s+(?:named\s+|called\s+)?", "", q.strip(),
                   flags=re.I)
        q = re.sub(r"^(?:named|called)\s+", "", q, flags=re.I)
        q = re.sub(r"(?:'s)?\s+(?:phone\s+number|number|email|contact\s+info|details)$", "", q, flags=re.I)
        q = re.sub(r"'s$", "", _strip_punct(re.sub(r"[\s,]+please$", "", q, flags=re.I)))
        if q:
            if q.lower() in _PRONOUNS:
                q = ctx.last_person or q
            ctx.last_person = q
            return [{"query": q}]
    return [{}]


# --- play_music ---------------------------------------------------------------------------------

_PLAY_RE = re.compile(r"\b(?:(?:start|keep)\s+playing|play|(?:put|throw)\s+on|blast|listen\s+to|start|queue(?:\s+up)?"
                      r"|shuffle|hear)\b")
_PLAY_LEAD = re.compile(  # lowercase only: "play The Beatles" keeps its "The"
    r"^(?:(?:me|us|some|any|something|anything|a\s+bit\s+of|a\s+little(?:\s+bit\s+of)?|more"
    r"|the\s+song|the\s+track|the\s+album"
    r"|the\s+playlist|a\s+song\s+(?:called|named)|the\s+song\s+(?:called|named)|songs?\s+(?:called|named)"
    r"|song|track|album|playlist|my|music|the)\s+)+")
_PLAY_TAIL = re.compile(
    r"(?:\s+(?:(?i:on\s+(?:spotify|youtube(?:\s+music)?|apple\s+music|pandora|soundcloud|deezer|tidal))"
    r"|on\s+(?:the\s+)?(?:speakers?|radio|tv|stereo)|on\s+my\s+(?:phone|speakers?)"
    r"|in\s+the\s+(?:living\s+room|kitchen|bedroom|car|background)|for\s+me|please|now|right\s+now"
    r"|at\s+(?:full|max|high|low)\s+volume|loud(?:ly)?|again))+\s*[.!?]*$")
_GENERIC_MUSIC = {"", "something", "anything", "music", "songs", "some music", "a song", "stuff",
                  "tracks", "a track", "some songs", "some stuff", "tunes", "some tunes"}


def _extract_play(t: _Text, ctx: _Context) -> list[dict[str, Any]]:
    m = _PLAY_RE.search(t.low)
    if not m:
        return [{}]
    value = _PLAY_TAIL.sub("", t.raw[m.end():].strip())
    # "play Bohemian Rhapsody by Queen" -> the song; "play something by Adele" -> the artist.
    by = re.match(r"^(.*?)\s+by\s+(.+)$", value)
    if by:
        left, right = by.group(1).strip(), by.group(2).strip()
        if left.lower() in _GENERIC_MUSIC or _PLAY_LEAD.sub("", left) in _GENERIC_MUSIC:
            value = right
        elif re.sub(r"^the\s+", "", right)[:1].isupper() and right.lower() not in ("me", "you", "myself"):
            value = left
    value = _PLAY_LEAD.sub("", value)
    value = re.sub(r"\s+(?:music|songs?|tunes|tracks?)\s*([.!?]*)$", r"\1", value)
    value = _unquote(_strip_punct(value))[0]
    if value.lower() in _GENERIC_MUSIC:
        return [{}]
    return [{"song": value}]


# --- pan_left / pan_right -----------------------------------------------------------------------

def _extract_pan(t: _Text, ctx: _Context) -> list[dict[str, Any]]:
    m = re.search(r"\b(\d{1,3})\s*(?:-\s*)?(?:degrees?|degs?|°)", t.num)
    return [{"degrees": int(m.group(1))}] if m else [{}]


# --- get_time -----------------------------------------------------------------------------------

def _extract_time(t: _Text, ctx: _Context) -> list[dict[str, Any]]:
    return [{}]


# --- calculate ----------------------------------------------------------------------------------

_N = r"(-?\d+(?:,\d{3})*(?:\.\d+)?)"
_CALC_REWRITES = [  # verb and noun phrasings become operator words first
    (re.compile(rf"\badd\s+{_N}\s+(?:and|to|plus)\s+{_N}"), r"\1 plus \2"),
    (re.compile(rf"\bsubtract\s+{_N}\s+from\s+{_N}"), r"\2 minus \1"),
    (re.compile(rf"\bmultiply\s+{_N}\s+(?:by|and|times|with)\s+{_N}"), r"\1 times \2"),
    (re.compile(rf"\bdivide\s+{_N}\s+by\s+{_N}"), r"\1 over \2"),
    (re.compile(rf"\b(?:the\s+)?sum\s+of\s+{_N}\s+and\s+{_N}"), r"\1 plus \2"),
    (re.compile(rf"\b(?:the\s+)?product\s+of\s+{_N}\s+and\s+{_N}"), r"\1 times \2"),
    (re.compile(rf"\b(?:the\s+)?difference\s+between\s+{_N}\s+and\s+{_N}"), r"\1 minus \2"),
    (re.compile(rf"\b(?:the\s+)?quotient\s+of\s+{_N}\s+and\s+{_N}"), r"\1 over \2"),
    (re.compile(rf"{_N}\s+(?:to\s+the\s+)?(?:2nd|second)\s+power"), r"\1 squared"),
    (re.compile(rf"{_N}\s+(?:to\s+the\s+)?(?:3rd|third)\s+power"), r"\1 cubed"),
    (re.compile(rf"{_N}\s+to\s+the\s+(\d+)(?:st|nd|rd|th)(?:\s+power)?"), r"\1 ** \2"),
]
_CALC_TOKEN = re.compile(r"""
    (?P<num>\d+(?:,\d{3})*(?:\.\d+)?|\.\d+)
  | (?P<sqrt>(?:the\s+)?square\s+root\s+of|sqrt(?:\s+of)?|√)
  | (?P<pow>(?:raised\s+)?to\s+the\s+power\s+of|raised\s+to|to\s+the\s+power|\*\*|\^)
  | (?P<sq>squared\b)
  | (?P<cube>cubed\b)
  | (?P<pctof>(?:%|\s*percent\b)\s+of\b)
  | (?P<pct>%|percent\b)
  | (?P<mul>multiplied\s+by\b|times\b|x(?![a-z])|\*|×)
  | (?P<div>divided\s+by\b|over\b|/|÷)
  | (?P<add>plus\b|\+)
  | (?P<sub>minus\b|-|−)
  | (?P<neg>negative\b)
  | (?P<lp>\()
  | (?P<rp>\))
  | (?P<word>[a-z']+)
  | (?P<other>\S)
""", re.X)
_BINARY = {"mul": "*", "div": "/", "add": "+", "sub": "-", "pow": "**"}


def _expression(num: str) -> str | None:
    """An arithmetic expression string ("15 * 23 + 47") from digitised words, or None.

    A tiny state machine over tokens: operands and binary operators must alternate, brackets
    must balance, and at least one operation must be present. Unknown words are skipped
    ("what is", "the", "equal").
    """
    text = num
    for rx, repl in _CALC_REWRITES:
        text = rx.sub(repl, text)
    out: list[str] = []
    expect_operand, depth, ops, sign, sqrt = True, 0, 0, "", False
    for m in _CALC_TOKEN.finditer(text):
        kind, tok = m.lastgroup, m.group()
        if kind == "num":
            if not expect_operand:
                return None
            value = sign + tok.replace(",", "")
            out.append(f"sqrt({value})" if sqrt else value)
            expect_operand, sign, sqrt = False, "", False
        elif kind == "sqrt":
            if not expect_operand:
                return None
            sqrt, ops = True, ops + 1
        elif kind in ("neg", "sub") and expect_operand:
            sign = "-" if not sign else ""
        elif kind in _BINARY:
            if expect_operand:
                return None
            out.append(_BINARY[kind])
            expect_operand, ops = True, ops + 1
        elif kind in ("sq", "cube"):
            if expect_operand:
                return None
            out[-1] += "**2" if kind == "sq" else "**3"
            ops += 1
        elif kind == "pctof":  # "12% of 80" -> "12 / 100 * 80"
            if expect_operand:
                return None
            out += ["/", "100", "*"]
            expect_operand, ops = True, ops + 1
        elif kind == "pct":
            if expect_operand:
                return None
            out += ["/", "100"]
            ops += 1
        elif kind == "lp":
            if not expect_operand:
                return None
            out.append("sqrt(" if sqrt else "(")
            depth, sqrt = depth + 1, False
        elif kind == "rp":
            if expect_operand or depth == 0:
                return None
            out.append(")")
            depth -= 1
        elif kind == "other" and tok not in "?.,!=$€£":
            return None
    if expect_operand or depth or not ops or not out:
        return None
    return re.sub(r"(\()\s+|\s+(\))", r"\1\2", " ".join(out))


_CALC_START = re.compile(r"\b(?:calculate|compute|evaluate|solve|work\s+out|figure\s+out|what(?:'s|\s+is|\s+are)"
                         r"|whats|how\s+much\s+is|how\s+much\s+are)\b")


def _extract_calc(t: _Text, ctx: _Context) -> list[dict[str, Any]]:
    for m in _CALC_START.finditer(t.num):
        expr = _expression(t.num[m.end():])
        if expr:
            return [{"expression": expr}]
    expr = _expression(t.num)
    return [{"expression": expr}] if expr else [{}]


# --- web_search ---------------------------------------------------------------------------------

_ONLINE = r"(?:online|on\s+the\s+(?:web|internet|net)|on\s+google|on\s+the\s+internet)"
_WEB_PATTERNS = [
    re.compile(r"\b(?:web|google|internet|online)\s+search\s*(?:(?:for|on|about)\s+|:\s*)(?P<q>.+)$"),
    re.compile(r"\bsearch\s+(?:the\s+)?(?:web|internet|net|online|google)\s+(?:for|about|on)\s+(?P<q>.+)$"),
    re.compile(rf"\bsearch\s+(?:for\s+)?(?P<q>.+?)\s+{_ONLINE}"),
    re.compile(r"\bgoogle\s+(?:for\s+)?(?P<q>.+)$"),
    re.compile(rf"\b(?:look\s+up|lookup)\s+(?P<q>.+?)\s+{_ONLINE}"),
    re.compile(r"\bbrowse\s+(?:the\s+web\s+)?for\s+(?P<q>.+)$"),
    re.compile(r"\bfind\s+(?:me\s+)?(?:some\s+)?(?:info|information|articles|results|out)\s+(?:about|on|regarding)?\s*"
               r"(?P<q>.+)$"),
    re.compile(rf"\bfind\s+(?:me\s+)?(?:some\s+)?(?P<q>.+?)\s+{_ONLINE}"),
    re.compile(r"\bsearch\s+(?:for\s+|up\s+)?(?P<q>.+)$"),
    re.compile(r"\b(?:look\s+up|lookup)\s+(?P<q>.+)$"),
]
_NUM_RESULTS = re.compile(
    r"(?:,?\s*(?:and\s+)?(?:(?:show|give|get|return)\s+me\s+)?(?:the\s+)?(?:top|first)\s+(?P<a>\d+)"
    r"(?:\s+(?:results?|links?|hits|pages|websites|sites))?"
    r"|,?\s*(?:and\s+)?(?:(?:show|give|get|return)\s+me\s+)?(?:only\s+)?(?P<b>\d+)"
    r"\s+(?:results?|links?|hits|websites|sites)"
    r"|\s*(?:and\s+)?(?:show|give|get|return)\s+me\s+(?P<c>\d+)(?!\s*\w))\b")


def _extract_web(t: _Text, ctx: _Context) -> list[dict[str, Any]]:
    args: dict[str, Any] = {}
    num_text = t.num
    n = _NUM_RESULTS.search(num_text)
    if n:
        args["num_results"] = int(n.group("a") or n.group("b") or n.group("c"))
        # blank the phrase out (same length, so indices still line up with the raw text)
        num_text = num_text[:n.start()] + " " * (n.end() - n.start()) + num_text[n.end():]
    for rx in _WEB_PATTERNS:
        m = rx.search(num_text)
        if not m:
            continue
        s, e = m.span("q")
        if n and s <= n.start() < e:  # the "top 5 results" phrase sits inside the query
            q = t.raw_of(s, n.start()) + " " + t.raw_of(min(n.end(), e), e)
        else:
            q = t.raw_of(s, e)
        q = _clean_query(q)
        if q:
            return [{"query": q, **args}]
    return [args]


def _clean_query(q: str) -> str:
    q = re.sub(r"\s+", " ", q).strip()
    q = re.sub(rf"\s+{_ONLINE}\b.*$", "", q, flags=re.I)
    q = re.sub(r"^(?:for|about|on)\s+(?:(?:info|information|results|articles)\s+(?:about|on)\s+)?", "", q, flags=re.I)
    q = re.sub(r"^(?:info|information|results|articles)\s+(?:about|on)\s+", "", q, flags=re.I)
    q = re.sub(r"[\s,]+(?:please|for\s+me|and|with)$", "", q, flags=re.I)
    return _unquote(_strip_punct(q))[0]


_EXTRACTORS: dict[str, Callable[[_Text, _Context], list[dict[str, Any]]]] = {
    "get_weather": _extract_weather,
    "set_alarm": _extract_alarm,
    "set_timer": _extract_timer,
    "send_message": _extract_message,
    "create_reminder": _extract_reminder,
    "search_contacts": _extract_contacts,
    "play_music": _extract_play,
    "pan_left": _extract_pan,
    "pan_right": _extract_pan,
    "get_time": _extract_time,
    "calculate": _extract_calc,
    "web_search": _extract_web,
}


# ================================================================================================
# Fitting to the offered schema, and the public entry point
# ================================================================================================


def _cast(value: Any, spec: dict[str, Any]) -> Any:
    types = spec.get("type")
    types = types if isinstance(types, list) else [types]
    if isinstance(value, int) and "integer" not in types and "number" not in types and "string" in types:
        return str(value)
    if isinstance(value, str) and "string" not in types and ("integer" in types or "number" in types):
        n = words_to_number(value)
        return n if n is not None else value
    return value


def _fit_to_tool(tool: Tool, args: dict[str, Any]) -> dict[str, Any]:
    """Keep the arguments the offered tool declares, cast to its types.

    If the offered tool names its only parameter differently (say `city` for `location`),
    a lone extracted value is passed under that name rather than lost.
    """
    props = tool.properties
    out = {k: _cast(v, props[k]) for k, v in args.items() if k in props}
    if not out and len(args) == 1 and len(props) == 1:
        (key, spec), value = next(iter(props.items())), next(iter(args.values()))
        out = {key: _cast(value, spec)}
    return out


def _continues(previous: ToolCall, call: ToolCall) -> bool:
    """A message to someone with no text yet, followed by the text for the same person."""
    return (previous.name == call.name == "send_message" and "message" not in previous.arguments
            and previous.arguments.get("recipient") == call.arguments.get("recipient"))


@dataclass
class SymbolicParse:
    """The calls, and whether the parse is complete: every intent in the request was recognised, is
    for an offered tool and gave calls that validate against that tool's schema, and every offered
    tool is one the rules know (an unknown tool might be what the request is for). The router
    (`runtime/models/router.py`) answers with complete parses and hands the rest to a model."""

    calls: list[ToolCall]
    complete: bool
    reason: str = ""


class SymbolicParser:
    """Rule-based baseline: `parser(text, tools) -> [ToolCall, ...]`, in the order asked.

    Emits calls only for offered tools whose names it knows (see module doc); returns []
    for chit-chat and for requests no offered tool covers.
    """

    def __call__(self, text: str, tools: Sequence[Tool]) -> list[ToolCall]:
        return self.parse(text, tools).calls

    def parse(self, text: str, tools: Sequence[Tool]) -> SymbolicParse:
        offered = {tool.name: tool for tool in tools}
        ctx = _Context()
        calls: list[ToolCall] = []
        gaps: list[str] = [f"no rules for offered tool {n}" for n in offered if n not in _EXTRACTORS]
        for seg in _segments(_normalise(text)):
            name = _classify(seg)
            if name is None:
                gaps.append("an intent no rule recognises")
                continue
            # Extract even for tools not offered: a contact found there still feeds "him" later.
            arg_sets = _EXTRACTORS[name](seg, ctx)
            if name not in offered:
                gaps.append(f"{name} is not offered")
                continue
            if not arg_sets:
                gaps.append(f"no arguments found for {name}")
            for args in arg_sets:
                call = ToolCall(name, _fit_to_tool(offered[name], args))
                if calls and _continues(calls[-1], call):
                    calls[-1] = call  # "message Grace and tell her ...": one message, not two
                else:
                    calls.append(call)
        gaps += [f"{c.name}: {e}" for c in calls for e in offered[c.name].validation_errors(c.arguments)]
        if not calls:
            gaps.append("no call")
        return SymbolicParse(calls, not gaps, "; ".join(gaps))
