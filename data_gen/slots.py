"""Slot types: what a placeholder in a phrasing can stand for.

A slot draws a canonical value (what goes into the call) and renders surface forms (what the
user says). The canonical value follows the playbook's normalisation: clean city names, minimal
song queries, integer hour/minute on the 24-hour clock, "3:00 PM" reminder times, integer minutes.
Kinds: `vocab` (one or more lists), `person` (names with pronouns for coreference), `reminder`
(verb or noun titles), `clock_time`, `duration`, `integer` and `expression` (arithmetic).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from toolcore.errors import ToolkitError
from toolcore.vocab import Entry, Vocabulary

from .numbers import minute_words, number_words

PRONOUNS = {"m": ("him", "his"), "f": ("her", "her"), "n": ("them", "their")}
# First words that make a reminder title a task ("call the dentist") rather than a thing ("meeting").
TASK_VERBS = set("""
add apply ask back bake book bring buy call cancel change charge check clean collect confirm cook
do drink drop email exercise feed file fill finish fix get give go grab hand head help install invite
join leave let lock look mail make meet move order pack pay pick plan post prepare print put read
record register renew reply replace reschedule return review schedule see sell send set sign start
stop study submit switch take talk text throw tidy turn unplug update visit walk wash water wish
write vacuum mow stretch meditate empty refill restock defrost iron fold sweep dust charge practice
clear backup organize organise finalize prep shop schedule wrap sort recycle drink eat call
weigh unsubscribe shred journal floss refund transfer upload download rsvp load unload
""".split())
# "clear my inbox", "back up the laptop": a task when a determiner or particle follows the first word
TASK_SECOND_WORDS = set("the my a an our your his her their some up out off in on to for back over down".split())


@dataclass
class SlotValue:
    """A drawn value. `value` is canonical; `fields` hold derived values ({t.hour}); `forms` maps a
    style ("" for plain) to the surface forms a user may say."""

    value: Any
    forms: dict[str, list[str]]
    fields: dict[str, Any] = field(default_factory=dict)
    gender: str = ""
    pronoun: bool = False          # set by the composer for a second mention of the same person
    derived: bool = False          # value is computed from speech (times, numbers), not quoted
    free_text: bool = False        # open-ended words (a message): nothing may be appended after them

    def surface(self, style: str, rng: random.Random) -> str:
        if self.pronoun and style in ("", "poss"):
            obj, poss = PRONOUNS.get(self.gender or "n", PRONOUNS["n"])
            return poss if style == "poss" else obj
        forms = self.forms.get(style) or self.forms.get("") or [str(self.value)]
        # the canonical form first and most often: people mostly say the plain name. Times, durations and
        # numbers (derived values) are said in many ways, and the written form is the easy one to copy.
        canonical_share = 0.3 if self.derived else 0.55
        return forms[0] if len(forms) == 1 or rng.random() < canonical_share else rng.choice(forms[1:])

    def field_value(self, name: str) -> Any:
        if not name:
            return self.value
        if name == "cap":
            return str(self.value)[:1].upper() + str(self.value)[1:]
        try:
            return self.fields[name]
        except KeyError:
            raise ToolkitError(f"slot has no field {name!r}", field=f"{{.{name}}}") from None


def stable_fraction(text: str) -> float:
    """A number in [0, 1) fixed by the text: used to hold out values and templates for eval splits."""
    return int(hashlib.blake2b(text.encode(), digest_size=8).hexdigest(), 16) / 2**64


def split_pool(entries: list[Entry], holdout: float, *, eval_pool: bool) -> list[Entry]:
    """Held-out entries (about `holdout` of them, chosen by hash) appear only in eval splits."""
    if holdout <= 0:
        return entries
    pool = [e for e in entries if (stable_fraction(e.value) < holdout) == eval_pool]
    return pool or entries


def pick_entry(entries: list[Entry], rng: random.Random) -> Entry:
    """An entry drawn by its `weight`; a list without weights takes the plain uniform draw (the same
    random numbers as before weights existed, so such lists' rows do not change)."""
    if all(e.weight == 1.0 for e in entries):
        return rng.choice(entries)
    return rng.choices(entries, weights=[e.weight for e in entries])[0]


class Slot:
    def __init__(self, spec: dict[str, Any], vocab: Vocabulary, holdout: float):
        self.spec = spec
        self.vocab = vocab
        self.holdout = holdout

    @property
    def free_text(self) -> bool:
        """Its values are open-ended words (a message, a reminder's title), flagged so on each SlotValue."""
        return bool(self.spec.get("free_text"))

    def draw(self, rng: random.Random, eval_pool: bool) -> SlotValue:
        raise NotImplementedError

    def contrast(self, said: SlotValue) -> SlotValue | None:
        """A near miss of a value said earlier: said the same way but for a different value (6 AM and
        6 PM, 2 minutes and 2 hours). None where the slot has none. A conversation that holds both
        shows what in the words changes the value (data_gen.compose, `contrast_share`)."""
        return None


class VocabSlot(Slot):
    def __init__(self, spec, vocab, holdout):
        super().__init__(spec, vocab, holdout)
        names = spec["vocab"] if isinstance(spec["vocab"], list) else [spec["vocab"]]
        self.pools = {flag: [split_pool(vocab[n], holdout, eval_pool=flag) for n in names] for flag in (False, True)}

    def draw(self, rng, eval_pool):
        entries = rng.choice(self.pools[eval_pool])
        e = pick_entry(entries, rng)
        return SlotValue(e.value, {"": list(e.say)}, dict(e.extra), free_text=self.free_text)


class PersonSlot(VocabSlot):
    def __init__(self, spec, vocab, holdout):
        super().__init__({"vocab": spec.get("vocab", "names")}, vocab, holdout)

    def draw(self, rng, eval_pool):
        e = pick_entry(rng.choice(self.pools[eval_pool]), rng)
        names = list(e.say)
        return SlotValue(e.value, {"": names, "poss": [f"{n}'s" for n in names]}, gender=e.extra.get("gender", "n"))


class ReminderSlot(VocabSlot):
    """`{r:to}` renders "to call the dentist" for tasks and "about the meeting" for things."""

    def __init__(self, spec, vocab, holdout):
        super().__init__({"vocab": spec.get("vocab", "reminder_titles"), "free_text": True}, vocab, holdout)

    def draw(self, rng, eval_pool):
        e = pick_entry(rng.choice(self.pools[eval_pool]), rng)
        words = e.value.lower().split()
        is_task = words[0] in TASK_VERBS or (len(words) > 1 and words[1] in TASK_SECOND_WORDS)
        says = list(e.say)
        to = [f"to {s}" for s in says] if is_task else [f"{p} {s}" for s in says for p in ("about", "about", "of")]
        return SlotValue(e.value, {"": says, "to": to}, {"task": is_task}, free_text=self.free_text)


class ClockTimeSlot(Slot):
    """A time of day. Fields: hour (0-23), minute, display ("7:30 AM"). `bare: am` lets a morning
    time be said without AM/PM ("wake me at 6"), the way people talk about alarms."""

    MINUTES = [0] * 10 + [30] * 4 + [15, 45] * 2 + [5, 10, 20, 25, 35, 40, 50, 55]

    def draw(self, rng, eval_pool):
        hours = self.spec.get("hours") or list(range(24))
        h = rng.choice(hours)
        m = rng.choice(self.MINUTES) if rng.random() < 0.9 else rng.randrange(60)
        return self.value(h, m)

    def value(self, h: int, m: int) -> SlotValue:
        return SlotValue(h * 60 + m, {"": clock_forms(h, m, bare_am=self.spec.get("bare") == "am")},
                         {"hour": h, "minute": m, "display": display_time(h, m)}, derived=True)

    def contrast(self, said):
        """The same reading on the other half of the day: 6:30 AM -> 6:30 PM (noon and midnight have none)."""
        h, m = said.fields["hour"], said.fields["minute"]
        return None if h in (0, 12) else self.value((h + 12) % 24, m)


def display_time(h: int, m: int) -> str:
    return f"{h % 12 or 12}:{m:02d} {'AM' if h < 12 else 'PM'}"


def day_part(h: int) -> str:
    if 4 <= h < 12:
        return "in the morning"
    if 12 <= h < 17:
        return "in the afternoon"
    if 17 <= h < 21:
        return "in the evening"
    return "at night"


def clock_forms(h: int, m: int, *, bare_am: bool = False) -> list[str]:
    """Unambiguous ways to say h:m (the first is the canonical written form): written ("7:30 PM",
    "19:30"), spoken ("seven thirty pm", "half past seven in the evening", "quarter to eight
    tonight"), with a part of the day instead of AM/PM ("7 in the evening"), noon and midnight.
    `bare_am`: a morning time may also come without AM/PM ("wake me at half past six")."""
    h12 = h % 12 or 12
    am = h < 12
    marks = ["AM", "am", "a.m."] if am else ["PM", "pm", "p.m."]
    digits = f"{h12}:{m:02d}"
    forms = [display_time(h, m)] + [f"{digits} {x}" for x in marks[1:]] + [f"{digits}{marks[1]}"]
    spoken_min = "" if m == 0 else " " + minute_words(m)
    forms += [f"{number_words(h12)}{spoken_min} {marks[1]}"]
    if m == 0:
        forms += [f"{h12} {x}" for x in marks] + [f"{h12}{marks[1]}", f"{number_words(h12)} o'clock {day_part(h)}"]
    if (h, m) == (12, 0):
        forms += ["noon", "12 noon", "midday", "noon today"]
    elif (h, m) == (0, 0):
        forms += ["midnight", "12 midnight"]
    elif h not in (0, 12):
        parts = [day_part(h)] + (["tonight"] if h >= 18 or h < 3 else []) + (["this evening"] if 17 <= h < 21 else [])
        for part in parts:
            forms += [f"{h12 if m == 0 else digits} {part}", f"{number_words(h12)}{spoken_min} {part}"]
            forms += [f"{said} {part}" for said in _past_to(h, m)]
    if h >= 13 or (1 <= h <= 9 and m):
        forms.append(f"{h:02d}:{m:02d}")       # the 24-hour clock: "19:30", "07:30" (not "10:30": AM or PM?)
    if bare_am and 4 <= h <= 11:
        forms += [f"{h}" if m == 0 else f"{h}:{m:02d}", f"{number_words(h)}{spoken_min}", *_past_to(h, m)]
    return forms


def _past_to(h: int, m: int) -> list[str]:
    """The analogue clock's way: "half past six", "quarter to seven", "ten past eight", "twenty to nine"."""
    named = {15: "quarter", 30: "half", 45: "quarter"}
    if m == 0:
        return []
    if m <= 30 and (m in named or m % 5 == 0):
        return [f"{named.get(m) or number_words(m)} past {number_words(h % 12 or 12)}"]
    if m > 30 and (m in named or m % 5 == 0) and (h + 1) % 12 != 0:
        return [f"{named.get(m) or number_words(60 - m)} to {number_words((h + 1) % 12 or 12)}"]
    return []


class DurationSlot(Slot):
    """A number of whole minutes. `{d}` -> "15 minutes", `{d:adj}` -> "15-minute"."""

    COMMON = [1, 2, 3, 4, 5, 5, 5, 6, 7, 8, 10, 10, 10, 12, 15, 15, 15, 20, 20, 25, 30, 30, 35, 40, 45, 45, 50,
              60, 60, 75, 90, 120]

    def draw(self, rng, eval_pool):
        n = rng.choice(self.COMMON) if rng.random() < 0.8 else rng.randint(1, 180)
        return self.value(n)

    def value(self, n: int) -> SlotValue:
        return SlotValue(n, {"": duration_forms(n), "adj": duration_adj_forms(n)}, {"minutes": n}, derived=True)

    def contrast(self, said):
        """The same number in the other unit: 2 minutes -> 2 hours, 3 hours -> 3 minutes."""
        n = said.fields["minutes"]
        if 1 <= n <= 6:
            return self.value(n * 60)
        if n % 60 == 0 and 1 <= n // 60 <= 6:
            return self.value(n // 60)
        return None


def duration_forms(n: int) -> list[str]:
    w = number_words(n)
    # not "a minute": "wake me in a minute" means soon, not 1
    forms = [f"{n} minutes", f"{w} minutes", f"{n} mins", f"{n} min"] if n != 1 else ["1 minute", "one minute"]
    if "-" in w:
        forms.append(f"{w.replace('-', ' ')} minutes")          # "twenty five minutes"
    special = {15: ["a quarter of an hour", "a quarter hour", "quarter of an hour"],
               30: ["half an hour", "a half hour", "half hour", "thirty mins"],
               45: ["three quarters of an hour", "forty five minutes"], 60: ["an hour", "one hour", "1 hour", "60 mins"],
               90: ["an hour and a half", "one and a half hours", "1.5 hours", "one hour thirty minutes"],
               120: ["two hours", "2 hours", "a couple of hours"], 150: ["two and a half hours", "2.5 hours"],
               180: ["three hours", "3 hours"]}
    forms += special.get(n, [])
    hours, rest = divmod(n, 60)
    if hours > 3 and not rest:                 # "4 hours", "five hours"
        forms += [f"{hours} hours", f"{number_words(hours)} hours"]
    if hours and rest and n not in special:   # "an hour and 20 minutes", "1 hour 20 minutes", "two hours and ten minutes"
        lead = "an hour" if hours == 1 else f"{number_words(hours)} hours"
        forms += [f"{lead} and {rest} minutes", f"{hours} hour{'s' if hours > 1 else ''} {rest} minutes",
                  f"{lead} and {number_words(rest)} minutes"]
    return forms


def duration_adj_forms(n: int) -> list[str]:
    w = number_words(n)
    forms = [f"{n}-minute", f"{n} minute", f"{w}-minute", f"{w} minute"]
    forms += {30: ["half-hour", "half hour"], 60: ["one-hour", "1-hour"], 120: ["two-hour"]}.get(n, [])
    return forms


class IntegerSlot(Slot):
    def draw(self, rng, eval_pool):
        lo, hi, step = self.spec.get("min", 1), self.spec.get("max", 10), self.spec.get("step", 1)
        n = rng.randrange(lo, hi + 1, step)
        unit = self.spec.get("unit", "")
        forms = [str(n), number_words(n)]
        if unit:
            forms = [f"{f} {unit}" for f in forms]
        return SlotValue(n, {"": forms}, derived=True)


class ExpressionSlot(Slot):
    """Arithmetic: canonical "15 * 23 + 47"; said as "15 times 23 plus 47", "15x23+47", ..."""

    SPOKEN = {"+": ["plus"], "-": ["minus"], "*": ["times", "multiplied by"], "/": ["divided by", "over"]}

    def draw(self, rng, eval_pool):
        kind = rng.random()
        if kind < 0.12:
            k, x = rng.randint(2, 30), rng.randint(1, 50)
            op = rng.choice("+-*")
            canon = f"sqrt({k * k}) {op} {x}"
            spoken = [f"the square root of {k * k} {self.op_word(op, rng)} {x}"]
        elif kind < 0.22:
            a, b = rng.randint(2, 30), rng.choice([2, 2, 2, 3])
            canon = f"{a}**{b}"
            spoken = [f"{a} squared" if b == 2 else f"{a} cubed", f"{a} to the power of {b}"]
        else:
            nums = [self.number(rng) for _ in range(rng.choice([2, 2, 2, 3]))]
            ops = [rng.choice("+-*/") for _ in nums[1:]]
            for i, op in enumerate(ops):  # keep divisions exact, as people ask them
                if op == "/":
                    nums[i + 1] = rng.randint(2, 12)
                    nums[i] = nums[i + 1] * rng.randint(2, 40)
            canon = str(nums[0]) + "".join(f" {op} {n}" for op, n in zip(ops, nums[1:]))
            spoken = [str(nums[0]) + "".join(f" {self.op_word(op, rng)} {n}" for op, n in zip(ops, nums[1:]))]
            if max(nums) < 100:
                spoken.append(number_words(nums[0]) + "".join(f" {self.op_word(op, rng)} {number_words(n)}"
                                                             for op, n in zip(ops, nums[1:])))
        written = [canon, canon.replace(" ", ""), canon.replace(" * ", " x ")]
        return SlotValue(canon, {"": list(dict.fromkeys(written + spoken))}, derived=True)

    def op_word(self, op: str, rng: random.Random) -> str:
        return rng.choice(self.SPOKEN[op])

    @staticmethod
    def number(rng: random.Random) -> int:
        return rng.choice([rng.randint(2, 20), rng.randint(10, 99), rng.randint(100, 999)])


SLOT_TYPES: dict[str, Callable[..., Slot]] = {
    "person": PersonSlot, "reminder": ReminderSlot, "clock_time": ClockTimeSlot, "duration": DurationSlot,
    "integer": IntegerSlot, "expression": ExpressionSlot,
}


def build_slot(spec: dict[str, Any], vocab: Vocabulary, holdout: float, *, where: str) -> Slot:
    if "vocab" in spec and "type" not in spec:
        return VocabSlot(spec, vocab, holdout)
    kind = spec.get("type")
    if kind not in SLOT_TYPES:
        raise ToolkitError(f"unknown slot type {kind!r}", field=where,
                           fix=f"use `vocab: <list>` or type one of {', '.join(SLOT_TYPES)}")
    return SLOT_TYPES[kind](spec, vocab, holdout)
