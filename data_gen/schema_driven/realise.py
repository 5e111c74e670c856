"""Requests realised from a schema: general grammar over the tool's own text, nothing per tool.

The description becomes the action ("Convert an amount of money between two currencies" -> "convert
an amount of money between two currencies"; "Gets the current stock price" -> "get the current stock
price"; a noun phrase "The factorial of a number" -> "what is the factorial of a number" / "find the
factorial of a number"), or the tool's name read as words ("convert_currency" -> "convert currency").
Each mentioned parameter becomes a short phrase built from its Kind: a direction word where its name
has one ("from USD", "to EUR"), a preposition its kind takes ("in Paris", "on March 14, 2026", "at
2:30 PM"), or its noun from the name/description ("with amount 250", "priority: high", "using 3 as
the number of guests"); with `schema_data.bare_share` an enum member or a year is sometimes said bare ("in
Celsius", "in 2020"), unless another parameter of the tool could take it. Parameters come in a random
order, free text (a message, a query) last.

Everything is returned as `surface.Piece`s with values flagged, so the shared surface machinery
(politeness, fillers, typos, casing) never touches a value.
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from typing import Any, Sequence

from toolcore.schema import flag_phrases

from ..surface import Piece, join_list
from .samplers import Kind, forms, humanise, list_items, words_of

# base-form verbs a description may open with (third person "Gets" is reduced to "get")
VERBS = set("""
add analyze analyse apply approve archive assign book calculate cancel change check classify clear close
compare compute convert count create decode delete describe detect download encode estimate evaluate
export extract fetch filter find forecast format generate get identify import list locate log look lookup
make measure merge monitor move normalize notify open order parse pause play plan post predict preview print
query rank rate read record recommend register reload remove rename render reorder report request
reserve reset resize restart restore resume retrieve return reverse round run save scan schedule score
search select send set share simulate solve sort split start stop stream submit subscribe summarize
summarise suggest switch sync tag test toggle track transfer translate turn unlock unsubscribe update
upload validate verify view vote watch lock enable disable adjust mute dim brighten water feed rent
hire invite join leave pay charge refund transcribe tokenize hash ping trace resolve quote
block buy reply enroll place advise explain conjugate work approximate change show reserve suggest
identify look predict spell draw invert scale split plan order add rate rent call dial text email
preheat take determine
""".split())
NOUN_OPENERS = ["get", "find", "look up", "tell me", "give me", "show me", "fetch"]
QUESTION_OPENERS = ["what is", "what's", "do you know", "can you tell me"]
PLURAL_OPENERS = ["what are", "do you know", "can you tell me"]
# verbs whose object a question can ask for: "Get the capital of a country" -> "what is the capital of ..."
ASKING_VERBS = {"get", "retrieve", "fetch", "find", "return", "calculate", "compute", "estimate", "determine", "look"}
_PREPOSITION = re.compile(r"\s(?:of|for|in|on|at|to|from|by|between|with|within|near|about|over|under|across)\s")
# what a description calls the thing a parameter holds: "the capital of a country", "stats of a given
# player", "the factorial of a number". The value can stand in its place ("what is the capital of
# Brazil?"), the way people ask; "an amount of money" is not such a place ("250 of money").
ANCHOR_MODS = r"(?:(?:given|specific|specified|particular|certain|provided|chosen|selected|single)\s+)?"
NOT_HEADS = {"name", "id", "ids", "code", "type", "value", "key", "data", "info", "details", "input", "string",
             "text", "the", "and", "for", "new", "query"}
# a key ending in one of these keeps its head word before the value: "an order" -> "order A16071"
LABEL_WORDS = {"id", "ids", "code", "number", "no", "num", "sku", "isbn", "ref", "reference"}
# the noun phrase ends there: "a dog walker" does not hold a dog's name, "an amount of money" no amount
PHRASE_END = (r"\s*$|\s*[,;:)]|\s+(?:in|on|at|for|to|from|by|with|within|near|over|under|between|into|during|"
              r"after|before|since|until|and|or|is|are|was|has|using|given|based|as|if|when|where)\b")
INLINE_SEMS_SKIPPED = {"bool", "const", "object", "array", "csv", "message", "enum"}
IMPERATIVE_LEADS = ["", "", "", "", "", "", "help me "]   # politeness comes from surface.wrap
STATEMENT_LEADS = ["I need to ", "I want to ", "I'd like to ", "I have to ", "I'm trying to ", "let's "]
GENERIC_MENTION = ["with {n} {v}", "{n} {v}", "{n} of {v}", "for {n} {v}", "with the {n} {v}", "{n} {v}"]
# how a form is filled in rather than how people talk: a minority style (FORM_SHARE of generic mentions)
FORM_MENTION = ["{n}: {v}", "where the {n} is {v}", "using {v} as the {n}", "{n} set to {v}", "with the {n} set to {v}",
                "{n} = {v}", "the {n} being {v}"]
FORM_SHARE = 0.2
KIND_MENTION = {
    "city": ["in {v}", "for {v}", "in {v}", "{n} {v}"], "country": ["in {v}", "for {v}", "{n} {v}"],
    "person": ["for {v}", "{n} {v}", "with {v}"], "date": ["on {v}", "for {v}", "{n} {v}"],
    "datetime": ["on {v}", "for {v}", "{n} {v}"], "time": ["at {v}", "{n} {v}"],
    "currency": ["in {v}", "{n} {v}"], "language": ["in {v}", "into {v}"], "language_code": ["in {v}", "into {v}"],
    "title": ["for {v}", "called {v}", "{n} {v}"], "query": ["about {v}", "for {v}", "on {v}", "{n} {v}"],
    "message": ["saying {v}", "that says {v}", "{n}: {v}"], "email": ["to {v}", "{n} {v}", "at {v}"],
    "room": ["in the {v}", "{n} {v}"], "airport": ["at {v}", "{n} {v}"], "team": ["for the {v}", "{n} {v}"],
}
# with `bare` (schema_data.bare_share): an enum member or a year said on its own ("in Celsius", "in 2020"), as
# people say them; only where no other parameter of the tool could take it (`tell_apart`), and the
# member is a word that names something ("2", "all" do not)
BARE_ENUM = ["{v}", "in {v}", "with {v}", "using {v}", "as {v}"]
BARE_YEAR = ["in {v}", "for {v}"]
_UNNAMING = {"all", "any", "none", "both", "default", "auto", "other", "yes", "no", "true", "false", "some"}
ROLE_MENTION = {"from": ["from {v}", "from {v}", "{n} {v}"], "to": ["to {v}", "to {v}", "into {v}", "{n} {v}"]}
ROLE_KINDS = {"city", "country", "currency", "language", "language_code", "airport", "date", "datetime", "time",
              "person", "email", "address", "generic", "int", "number", "year", "count"}
NUMERIC_SEMS = {"int", "number", "amount", "count", "percent", "fraction", "year"}
_SENTENCE = re.compile(r"(?<=[a-z0-9)])\.\s+(?=[A-Z])")


def first_sentence(desc: str) -> str:
    text = _SENTENCE.split(desc.strip())[0].strip().rstrip(".").strip()
    text = re.sub(r"\s*\([^)]*\)", "", text)                 # parentheticals are for the model, not the user
    return re.sub(r"\s+", " ", text)


def base_verb(word: str) -> str | None:
    w = word.lower()
    if w in VERBS:
        return w
    for cut, add in (("ies", "y"), ("es", ""), ("s", "")):
        if w.endswith(cut) and (w[: -len(cut)] + add) in VERBS:
            return w[: -len(cut)] + add
    return None


def actions(description: str, tool_name: str) -> tuple[list[str], list[str]]:
    """(imperative actions, question forms) a request may open with; both may be empty."""
    text = first_sentence(description)
    words = text.split()
    imperative: list[str] = []
    question: list[str] = []
    if words and len(words) <= 18:
        verb = base_verb(words[0])
        rest = " ".join(words[1:])
        rest = rest[:1].lower() + rest[1:] if rest[:2] != rest[:2].upper() else rest
        if verb == "return" and rest:
            imperative += [f"get {rest}", f"give me {rest}", f"tell me {rest}"]
        elif verb and rest:
            imperative.append(f"{verb} {rest}")
        elif verb:
            imperative.append(verb)
        elif words[0].lower() not in ("this", "use", "used", "a", "an", "it", "tool", "function", "api"):
            np = text[:1].lower() + text[1:] if not words[0].isupper() else text
            imperative += [f"{o} {np}" for o in NOUN_OPENERS]
            question += [f"{o} {np}" for o in openers(np)]
        if verb in ASKING_VERBS and rest.lower().startswith("the ") and not rest.lower().startswith("the list"):
            question += [f"{o} {rest}" for o in openers(rest)]
        elif words[0].lower() in ("a", "an"):
            np = text[:1].lower() + text[1:]
            imperative += [f"{o} {np}" for o in ("get", "find", "give me")]
    ws = [w for w in re.split(r"[^A-Za-z0-9]+", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", tool_name)) if w]
    ws = [w.lower() for w in ws]
    if len(ws) >= 2 and base_verb(ws[0]) and all(w.isalpha() for w in ws):
        imperative.append(" ".join([base_verb(ws[0]) or ws[0]] + ws[1:]))
    return imperative, question


def openers(noun_phrase: str) -> list[str]:
    """Question openers that agree with the phrase's head noun: "what are the current stats of ...",
    "what is the capital of ..."."""
    head = _PREPOSITION.split(f" {noun_phrase} ", maxsplit=1)[0].split()
    last = head[-1].lower() if head else ""
    plural = last.endswith("s") and not last.endswith(("ss", "us", "is", "ics"))
    return PLURAL_OPENERS if plural else QUESTION_OPENERS


def anchor(action: str, key: str, kind: Kind) -> tuple[int, int, str] | None:
    """Where `action` names the thing parameter `key` holds, as (start, end, what stays): "a country" in
    "get the capital of a country" -> the value replaces it; "an order" for `order_id` keeps "order"
    ("check the status of order A16071"). None where the action does not name it, or names it in a
    phrase the value cannot stand in ("an amount of money")."""
    if kind.sem in INLINE_SEMS_SKIPPED or kind.alike:
        return None
    ws = words_of(key)
    noun = _PREPOSITION.split(f" {kind.noun.lower()} ", maxsplit=1)[0].split()
    heads = {head_word(ws), head_word(noun)} - {""}
    if not heads:
        return None
    if len(noun) in (2, 3) and head_word(noun) == noun[-1]:
        heads.add(" ".join(noun))             # "a chemical formula", "an IP address", "a DNA sequence"
    alternatives = "|".join(re.escape(h).replace(r"\ ", r"\s+") for h in sorted(heads, key=len, reverse=True))
    m = re.search(rf"\b(?:a|an|the)\s+{ANCHOR_MODS}({alternatives})(?={PHRASE_END})", action, re.I)
    if m is None:
        return None
    # a label ("order A16071") or a name that is not a person's or a place's ("wishlist Birthday Ideas")
    labelled = ws and (ws[-1] in LABEL_WORDS or (ws[-1] in ("name", "title") and kind.sem in ("generic", "title", "id")))
    keep = m.group(1).split()[-1] if labelled and m.group(1).lower() not in LABEL_WORDS else ""
    return m.start(), m.end(), keep


def head_word(words: list[str]) -> str:
    """The word a name or noun is about: its last, less labels and units ("order_id" -> "order",
    "player_name" -> "player", "boat_length_m" -> "length", "date of the expense" -> "date")."""
    ws = list(words)
    while ws and (ws[-1] in LABEL_WORDS or ws[-1] == "name" or len(ws[-1]) < 3):
        ws.pop()
    return ws[-1] if ws and ws[-1] not in NOT_HEADS else ""


def inline(action: str, place: tuple[int, int, str], said: list[Piece]) -> list[Piece]:
    """`action` with the value's pieces in the place `anchor` found."""
    start, end, keep = place
    lead = action[:start] + (keep + " " if keep else "")
    out = [Piece(lead)] if lead else []
    return out + said + ([Piece(action[end:])] if action[end:] else [])


def scalar_said(kind: Kind, value: Any, rng: random.Random, aliases: dict[str, list[str]]) -> str:
    options = forms(kind, value, aliases)
    if kind.unit and isinstance(value, (int, float)) and not isinstance(value, bool) and rng.random() < 0.7:
        return rng.choice(options[-len(kind.unit):])
    # the written value most of the time: it is the easy one to copy, as in the built-in slots
    return options[0] if len(options) == 1 or rng.random() < 0.55 else rng.choice(options[1:])


def value_pieces(kind: Kind, value: Any, rng: random.Random, aliases: dict[str, list[str]]) -> list[Piece]:
    """How the user says one value: a list as "A, B and C", an object as its fields' mentions."""
    if kind.sem in ("array", "csv"):
        return join_list([value_pieces(kind.items, v, rng, aliases)   # type: ignore[arg-type]
                          for v in list_items(kind, value)], rng)
    if kind.sem == "object":
        if value and rng.random() < 0.75:
            return object_pieces(kind, value, rng, aliases)
        parts = [mention(kind.fields[k], v, rng, aliases, plain=True) for k, v in value.items()]
        parts = [p for p in parts if p]
        return join_list(parts, rng) if parts else [Piece("defaults")]
    return [Piece(scalar_said(kind, value, rng, aliases), is_slot=True, free_text=kind.sem == "message")]


def object_pieces(kind: Kind, value: dict[str, Any], rng: random.Random, aliases: dict[str, list[str]]) -> list[Piece]:
    """An object said the way people list things: an address as its lines ("12 Elm Street, Leeds, LS1 4AP"),
    an order line as "3 x SKU-118 at 12.5" or "3 of SKU-118", anything else as its main value with the rest
    in brackets ("Priya Patel (email priya@x.io, optional)"). Every value is still said: verification
    finds each one in the request."""
    keys = list(value)
    words = {k: set(words_of(k)) for k in keys}
    scalar = {k for k in keys if kind.fields.get(k) and kind.fields[k].sem not in ("object", "array", "csv", "bool", "const")}
    if scalar == set(keys) and any(words[k] & {"street", "address", "line1"} for k in keys) and \
            any(words[k] & {"city", "town"} for k in keys):
        said = [[Piece(scalar_said(kind.fields[k], value[k], rng, aliases), is_slot=True)] for k in keys
                if kind.fields[k].sem != "person"]
        names = [k for k in keys if kind.fields[k].sem == "person"]
        out = [Piece(scalar_said(kind.fields[names[0]], value[names[0]], rng, aliases), is_slot=True),
               Piece(rng.choice([", ", " at ", " - "]))] if names else []
        for i, p in enumerate(said):
            out += ([Piece(", ")] if i else []) + p
        return out
    count = next((k for k in keys if k in scalar and kind.fields[k].sem == "count"
                  and words[k] & {"quantity", "qty", "units", "count", "number", "copies", "seats", "tickets"}), None)
    heads = [k for k in keys if k in scalar and k != count and kind.fields[k].sem not in NUMERIC_SEMS
             and kind.fields[k].sem != "enum"]
    head = heads[0] if heads else None
    out: list[Piece] = []
    if head is not None:
        head_said = [Piece(scalar_said(kind.fields[head], value[head], rng, aliases), is_slot=True)]
        if count is not None:
            n = Piece(scalar_said(kind.fields[count], value[count], rng, aliases), is_slot=True)
            out = rng.choice([[n, Piece(" x ")] + head_said, [n, Piece(" of ")] + head_said,
                              [n, Piece(" units of ")] + head_said, head_said + [Piece(" x "), n]])
        else:
            out = head_said
    rest = [k for k in keys if k not in (head, count)]
    if not rest:
        return out or [Piece("defaults")]
    extra: list[list[Piece]] = []
    for k in rest:
        field = kind.fields[k]
        if field.sem in ("amount", "number") and words[k] & {"price", "cost", "rate", "fee"} and rng.random() < 0.6:
            extra.append([Piece("at "), Piece(scalar_said(field, value[k], rng, aliases), is_slot=True),
                          Piece(rng.choice([" each", " a unit", ""]))])
        elif field.sem == "enum" and not field.alike and bare_member(value[k]) and rng.random() < 0.6:
            extra.append([Piece(scalar_said(field, value[k], rng, aliases), is_slot=True)])
        else:
            extra.append(mention(field, value[k], rng, aliases, plain=True))
    extra = [e for e in extra if e]
    if not out:
        return join_list(extra, rng)
    if all(e[0].text == "at " for e in extra) or rng.random() < 0.3:
        for e in extra:
            out += [Piece(" ")] + e
        return out
    out.append(Piece(" ("))
    for i, e in enumerate(extra):
        out += ([Piece(", ")] if i else []) + e
    return out + [Piece(")")]


def tell_apart(kinds: dict[str, Kind]) -> None:
    """Mark the parameters of one tool that a bare mention could not tell apart: two of the same kind
    (passport and destination country, two cities, two currencies, numbers said with the same unit or
    with none). Their mentions then name them, and a noun two of them share ("country", "currency
    code") becomes each one's own name ("passport country", "destination country"); a direction
    ("from USD", "to EUR") still names one when no other parameter alike has that direction. Without
    this, "visa requirements for Poland, country Finland" has two right answers and the data teaches
    the model to guess."""
    groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
    members: Counter[str] = Counter()
    for kind in kinds.values():
        if kind.sem == "enum":
            members.update({str(m).lower() for m in kind.spec["enum"]})
    for key, kind in kinds.items():
        if kind.sem == "enum":       # a member another choice also has is said with its parameter's noun
            kind.alike = any(members[str(m).lower()] > 1 for m in kind.spec["enum"])
        if kind.sem in ("bool", "const", "enum", "object"):     # their values or nouns say which one
            continue
        groups[("number", *kind.unit) if kind.sem in NUMERIC_SEMS else (kind.sem,)].append(key)
    for keys in groups.values():
        if len(keys) < 2:
            continue
        nouns = Counter(kinds[k].noun.lower() for k in keys)
        roles = Counter(kinds[k].role for k in keys)
        for key in keys:
            kind = kinds[key]
            kind.alike = True
            kind.own_role = bool(kind.role) and roles[kind.role] == 1
            if nouns[kind.noun.lower()] > 1:
                kind.noun = humanise(key)


def mention(kind: Kind, value: Any, rng: random.Random, aliases: dict[str, list[str]], *,
            plain: bool = False, bare: float = 0.0, also: Sequence[Any] = ()) -> list[Piece]:
    """One parameter's phrase; [] for a const (the schema fixes it: nothing to say). A parameter said
    alike another of its tool (`tell_apart`) is named, or said with its own direction. `bare`: the share
    of an enum member's or a year's mentions that leave out its name (BARE_ENUM, BARE_YEAR). `also`:
    further values said with the first as one list ("for Paris and Rome"), one call each (`episodes.coordinable`)."""
    if kind.sem == "const":
        return []
    if kind.sem == "bool":
        return [Piece(rng.choice(flag_phrases(kind.noun, value)[:-1]), is_slot=True)]
    said = value_pieces(kind, value, rng, aliases)
    if also:
        said = join_list([said] + [value_pieces(kind, v, rng, aliases) for v in also], rng)
    named = [t for t in KIND_MENTION.get(kind.sem, []) if "{n}" in t] if kind.alike else KIND_MENTION.get(kind.sem)
    if kind.sem == "object":
        template = rng.choice(["with {n}: {v}", "{n} with {v}", "{n} ({v})"]) if not plain else "{n} {v}"
    elif kind.sem in ("array", "csv"):
        template = rng.choice([t for t in ("for {v}", "{n} {v}", "with {n} {v}", "{n}: {v}") if "{n}" in t or not kind.alike])
    elif plain:
        template = rng.choice(["{n} {v}", "{n} of {v}", "{n} {v}"])
    elif kind.role and kind.own_role and kind.sem in ROLE_KINDS and rng.random() < 0.75:
        template = rng.choice(ROLE_MENTION[kind.role])
    elif bare and kind.sem == "enum" and not kind.alike and bare_member(value) and rng.random() < bare:
        template = rng.choice(BARE_ENUM)
    elif bare and kind.sem == "year" and not kind.alike and rng.random() < bare:
        template = rng.choice(BARE_YEAR)
    elif kind.sem == "enum" and rng.random() < 0.4:
        template = rng.choice(["{v} {n}", "in {v} {n}", "{n} {v}"])
    elif named and rng.random() < 0.7:
        template = rng.choice(named)
    elif kind.unit and not kind.alike and not also and isinstance(value, (int, float)) and rng.random() < 0.6:
        template = rng.choice(["{v}", "for {v}", "of {v}"])     # the unit names it: "for 70 kg", never "for 70"
        said = [Piece(rng.choice(forms(kind, value, aliases)[-len(kind.unit):]), is_slot=True)]
    else:
        template = rng.choice(FORM_MENTION if rng.random() < FORM_SHARE else GENERIC_MENTION)
    before, _, after = template.partition("{v}")
    out = []
    if before:
        out.append(Piece(before.replace("{n}", kind.noun)))
    out += said
    if after:
        out.append(Piece(after.replace("{n}", kind.noun)))
    return out


def bare_member(value: Any) -> bool:
    """Whether enum member `value` can be said without its parameter's noun: it holds a word of three
    letters or more that names something ("Celsius", "public transit"; not "2", "all", "on")."""
    ws = re.findall(r"[A-Za-z]+", str(value))
    return any(len(w) >= 3 for w in ws) and str(value).lower() not in _UNNAMING


def arrange(mentions: list[tuple[Kind, list[Piece]]], rng: random.Random) -> list[list[Piece]]:
    """Random order, free text last (nothing may follow "saying I'm late": it would read as the message)."""
    order = list(mentions)
    rng.shuffle(order)
    order.sort(key=lambda m: m[0].sem == "message")
    return [m for _, m in order if m]


def glue(parts: list[list[Piece]], rng: random.Random) -> list[Piece]:
    """Mentions joined the way people list details: spaces, commas, "and"."""
    out: list[Piece] = []
    style = rng.random()
    for k, p in enumerate(parts):
        if k:
            if style < 0.5:
                sep = " "
            elif style < 0.8:
                sep = ", "
            else:
                sep = " and " if k == len(parts) - 1 else ", "
            if p and p[0].text.startswith("and "):
                sep = " " if sep == " and " else sep
            out.append(Piece(sep))
        out += p
    return out


def request(action: str | list[Piece], mood: str, details: list[list[Piece]], rng: random.Random
            ) -> tuple[list[Piece], str]:
    """Action (text, or pieces with a value `inline`d) + details, in one of the moods `surface.wrap`
    knows; returns (pieces, mood)."""
    act = [Piece(action)] if isinstance(action, str) else list(action)
    body = glue(details, rng)
    sep = [Piece(" ")] if body else []
    if mood == "statement":
        return [Piece(rng.choice(STATEMENT_LEADS))] + act + sep + body, "statement"
    if mood == "question":
        return act + sep + body, "question"
    if body and rng.random() < 0.15 and not any(p.free_text for p in body):
        return body + [Piece(rng.choice([", ", ": ", " - "]))] + act, "imperative"
    lead = rng.choice(IMPERATIVE_LEADS)
    return ([Piece(lead)] if lead else []) + act + sep + body, "imperative"
