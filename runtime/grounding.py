"""Grounded calls: a call's values must be ones the conversation states.

Every training conversation the toolkit makes is verified so that each argument value is said in the
request (data_gen/verify.py, data_gen/schema_driven/episodes.py: `grounding_problem`). A tuned model
that writes a value no one said is guessing: for a request no offered tool serves it fills a tool's
required numbers with round defaults ("what's the time?" -> calculate_time(distance=10, speed=10)),
and it pads optional ones with made-up values (gravity=9.8). This module checks a written call against
the conversation's text, for the engine (runtime/engine.py, `generation.grounded_calls`):

- a **required** argument whose value is not stated withdraws the whole call (the engine then decodes
  the turn again from before the call, with calls blocked: the model answers in words);
- an **optional** argument whose value is not stated is dropped from the call (the tool's default
  applies), and so is an optional enum member or boolean that the user's words do not name in any way
  (runtime/choices.py: `connector="Type 2"` for "charging stations in Orlando"); the other way round, an
  optional enum parameter the call leaves out gets the one member the request names together with the
  parameter ("local climate: dry" -> climate="dry"; runtime/choices.py `named_member`), and a
  boolean gets the value the request says it has, whether the call leaves it out or writes the other
  value ("open now enabled" -> open_now=true, `named_flag`; "including human impact" ->
  include_human_impact=true, `read_flag`);
- an **optional** number that repeats a required argument's number in the same call, where the request
  says that number only once, is dropped (`reused_number`): one said number fills one slot. A tuned model pads
  optional numbers with a value it has just written (cone_volume(radius=4, height=7, round_off=4) for
  "radius 4 and height 7", compound_interest(duration=2, compound_freq=2) for "2 years"); a request
  that means both says it twice ("5 adults and 5 children"). Two **required** numbers that share such
  a number leave one of them unstated, so the call is withdrawn (solar_need(square_footage=2000,
  sunlight_hours=2000) for "my 2000 sq ft home"). Neither rule counts 0 and 1, which people leave
  unsaid (x^2 + 1: a and c are 1), nor a clock pair ("3:15 PM" is hour 15, minute 15);
- likewise an **optional** string that repeats another argument's string in the same call, where the
  request says it only once, is dropped (`reused_string`): league="Manchester City" beside team="Manchester
  City", sport="Basketball" beside team="Basketball" (BFCL multiple, stop 51: 3 right calls of 200 on
  one adapter, 1 on another, none lost on any other suite's saved predictions).

What counts as stated is deliberately lenient, because a false withdrawal loses a right call:
- numbers: any number the text says in digits or words ("forty-five", "a dozen"), as a clock reading
  ("half past five" -> 5, 17, 30) or a duration ("an hour and a half" -> 90), also negated, as a percent
  (5% -> 0.05), or times 100 / 1000; 0 and 1 always count (defaults people leave unsaid, x^2's a=1);
- strings: any one word of the value (its first four letters, or a number in it) appears in the text,
  also after spelled-out numbers become digits ("seven minus eleven" grounds "7 - 11"), unless a word of
  the value that opens with a capital and has 4 letters or more is not said (by its first four letters,
  at a word's start): that word names something no one mentioned ("Palm Beach, Florida" for "Palm
  Beach", league="Manchester City" for "Manchester United in Premier League", "Nathaniel Noah" for
  "Noah"); "New York, NY" and "LeBron James" stay stated; a currency or language code counts as stated
  where the conversation says it the way the training data does ("JPY" for "Japanese yen", "fr" for
  "French": toolcore/canonical.py);
- enum members, booleans, consts, arrays and objects are never judged (the schema or the call's shape,
  not the user's words, carries them; an enum member may still be read, below).

Before that check, a string value with no digits that the user's words do not contain but nearly do is
copied from them (`snap`): the span of the user's text (as many words as the value, one more or one
fewer) most like it, when their similarity (difflib's ratio) is at least 0.85: "Bohmian Rhapsody" ->
"Bohemian Rhapsody", "B Beijing" -> "Beijing", "make grocery list" -> "make a grocery list"; and one
whose last word cuts a word of the user's short or adds an ending to it (up to 4 letters) ends on that
word instead: "meet" for "the meeting" -> "meeting", "stretching" for "to stretch" -> "stretch". Values
with digits (times, expressions, dates) are left alone: their canonical forms differ from what was
said on purpose ("3:15 p.m." -> "3:15 PM"). A value that is a piece of the user's email address (its
name part, "Erik_K" for "erik_k@acme.org", except for a parameter that asks for a name) or of a word
with digits ("22210" of "flight ID22210") becomes the whole address or word; spaces around a string
value are dropped; a string that runs on into the name of another parameter of the call, which the
request says followed by that parameter's value, ends before it ("Open Water stars" for "called Open
Water stars 7" -> "Open Water"; read with the other readings below). Measured on stop 35's default
adapter by replaying its predictions: test split 0.867 -> 0.883, unseen tools (stop 33's suite) 0.770
-> 0.772, no case worse. A number is snapped too when it is the head of one the user
wrote with thousands separators or a scale word, and not said alone: "$200,000" -> 200 becomes 200000
(a JSON number cannot hold the comma, so a constrained model stops there), "$1.5M" -> 1.5 becomes 1500000.
Times are read, not guessed (`read_times`, on by default): a tool with integer `hour` and `minute`
parameters (also `*_hour` / `*_minute`: a clock pair) takes them from the one clock time the request
states, the way the symbolic parser reads it ("half past six" -> 6, 30; "10:30 PM" -> 22, 30; "7 in
the evening" -> 19, 0); a clock said without AM/PM keeps the model's half of the day when the hour is
one of its two readings. An integer `minutes` parameter (also `*_minutes`) whose value is not stated
takes the duration the request states ("an hour and a half" -> 90; a number stated only as a percent or
scale of a said one counts as unstated here: 150 is 1.5 x 100) instead of withdrawing the call, and
so does one that is the duration in hours ("a timer for one hour" -> 1 becomes 60); one the request
says only inside a clock time is not stated ("an alarm at 9:10 am" does not ground set_timer(10)).
Where the request says several clock times, a call takes the one its own hour and minute point at
(same minute, same hour on a 12-hour dial: "remind me at 5 PM and set an alarm for 4:30 PM" -> the
alarm's 4, 30 becomes 16, 30; else the one clock with that hour; else the one with that minute, unless
it is :00: 12, 30 there also becomes 16, 30), and none where no single one fits.
A time written as a 12-hour string ("5:00 AM", "25:00 PM") is read like a clock pair: from the one clock
the request says when the call has one such string, else from the clock it points at among those fixed
to one half of the day (AM/PM said, or a 24-hour hour past 12): "5 PM" -> "5:00 PM", "14:00" -> "2:00
PM", "twenty-five to eight in the evening" -> "7:35 PM"; so is a 24-hour string ("14:00") where the
schema's description shows a 12-hour time ("e.g. 3:00 PM"), and it is written in that form. A parameter
the schema asks as HH:MM that holds no time at all ("start_time": "2026-03-19", the date beside it
copied twice, or "3 AM") takes the one clock time the request says (or the one it says with AM/PM where
bare numbers could be hours too: "translate 3 AM from one city's time zone"). Dates are read the same way: a parameter that
takes an ISO date (`format: date`, "YYYY-MM-DD") gets the request's date that its value stands for, the
same date written another way ("January 2, 2027"), the one stated date sharing its year and its month or
day ("2027-01-20" for "January 2nd, 2027"), or, for a value that is no date at all, the one date the
request states; an ISO date written without its zeros gets them ("2026-01-2" -> "2026-01-02"), in any
string parameter (the model chose the form), and is then read the same way. An enum
member the request does not say gives way to the one other member it says ("start a return, too large
reason": "damaged" -> "too large"), a list written into a parameter described as comma-separated is
joined that way ("KO & BAC" -> "KO,BAC", as data_gen writes it), and an arithmetic expression is written
with the spacing its description's example shows, in digits ("sqrt(36)*30" -> "sqrt(36) * 30" and
"twenty-four / six" -> "24 / 6" for "e.g. 15 * 23 + 47"). Two look-alike values of a call that the
request pairs the other way round with its parameters' names are swapped back (runtime/pairing.py:
"destination country Poland, passport country Finland"). A country parameter (named or described so,
not a code or a place qualified by its country) holding a word the request does not say takes the one
word of the request that opens with the same four letters ("Portuguese" or "Porto" for a request that
says "Portugal"). A request with no clock time is left to the model, and so is a reading the tool's
schema refuses (an hour limited to 1-12 beside an AM/PM enum). The 135M demo adapter writes a wrong hour
for one alarm in three after 288 CPU steps ("4:45 a.m." -> 19), and such a call was withdrawn, so the
model declined a request its tools serve. Measured on one adapter (stop 26's default), off -> on:
hackathon 30 0.960 -> 0.967, hand-written set 0.679 -> 0.811, test split 0.755 -> 0.789.
A required string (words only) that is still not stated is handed to `copy` before the call is
withdrawn: the engine decodes it again as a span of the request (runtime/copy_values.py), never one of
the call's other strings, and the call keeps it if it is stated and the schema takes it.
Measured with the demo adapter, off -> on (README, Constrained calls): hackathon 30 0.922 -> 0.956 (the
snap), test split 0.743 -> 0.768, unseen tools 0.652 -> 0.673, BFCL irrelevance 0.500 -> 0.725, multiple
0.425 -> 0.450 (the number snap); replayed over every saved prediction of those suites, no case lost
a right call.
"""

from __future__ import annotations

import re
from datetime import date
from difflib import SequenceMatcher
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Iterable, Sequence

from toolcore.canonical import spoken_forms
from toolcore.conversation import Conversation
from toolcore.schema import (Tool, ToolCall, asks_24h_time, asks_comma_separated, asks_iso_date, declared_floats,
                             spaced_arithmetic_form, twelve_hour_form, write_arithmetic)
from toolcore.text import fold_accents

from .baselines.symbolic import Clock, digitize, find_clocks, parse_duration_minutes
from .choices import named_member, read_flag, says, unasked_choice
from .dates import LOOSE_DATE, date_read, find_dates
from .pairing import before_label, read_pairs

_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e-?\d+)?|\.\d+")
# quantity words that name a number but are not number words to the symbolic reader
_QUANTITY_WORDS = {"dozen": 12, "decade": 10, "century": 100, "pair": 2, "couple": 2, "fortnight": 14}
_QUANTITY_RE = re.compile(r"\b(" + "|".join(_QUANTITY_WORDS) + r")s?\b")
_ALWAYS_STATED = {0.0, 1.0}
SNAP_SIMILARITY = 0.85
# "200,000" and "1.5M" / "3 million" / "20k": the head a model copies, and the number it stands for
_GROUPED = re.compile(r"(?<![\d.,])(\d{1,3})((?:,\d{3})+)(?:\.\d+)?(?![\d,]*\d)")
# a bare k / m / b is a scale only after a currency sign ("$1.5M"): "600 m" is metres, "5k" a run
_SCALED = re.compile(r"(?:(?<=[$€£¥])|(?<=[$€£¥] ))(\d+(?:\.\d+)?)\s?(k|m|mn|b|bn|thousand|million|billion)\b"
                     r"|(?<![\d.,])(\d+(?:\.\d+)?)\s(thousand|million|billion)\b", re.I)
_SCALES = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "million": 1e6, "b": 1e9, "bn": 1e9, "billion": 1e9}
WORD = re.compile(r"[\w'-]+")          # a word of the user's text (snap here, copy spans in copy_values)
EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def _read_as(n: float) -> tuple[float, ...]:
    """The numbers a said number `n` states: itself, negated, as a percent (5% -> 0.05), times 100 / 1000."""
    return n, -n, n / 100, n * 100, n * 1000


def _same_number(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


# a word that opens with a capital ("Florida", "A-Class"; not "LeBron"'s "Bron", inside a word)
_NAME_WORD = re.compile(r"(?<![\w'-])[A-Z][\w'-]*")


@dataclass
class StatedValues:
    """What a conversation's text says: its words (lowercased, and with numbers as digits) and numbers."""

    text: str
    numbers: set[float] = field(default_factory=set)
    said: list[str] = field(default_factory=list)      # the user's own texts, for `snap`
    # the numbers as read, before signs and scales, less 0 and 1: no evidence inside a string
    read: set[float] = field(default_factory=set)
    heads: dict[float, float] = field(default_factory=dict)   # head of a grouped / scaled number -> the number
    # the request's (the last user text's) clock times, one per distinct reading, and its duration in minutes
    clocks: list[Clock] = field(default_factory=list)
    duration: int | None = None
    # numbers the conversation says only inside a clock time ("9:10 am": 9, 10, 21): no evidence for a
    # duration ("set_timer(minutes=10)" from "an alarm at 9:10 am")
    clock_only: set[float] = field(default_factory=set)
    dates: list[date] = field(default_factory=list)     # the request's dates that say their year

    @classmethod
    def of(cls, texts: Iterable[str], said: Iterable[str] = ()) -> "StatedValues":
        raw = " \n ".join(t for t in texts if t)
        num = digitize(raw) if raw else ""
        found = _numbers_in(num)
        clocks_said = find_clocks(num)
        for c in clocks_said:               # "quarter to eight in the morning" -> 7, 45; 19:30 -> 7, 19
            found |= {float(c.hour), float(c.minute), float(c.hour % 12 or 12), float(c.hour % 12 + 12)}
        minutes = parse_duration_minutes(num)
        if minutes:
            found |= {float(minutes), minutes / 60, minutes * 60.0}
        found |= {float(_QUANTITY_WORDS[m.group(1)]) for m in _QUANTITY_RE.finditer(num)}
        numbers = set(_ALWAYS_STATED)
        for n in found:                      # signs, percents, thousands
            numbers |= set(_read_as(n))
        heads = _heads(raw)
        numbers |= set(heads.values())            # "$1.2M" states 1200000
        said = [t for t in said if t]
        request = digitize(said[-1]) if said else ""
        clocks = list({(c.hour, c.minute, c.explicit): c for c in find_clocks(request)}.values())
        duration = parse_duration_minutes(request)         # None for no text
        return cls(raw.lower() + " \n " + num, numbers, said, found - _ALWAYS_STATED, heads, clocks, duration,
                   _clock_only(num, clocks_said), find_dates(request))

    def states_number(self, value: float) -> bool:
        return any(_same_number(value, n) for n in self.numbers)

    def snap(self, value: str) -> str:
        """`value` without surrounding spaces, or the span of the user's words it nearly is (see the module
        docstring)."""
        value = value.strip() or value
        low = value.lower()
        if not low or re.search(r"\d", low):
            return value
        whole = self.whole_words(low)
        if whole is not None:
            return whole
        if any(low in t.lower() for t in self.said):
            return value
        n = len(WORD.findall(value))
        best, span = SNAP_SIMILARITY, None
        for text in self.said:
            words = [m.span() for m in WORD.finditer(text)]
            for k in (n - 1, n, n + 1):
                for i in range(len(words) - k + 1) if k >= 1 else ():
                    cand = text[words[i][0]:words[i + k - 1][1]]
                    ratio = SequenceMatcher(None, low, cand.lower()).ratio()
                    if ratio >= best:
                        best, span = ratio, cand
        return span if span is not None else value

    def whole_words(self, low: str) -> str | None:
        """The user's words where lowercased `low` cuts their last word short or adds an ending to it:
        "meet" for "the meeting" -> "meeting", "stretching" for "remind me to stretch" -> "stretch" (at
        most 4 letters added or cut, at least 4 kept; a possessive is no ending: "Jane" for "Jane's number"
        stays "Jane"). None where `low` already ends on a word of the user's or no span fits."""
        for cut in range(5):
            stem = low[:len(low) - cut]
            last = WORD.findall(stem)
            if not last or len(last[-1]) < 4:
                return None
            found = []
            for text in self.said:
                for m in re.finditer(rf"(?<![\w'-]){re.escape(stem)}", text.lower()):
                    tail = re.match(r"[^\W\d_]*", text[m.end():]).group()     # letters: "Jane's" is "Jane" + 's
                    found.append((tail, text[m.start():m.end() + len(tail)]))
            if cut == 0 and any(not tail for tail, _ in found):
                return None                             # a whole-word copy: nothing to do
            for tail, span in found:     # one or the other: "groceries" is not bent into "grocery"
                if (cut == 0 and len(tail) <= 4) or (cut and not tail):
                    return span
        return None

    def whole_token(self, value: str, *, email: bool = True) -> str | None:
        """The user's whole email address or identifier where `value` is only a piece of it: "Erik_K" for
        "erik_k@acme.org" (the address's name part; `email=False`: not for a parameter that asks for a
        name), "22210" for "flight ID22210" (a word with digits that the value is glued inside). None where
        the value is said whole anywhere (outside an address), or no single address or word fits."""
        low = value.lower()
        if len(low) < 3 or re.search(r"\s", low):
            return None
        found: set[str] = set()
        for text in self.said:
            for m in EMAIL.finditer(text):
                if m.group().lower() == low:
                    return None
                if email and m.group().lower().split("@")[0] == low:
                    found.add(m.group())
            for word in re.findall(r"\w+", EMAIL.sub(" ", text)):
                if word.lower() == low:
                    return None
                if low in word.lower() and re.search(r"\d", word) and low.isalnum():
                    found.add(word)
        return found.pop() if len(found) == 1 else None

    def snap_number(self, value: float) -> float:
        """The number the user wrote, where `value` is only its head ("200,000" -> 200) and the head is
        not said on its own anywhere."""
        full = self.heads.get(float(value))
        return full if full is not None else value

    @cached_property
    def request(self) -> str:
        """The request (the user's last text) with its numbers as digits; "" when no text was said."""
        return digitize(self.said[-1]) if self.said else ""

    @cached_property
    def folded(self) -> str:
        """`text` without accents, for matching words in any alphabet ("Köln", "Zurich" for "Zürich")."""
        return fold_accents(self.text)

    def states_string(self, value: str) -> bool:
        # letters of any alphabet: [a-z] split "Köln" into "k" and "ln", neither said, and a right call
        # to locatePharmacy(location="Köln") was withdrawn (stop 42's GPU adapter on the test split)
        words = re.findall(r"[^\W\d_]+|\d+", fold_accents(value.lower()))
        if not words:
            return True                       # punctuation only: nothing to look for
        text = self.folded
        # a currency or language code, where the conversation says it the way people do ("JPY" for
        # "Japanese yen", "fr" for "French"): toolcore/canonical.py, the forms the training data used
        if any(all(_opens_a_word(w, text) for w in re.findall(r"[^\W\d_]+", fold_accents(form.lower())))
               for form in spoken_forms(value.strip())):
            return True
        # a capitalised word of 4 letters or more that the conversation never says (by its first 4 letters,
        # at a word's start) makes the value up, however many of its other words are said: "Palm Beach,
        # Florida" for "Palm Beach", league="Manchester City" for "Manchester United in Premier League"
        for name in _NAME_WORD.findall(value):
            if len(re.sub(r"[\W\d_]", "", name)) >= 4 and not _opens_a_word(fold_accents(name.lower()), text):
                return False
        for w in words:
            # a number in a string also counts when it was said another way ("noon" states "12:00 PM");
            # 0 and 1 do not: "2022-01-01" is not stated by "one"
            if w.isdigit() and float(w) in self.read:
                return True
            if w.isdigit() or len(w) >= 3:
                if w[:4] in text:
                    return True
            elif re.search(rf"\b{w}\b", text):
                return True
        return False


def _opens_a_word(word: str, text: str) -> bool:
    """Whether lowercased `text` says `word` at a word's start: by its first four letters, or whole where it
    is shorter than three ("us" is not "use")."""
    if len(word) < 3:
        return re.search(rf"(?<![^\W_]){re.escape(word)}\b", text) is not None
    return re.search(rf"(?<![^\W_]){re.escape(word[:4])}", text) is not None


def _heads(text: str) -> dict[float, float]:
    heads: dict[float, float] = {}
    spans: list[tuple[int, int]] = []
    for m in _GROUPED.finditer(text):
        heads[float(m.group(1))] = float(m.group(0).replace(",", ""))
        spans.append(m.span())
    for m in _SCALED.finditer(text):
        k = 1 if m.group(1) else 3
        heads[float(m.group(k))] = float(m.group(k)) * _SCALES[m.group(k + 1).lower()]
        spans.append(m.span(k))
    rest = list(text)
    for a, b in spans:                        # a head also said on its own is not a head
        rest[a:b] = " " * (b - a)
    alone = {float(m.group().replace(",", "")) for m in _NUMBER.finditer(digitize("".join(rest)))}
    return {h: n for h, n in heads.items() if h not in alone}


def user_texts(conv: Conversation) -> list[str]:
    """What the user said in words (spoken turns have no text)."""
    return [t for t in conv.user_texts() if t]


def conversation_texts(conv: Conversation) -> list[str]:
    """The text a call may draw its values from: every message's text (system, user, earlier assistant
    turns, tool results); a spoken turn contributes nothing (the model heard it; there is no text)."""
    return [p.text for m in conv.messages for p in m.parts if p.type == "text" and p.text]


def judged(value: Any, spec: dict[str, Any]) -> bool:
    """Whether the user's words, not the schema, carry this value (enum members, consts and booleans are
    the schema's; they are neither checked nor snapped)."""
    return "enum" not in spec and "const" not in spec and not isinstance(value, bool)


def times_said(value: float, request: str) -> int:
    """How many times digitised `request` writes the number `value`, also as the forms `StatedValues`
    reads a number in ("25%" says 0.25, "-3" and "3 below" say -3)."""
    n = 0
    for m in _NUMBER.finditer(request):
        try:
            x = float(m.group().replace(",", ""))
        except ValueError:
            continue
        n += any(_same_number(float(value), f) for f in _read_as(x))
    return n


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def reused_number(key: str, args: dict[str, Any], tool: Tool, request: str) -> str | None:
    """The required argument of `args` whose number `key` repeats, where digitised `request` says that
    number fewer than twice, else None (module docstring). Never 0, 1, or a clock pair's hour or minute."""
    value = args.get(key)
    clock = clock_pair(tool) or ()
    if not _is_number(value) or key in clock or float(value) in _ALWAYS_STATED:
        return None
    # a required pair is found from its first key; an optional key looks at every required one
    candidates = list(args)[list(args).index(key) + 1:] if key in tool.required else list(args)
    twin = next((k for k in candidates if k != key and k not in clock and k in tool.required
                 and _is_number(args[k]) and float(args[k]) == float(value)), None)
    return twin if twin is not None and times_said(value, request) < 2 else None


def reused_string(key: str, args: dict[str, Any], tool: Tool, request: str) -> str | None:
    """The argument of `args` whose string optional `key` repeats (a required one, or one written before
    it), where `request` says that string fewer than twice, else None. A tuned model fills an optional
    string with a value it has just written: league="Manchester City" beside team="Manchester City",
    sport="Basketball" beside team="Basketball"; a request that means both says it twice ("damage set to
    primary and affected plant primary")."""
    value = args.get(key)
    if key in tool.required or not isinstance(value, str) or not value.strip():
        return None
    same = value.strip().lower()
    order = list(args)
    twin = next((k for k in order if k != key and isinstance(args[k], str) and args[k].strip().lower() == same
                 and (k in tool.required or order.index(k) < order.index(key))), None)
    said = len(re.findall(rf"(?<![\w-]){re.escape(same)}(?![\w-])", request.lower()))
    return twin if twin is not None and said < 2 else None


def _numbers_in(num: str) -> set[float]:
    """The numbers digitised text `num` writes in digits."""
    found: set[float] = set()
    for m in _NUMBER.finditer(num):
        try:
            found.add(float(m.group().replace(",", "")))
        except ValueError:
            pass
    return found


def _clock_only(num: str, clocks: Sequence[Clock]) -> set[float]:
    """The numbers digitised text `num` says inside its clock times `clocks` and nowhere else (durations
    count as elsewhere: "half an hour" states 30)."""
    inside = {float(v) for c in clocks for v in (c.hour, c.minute, c.hour % 12 or 12)}
    outside_text = num
    for c in sorted(clocks, key=lambda c: -c.start):
        outside_text = outside_text[:c.start] + " " + outside_text[c.end:]
    outside = _numbers_in(outside_text)
    minutes = parse_duration_minutes(outside_text)
    if minutes:
        outside |= {float(minutes), minutes / 60}
    return inside - outside


def unstated(value: Any, spec: dict[str, Any], stated: StatedValues) -> bool:
    """True when a scalar `value` of a parameter with schema `spec` is not said in the conversation."""
    if not judged(value, spec):
        return False
    if isinstance(value, (int, float)):
        return not stated.states_number(float(value))
    if isinstance(value, str):
        return not stated.states_string(value)
    return False                              # arrays, objects, null: not judged


@dataclass
class GroundedCall:
    call: ToolCall | None                     # None: withdrawn
    withdrawn_for: str | None = None          # the required argument that was not stated
    dropped: list[str] = field(default_factory=list)   # optional arguments taken out
    snapped: dict[str, Any] = field(default_factory=dict)   # argument -> the value as written (now the user's)
    read: dict[str, Any] = field(default_factory=dict)      # argument -> the value as written (now the time read)
    copied: dict[str, Any] = field(default_factory=dict)    # argument -> the value as written (now a copied span)
    added: dict[str, Any] = field(default_factory=dict)     # optional enum or flag left out -> the value named

    def record(self, written: ToolCall) -> dict[str, Any] | None:
        """What predictions list for this call (`written`: the call as the model wrote it), None if unchanged."""
        if self.call is None:
            return {"call": written.to_dict(), "unstated": self.withdrawn_for}
        changes = {k: v for k, v in (("dropped", self.dropped), ("snapped", self.snapped), ("read", self.read),
                                     ("copied", self.copied), ("added", self.added)) if v}
        return {"call": written.to_dict(), **changes} if changes else None


_HOUR_KEY = re.compile(r"(?:^|_)hour$", re.I)
_MINUTE_KEY = re.compile(r"(?:^|_)minute$", re.I)
_MINUTES_KEY = re.compile(r"(?:^|_)minutes$", re.I)


def _integer_keys(tool: Tool, pattern: re.Pattern[str]) -> list[str]:
    return [k for k, v in tool.properties.items()
            if pattern.search(k) and isinstance(v, dict) and v.get("type") == "integer"]


def clock_pair(tool: Tool) -> tuple[str, str] | None:
    """The tool's (hour, minute) integer parameters, when it has exactly one of each."""
    hours, minutes = _integer_keys(tool, _HOUR_KEY), _integer_keys(tool, _MINUTE_KEY)
    return (hours[0], minutes[0]) if len(hours) == 1 and len(minutes) == 1 else None


def read_times(args: dict[str, Any], tool: Tool, stated: StatedValues) -> dict[str, Any]:
    """The arguments whose values are read from the request's clock times or duration (see the module
    docstring): key -> the value read. Empty where nothing is read or the reading agrees."""
    out: dict[str, Any] = {}
    pair = clock_pair(tool)
    if pair and all(k in args for k in pair) and stated.clocks:
        hour, minute = args[pair[0]], args[pair[1]]
        clock = stated.clocks[0] if len(stated.clocks) == 1 else _pointed_at(stated.clocks, hour, minute)
        if clock is not None:
            keeps_half = not clock.explicit and _is_int(hour) and 0 <= hour <= 23 and hour % 12 == clock.hour % 12
            for key, value in ((pair[0], hour if keeps_half else clock.hour), (pair[1], clock.minute)):
                if args[key] != value:
                    out[key] = value
    times = {k: m for k, v in args.items() if isinstance(v, str) and (m := _TIME_STRING.match(v))
             and (m["p"] or asks_24h_time(tool.properties.get(k)) or twelve_hour_form(tool.properties.get(k)))}
    for key, m in times.items():       # "14:00 AM" / "5:00 AM" / "14:00" for a request that says 14:00 / 5 PM
        hour, minute = int(m["h"]), int(m["m"])
        if len(stated.clocks) == 1 and len(times) == 1:    # the one time said, as for a clock pair
            clock = stated.clocks[0]
        else:
            clock = _pointed_at([c for c in stated.clocks if _fixes_half(c)], hour, minute)
        if clock is None:
            continue
        written = hour % 12 + (12 if m["p"].lower() == "pm" else 0) if m["p"] and hour <= 12 else hour
        read_hour = clock.hour if _fixes_half(clock) or written % 12 != clock.hour % 12 else written
        if asks_24h_time(tool.properties.get(key)):
            read = f"{read_hour:02d}:{clock.minute:02d}"     # the schema's own form: "7:10 AM" -> "07:10"
        else:            # the model's own 12-hour form, or the one the schema's description shows
            sep, upper = (m["sep"], m["p"].isupper()) if m["p"] else twelve_hour_form(tool.properties.get(key))
            pm = read_hour >= 12
            period = ("PM" if pm else "AM") if upper else ("pm" if pm else "am")
            read = f"{read_hour % 12 or 12}:{clock.minute:02d}{sep}{period}"
        if read != args[key]:
            out[key] = read
    hhmm = [k for k, spec in tool.properties.items() if asks_24h_time(spec)]
    # the request's one clock time, or its one said with AM/PM (or "in the evening") beside bare numbers
    # that may be hours ("translate 3 AM from one city's time zone": 3:00, not 1:00)
    said = stated.clocks if len(stated.clocks) == 1 else [c for c in stated.clocks if c.explicit]
    if len(hhmm) == 1 and len(said) == 1 and hhmm[0] not in out:
        # no time at all where the schema asks for HH:MM ("start_time": "2026-03-19", the date beside
        # it copied twice, or "3 AM") in a request that says one clock time: that time, in the schema's form
        value, clock = args.get(hhmm[0]), said[0]
        if isinstance(value, str) and not _TIME_STRING.match(value.strip()):
            out[hhmm[0]] = f"{clock.hour:02d}:{clock.minute:02d}"
    # a parameter whose schema asks for an ISO date, or whose value is one written without its zeros
    # (the model chose the form: "2022-01-1" for "January 1, 2022" under "The date at which ...")
    date_keys = [k for k, v in args.items() if isinstance(v, str)
                 and (asks_iso_date(tool.properties.get(k)) or LOOSE_DATE.match(v))]
    for key in date_keys:
        if m := LOOSE_DATE.match(args[key]):     # an ISO date written without its zeros: "2026-01-2"
            out[key] = f"{m[1]}-{int(m[2]):02d}-{int(m[3]):02d}"
        read = date_read(out.get(key, args[key]), stated.dates, alone=len(date_keys) == 1)
        if read is not None and read != args[key]:
            out[key] = read
    if stated.duration is not None:
        for key in _integer_keys(tool, _MINUTES_KEY):
            value = args.get(key)
            # a number said only as a percent or a scale of another one is no duration of its own: 150
            # "states" 1.5 (x 100) but not "an hour and a half"
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value != stated.duration \
                    and (float(value) not in stated.read or value * 60 == stated.duration):
                out[key] = stated.duration     # unstated, or the hours of "one hour" written as minutes
    if out and len(tool.validation_errors({**args, **out})) > len(tool.validation_errors(args)):
        return {}                      # a reading the schema refuses (an hour limited to 1-12) is not used
    return out


def read_said_forms(args: dict[str, Any], tool: Tool, stated: StatedValues) -> dict[str, Any]:
    """Values the request says in a form the schema names (see the module docstring): an enum member
    the request does not say, where it says exactly one other member of that enum (and no other enum
    parameter of the tool has that member), becomes that one ("too large reason" -> "too large", not
    "damaged"); a list written into a comma-separated string parameter is joined the schema's way
    ("KO & BAC" -> "KO,BAC"); a country parameter holding a word the request does not say takes the one
    word of the request that opens with the same four letters ("Portuguese" / "Porto" -> "Portugal"); an
    arithmetic expression is spaced as the schema's example shows ("12*669*639" -> "12 * 669 * 639",
    "twenty-four / six" -> "24 / 6"); a string that runs on into another parameter's name, said so in
    the request, ends before it ("Open Water stars" for "called Open Water stars 7" -> "Open Water"). key
    -> the value read; empty where nothing changes."""
    out: dict[str, Any] = {}
    said_last = stated.said[-1] if stated.said else ""
    request = said_last.lower()
    enums = {k: [m for m in spec["enum"] if isinstance(m, str) and m.strip()]
             for k, spec in tool.properties.items() if isinstance(spec, dict) and isinstance(spec.get("enum"), list)}
    for key, members in enums.items():
        value = args.get(key)
        if not isinstance(value, str) or value not in members or says(request, value):
            continue
        said = [m for m in members if m != value and says(request, m)
                and not any(m in others for k, others in enums.items() if k != key)]
        if len(said) == 1:
            out[key] = said[0]
    for key, value in args.items():
        if isinstance(value, str) and _asks_country_name(key, tool.properties.get(key)) and len(value) >= 4 \
                and not says(request, value):
            # "Portuguese" / "Porto" for the "Portugal" the request says: the one word that opens the same way
            words = {w for w in WORD.findall(said_last)
                     if w[:1].isalpha() and w.lower()[:4] == value.lower()[:4] and w.lower() != value.lower()}
            if len(words) == 1:
                word = words.pop()
                out[key] = word if word[0].isupper() else word.capitalize()
        power = spaced_arithmetic_form(tool.properties.get(key))
        if isinstance(value, str) and power is not None:
            # "12*669*639" / "twenty-four / six" where the schema shows "15 * 23 + 47"
            written = write_arithmetic(value, power) or write_arithmetic(digitize(value), power)
            if written and written != value:
                out[key] = written
        if isinstance(value, str) and asks_comma_separated(tool.properties.get(key)):
            items = [i.strip() for i in _LIST_JOINS.split(value)]
            joined = ",".join(items)
            if len(items) > 1 and all(items) and joined != value:
                out[key] = joined
        if isinstance(value, str) and (head := before_label(value, key, args, request)) is not None:
            out[key] = head
    return out


def _asks_country_name(key: str, spec: Any) -> bool:
    """A string parameter named or described as a country, and not as a country's code ("PT") or a
    place qualified by its country ("City and country, e.g. Ghent, Belgium")."""
    if not isinstance(spec, dict) or spec.get("type", "string") != "string" or "enum" in spec:
        return False
    words = f"{key} {spec.get('description') or ''}".lower().replace("_", " ")
    return "country" in words and not re.search(r"\b(?:code|iso|alpha-?[23]|city|town|place|address)\b", words)


# how a user joins list items: "KO & BAC", "Heidi and Siobhan", "A, B and C", "A; B"
_LIST_JOINS = re.compile(r"\s*(?:,\s*and\b|;|,|&|\band\b)\s*")


# a time the model wrote as a string: "5:00 PM", "14:00 AM" (an hour past 12 is read mod 12), "07:10"
# (looked at only where the schema asks for HH:MM or shows a 12-hour example)
_TIME_STRING = re.compile(r"^(?P<h>\d{1,2}):(?P<m>\d{2})(?:(?P<sep> ?)(?P<p>[AaPp][Mm]))?$")


def _fixes_half(clock: Clock) -> bool:
    """AM/PM (or a word for it) said, or a 24-hour reading past 12 ("14:00")."""
    return clock.explicit or clock.hour >= 13


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _pointed_at(clocks: Sequence[Clock], hour: Any, minute: Any) -> Clock | None:
    """Of the request's clock times, the one a call's hour and minute point at: the same hour on a 12-hour
    dial and the same minute ("4:30" -> "4:30 PM" when the request also says "5 PM"), else the same hour
    alone ("10:00" -> "10:05 PM" beside "7 PM"), else the same minute alone where it is not :00 ("12:30"
    -> "4:30 PM" beside "5 PM": a minute past the hour is said, an hour a small model may garble); None
    unless exactly one."""
    if not (_is_int(hour) and _is_int(minute)):
        return None
    for same_hour, same_minute in ((True, True), (True, False), (False, True)):
        hits = {(c.hour, c.minute): c for c in clocks
                if (c.hour % 12 == hour % 12 or not same_hour) and (c.minute == minute or not same_minute)
                and (same_hour or minute != 0)}
        if hits:
            return next(iter(hits.values())) if len(hits) == 1 else None
    return None


def _clock_number_as_duration(key: str, value: Any, tool: Tool, stated: StatedValues) -> bool:
    """An integer `minutes` value that the conversation says only as part of a clock time: "an alarm at
    9:10 am" -> set_timer(minutes=10) is a timer no one asked for."""
    return key in _integer_keys(tool, _MINUTES_KEY) and _is_int(value) and float(value) in stated.clock_only \
        and value != stated.duration


def _whole_or_snapped(key: str, spec: dict[str, Any], value: str, stated: StatedValues) -> str:
    """A string value as the user wrote it: their whole email address or identifier where the value is a
    piece of one (`StatedValues.whole_token`), else `snap`."""
    about = f"{key} {spec.get('description', '')}".lower()
    whole = stated.whole_token(value.strip(), email="name" not in about or "mail" in about)
    return whole if whole is not None else stated.snap(value)


def copyable(value: Any) -> bool:
    """A string that may be decoded again as a copy of the request's words (runtime/copy_values.py):
    words only; values with digits keep their canonical forms ("3:15 PM", "2026-03-21")."""
    return isinstance(value, str) and bool(value.strip()) and not re.search(r"\d", value)


def ground_call(call: ToolCall, tools: Sequence[Tool], stated: StatedValues, *, read: bool = True,
                copy: Callable[[str, str, set[str]], str | None] | None = None) -> GroundedCall:
    """`call` checked against what the conversation states (see the module docstring). A call to a tool
    that is not offered is left to the format's and the constraint's checks. `read`: times (and the other
    readings: said forms, pairings, named enum members) are read from the request (`read_times`) before
    values are judged. `copy(key, value, taken)`: a required string the conversation does not state,
    decoded again as a span of the request (runtime/copy_values.py) other than the call's other strings
    (`taken`, lowercased), or None; the call is withdrawn only when that fails too."""
    tool = next((t for t in tools if t.name == call.name), None)
    if tool is None:
        return GroundedCall(call)
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    snapped: dict[str, Any] = {}
    copied: dict[str, Any] = {}
    readings = {**read_times(call.arguments, tool, stated), **read_said_forms(call.arguments, tool, stated)} \
        if read else {}
    arguments = {**call.arguments, **readings}
    if read and stated.said:                  # two values the request pairs the other way round
        pairs = read_pairs(arguments, tool, stated.request)
        arguments.update(pairs)
        readings.update(pairs)
    for key, value in arguments.items():
        spec = tool.properties.get(key) or {}
        if judged(value, spec):
            fixed = _whole_or_snapped(key, spec, value, stated) if isinstance(value, str) else \
                stated.snap_number(value) if isinstance(value, (int, float)) else value
            if isinstance(fixed, float) and isinstance(value, int) and fixed.is_integer():
                fixed = int(fixed)
            if fixed != value:
                snapped[key], value = value, fixed
        missing = unstated(value, spec, stated) or _clock_number_as_duration(key, value, tool, stated)
        if missing and key in tool.required and copy is not None and copyable(value):
            taken = {v.lower() for k, v in arguments.items() if k != key and isinstance(v, str)}
            span = copy(key, call.arguments.get(key, value), taken)
            if span is not None and not unstated(span, spec, stated) and \
                    len(tool.validation_errors({**arguments, key: span})) <= len(tool.validation_errors(arguments)):
                copied[key], value, missing = value, span, False
        if not missing and unasked_choice(key, value, tool, stated.said or [stated.text]):
            missing = True                    # an optional choice no one asked for (runtime/choices.py)
        if not missing:
            kept[key] = value
        elif key in tool.required:
            return GroundedCall(None, withdrawn_for=f"{key}={value!r}")
        else:
            dropped.append(key)
    for key in list(kept) if stated.said else []:     # one said number fills one slot
        if (twin := reused_number(key, kept, tool, stated.request)) is None:
            continue
        if key in tool.required:
            return GroundedCall(None, withdrawn_for=f"{key}={kept[key]!r} (said once, also {twin})")
        del kept[key]                         # its twin is required: never taken out here
        dropped.append(key)
    for key in list(kept) if stated.said else []:     # and one said string one slot
        if key not in tool.required and reused_string(key, kept, tool, stated.request) is not None:
            del kept[key]
            dropped.append(key)
    added: dict[str, Any] = {}
    if read and stated.said:      # an optional enum member the request names with its parameter, a flag it says
        for key in tool.properties:
            if key not in arguments and (member := named_member(key, tool, stated.said[-1])) is not None:
                kept[key] = added[key] = member
            elif (key in kept or key not in arguments) and \
                    (flag := read_flag(key, tool, stated.said[-1])) is not None and kept.get(key) is not flag:
                if key in kept:                       # written the other way round (runtime/choices.py)
                    readings[key] = kept[key] = flag
                else:
                    kept[key] = added[key] = flag
    typed = {key: declared_floats(value, tool.properties.get(key)) for key, value in kept.items()}
    # 3 == 3.0 for dict equality, so the retyping is told apart by its repr
    changed = dropped or snapped or readings or copied or added or repr(typed) != repr(kept)
    return GroundedCall(ToolCall(call.name, typed) if changed else call, dropped=dropped, snapped=snapped,
                        read={k: call.arguments[k] for k in readings}, copied=copied, added=added)
