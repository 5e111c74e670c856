"""Dates a request states, and the ISO date a call's value stands for (runtime/grounding.py reads
parameters that take an ISO date, `toolcore.schema.asks_iso_date`, from them)."""

from __future__ import annotations

import re
from datetime import date
from typing import Sequence

# a date with a one-digit month or day ("2026-1-02", "2026-01-2"; "2026-01-02" does not match)
LOOSE_DATE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$(?<!-\d\d-\d\d)")


_MONTH = (r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?"
          r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
# dates that say their year: "2026-03-14", "March 14, 2026", "Mar 14th 2026", "14 March 2026", "14th of March, 2026"
_DATES = [re.compile(p, re.I) for p in (r"\b(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})\b",
                                        rf"\b{_MONTH} {_DAY},? (?P<year>\d{{4}})\b",
                                        rf"\b{_DAY} (?:of )?{_MONTH},? (?P<year>\d{{4}})\b")]
_MONTH_KEYS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]


def find_dates(text: str) -> list[date]:
    """The dates `text` states with their year, in the order of the patterns, each once."""
    out: list[date] = []
    for pattern in _DATES:
        for m in pattern.finditer(text):
            month = int(m["month"]) if m.groupdict().get("month") else _MONTH_KEYS.index(m["mon"][:3].lower()) + 1
            try:
                d = date(int(m["year"]), month, int(m["day"]))
            except ValueError:
                continue
            if d not in out:
                out.append(d)
    return out


def find_date_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` states a date with its year: (start, end) of each match (runtime/leftover.py)."""
    return [m.span() for pattern in _DATES for m in pattern.finditer(text)]


def date_read(value: str, dates: Sequence[date], *, alone: bool) -> str | None:
    """The request's date that a call's ISO-date value stands for: the same date written another way
    ("January 2, 2027"), the one stated date sharing its year and its month or day ("2027-01-20" or
    "2027-02-01" for "January 2nd, 2027"), or, where the value is no date at all and the tool has no other
    date parameter, the one date the request states. None where nothing fits or it already is one."""
    if not dates or value in {d.isoformat() for d in dates}:
        return None
    written = find_dates(value)
    if len(written) != 1:
        return dates[0].isoformat() if alone and len(dates) == 1 and not written else None
    v = written[0]
    near = [d for d in dates if d == v or (d.year == v.year and {d.month, d.day} & {v.month, v.day})]
    return near[0].isoformat() if len(near) == 1 else None
