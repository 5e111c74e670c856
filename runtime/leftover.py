"""The parts of a request that no call made so far serves (the engine's `leftover_call_p`).

A small adapter often ends its turn one call short of a request in several parts ("check the weather in
Oslo, then also for Köln": one call, Oslo). Whether a part is left over is read from the request's words
and the calls' values, for any tools, no model needed:

- the request is cut into parts at sentence ends, commas, and the words that join requests ("and",
  "then", "also", "second", "finally", ...), never inside a number ("1,277", "one hundred and five");
- a part is served when one of its words (three letters or more, not a filler like "the", "please"; or
  two capitals: "KO"),
  numbers (spelled-out ones read as digits, a duration also in minutes: "two hours" is 120) or email
  addresses appears in any call's values; a part that states no value (below) is also served by a call
  whose tool name shares a word stem with it ("what time is it" by get_time, which takes no arguments);
- a part is left over when it is not served and states a value (a number outside its clock times and
  dates, a capitalised word after its first that no offered tool's name or schema uses, an email
  address) or names an offered tool ("look right");
- 0 and 1 state no value ("assuming initial velocity is zero"), and neither does a count of two or three
  before a plural noun the offered tools' schemas use ("the GCD of two numbers, say 36 and 48", "the
  distance between two ports"): it counts the values that follow, which the call holds.

On the validation split's predictions of stop 35's default adapter (300 cases, 26 of them ending with
fewer calls than expected) this fires on 13 of the 26 and on 14 others (their F1 summed to 2.7).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from toolcore.schema import Tool, ToolCall

from .baselines.symbolic import digitize, find_clocks, parse_duration_minutes
from .dates import find_date_spans
from .grounding import EMAIL

_JOINS = r"and\s+then|and\s+also|then|also|as\s+well\s+as|and|&"
_SPLIT = re.compile(
    r"[.;!?]+(?:\s+|$)"                                        # sentence ends
    r"|(?<!\d),(?!\d)\s*"                                      # commas, not inside "1,277"
    rf"|(?<!hundred)(?<!thousand)\s+(?:{_JOINS})\s+"           # joining words, not "one hundred and five"
    r"|\b(?:second(?:ly)?|third(?:ly)?|finally|next)\b[,:]?\s*", re.I)
# words that say nothing about which value or tool a part means
_FILLER = frozenset(
    "the a an to for of in on at me my i you your and or is it what whats with please can could would want "
    "need like know tell let find get show give set make check be do does this that there here some any up "
    "by from about as are if how much many now today just so same thing again more one also".split())
_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")      # "1,277" is one number, "(1,2)" two
_CAPITALISED = re.compile(r"(?<=\s)[A-ZÀ-Þ][\w-]*")


def _numbers(text: str) -> set[str]:
    out = set()
    for n in _NUMBER.findall(text):
        n = n.replace(",", "")
        out.add(n.rstrip("0").rstrip(".") if "." in n else n)
    return out


def _words(text: str) -> set[str]:
    low = re.sub(r"'s\b", "", text.lower())              # "Olivia's" is Olivia
    return {w for w in re.findall(r"[a-zà-ÿ]+", low) if len(w) >= 3 and w not in _FILLER}


def _stems(text: str) -> set[str]:
    return {w[:4] for w in _words(text)}


def name_words(name: str) -> set[str]:
    """The words of a tool's name ("getCellType", "get_cell_type", "cell.type"), as `_words` reads text."""
    return _words(re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").replace(".", " "))


def _name_stems(name: str) -> set[str]:
    return {w[:4] for w in name_words(name)}


def _emails(text: str) -> set[str]:
    return {e.lower() for e in EMAIL.findall(text)}


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        yield str(int(value)) if float(value).is_integer() else str(value)
    elif isinstance(value, str) and value.strip():
        yield value


_INITIALS = re.compile(r"(?<![\w-])[A-Z]{2}(?![\w-])")      # "KO", "AA", "UK": values too short for _words


def _initials(text: str, *, any_case: bool = False) -> set[str]:
    return {w.lower() for w in _INITIALS.findall(text.upper() if any_case else text)} - {"am", "pm"}  # a clock's


def _call_tokens(call: ToolCall) -> set[str]:
    out: set[str] = set()
    for s in _strings(call.arguments):
        out |= _words(s) | _numbers(digitize(s)) | _emails(s) | _initials(s, any_case=True)
    return out


def _part_tokens(part: str) -> set[str]:
    num = digitize(part)
    duration = parse_duration_minutes(num)
    return _words(part) | _numbers(num) | _emails(part) | _initials(part) | ({str(duration)} if duration else set())


def _singular(word: str) -> str:
    return word[:-3] + "y" if word.endswith("ies") else word[:-1] if word.endswith("s") else word


def schema_stems(tools: Iterable[Tool]) -> set[str]:
    """The word stems of the tools' descriptions, parameter names and parameter descriptions."""
    text = " ".join(f"{t.description} " + " ".join(f"{k} {(v or {}).get('description', '')}"
                                                   for k, v in t.properties.items()) for t in tools)
    return {_singular(w)[:4] for w in _words(re.sub(r"([a-z])([A-Z0-9])", r"\1 \2", text).replace("_", " "))}


_COUNT = re.compile(r"(?<![\w.,])[23]\s+(?:[a-z]+\s+)?([a-z]+s)\b")


def _stated_values(part: str, offered_stems: set[str], schema: set[str] = frozenset()) -> set[str]:
    """The values a part states: numbers outside its clock times and dates, capitalised words after its
    first that do not name an offered tool or a word of its schema ("on Spotify" for spotify.play, "the
    Greatest Common Divisor" for a gcd tool), email addresses; not 0 or 1, nor a count of things the
    `schema` stems name (module docstring)."""
    num = digitize(part)
    spans = [(c.start, c.end) for c in find_clocks(num)] + find_date_spans(num)
    spans += [m.span() for m in _COUNT.finditer(num) if _singular(m[1])[:4] in schema]
    for start, end in spans:
        num = num[:start] + " " * (end - start) + num[end:]
    left = set(re.findall(r"[\w-]+", num))      # "AM" of "5 AM", "June" of "June 3rd, 2025" went with their span
    capitalised = {w.lower() for w in _CAPITALISED.findall(part.strip()) if w.lower() not in _FILLER}
    named = {w for w in capitalised if w[:4] in offered_stems or _singular(w)[:4] in schema}
    return (_numbers(num) - {"0", "1"}) | ((capitalised & left) - named) | _emails(part)


_LEADING_JOIN = re.compile(rf"^(?:(?:{_JOINS})(?:\s+|$))+", re.I)


def split_parts(text: str) -> list[str]:
    """`text` cut at sentence ends, commas and joining words, each part without its leading ones."""
    parts = (_LEADING_JOIN.sub("", p.strip()) for p in _SPLIT.split(text) if p)
    return [p for p in parts if p]


def leftover_parts(text: str, calls: Sequence[ToolCall], offered: Sequence[str],
                   schema: set[str] = frozenset()) -> list[str]:
    """The parts of the request `text` that none of `calls` serves and that state a value or name one of
    the `offered` tools (see the module docstring; `schema`: the offered tools' `schema_stems`). Empty
    where there are no calls yet: whether to call at all is the model's choice."""
    if not calls:
        return []
    served_by = set().union(*(_call_tokens(c) for c in calls))
    called = set().union(*(_name_stems(c.name) for c in calls))
    offered_stems = set().union(*(_name_stems(n) for n in offered)) if offered else set()
    out = []
    for part in split_parts(text):
        values = _stated_values(part, offered_stems, schema)
        if _part_tokens(part) & served_by or (not values and _stems(part) & called):
            continue
        if values or _stems(part) & offered_stems:
            out.append(part)
    return out


def serves_left_over(text: str, calls: Sequence[ToolCall], call: ToolCall, parts: Sequence[str],
                     offered: Sequence[str], schema: set[str] = frozenset()) -> bool:
    """Whether `call`, made after `calls`, serves one of the left-over `parts` of the request `text`: a
    call the engine opened for them that serves none was made up to fill the slot (the turn's place again
    without the month: the place was the left-over part)."""
    return not set(parts) <= set(leftover_parts(text, [*calls, call], offered, schema))


def named_tools(parts: Sequence[str], tools: Sequence[Tool]) -> list[Tool]:
    """The offered `tools` that the left-over `parts` name by a word stem of the tool's name ("check the
    weather in Chicago" names get_weather; "remind me to stretch at 4" create_reminder): the tools a call
    opened for those parts is meant to use. Empty where no part names one."""
    stems = set().union(*(_stems(p) for p in parts)) if parts else set()
    return [t for t in tools if _name_stems(t.name) & stems]
