"""Values for any parameter, from its schema alone.

`classify(name, spec)` reads a parameter's JSON schema (type, enum, const, format, minimum/maximum,
items, properties, pattern) and what its name and description say ("currency", "city", "in
kilometers", "YYYY-MM-DD") into a `Kind`. `Sampler.draw(kind)` draws a valid value for it, and
`forms(kind, value)` lists how a user may say that value (a "comma-separated" string, sem "csv", is
said as the list of its items): the value itself first, then the documented
canonical forms verification accepts (a currency code said as "dollars", an ISO date as "March 14,
2026", a 24-hour time as "2:30 PM", a small integer in words, a language code by its name). The
generator says one of these forms; the verifier (`episodes.grounding_problem`) requires one of them in
the final request, so a typo, a teacher rewrite or a dropped mention can never slip through.

A schema this module cannot draw for (a free-form object, a pattern no candidate matches, `not`)
raises `Unsupported`; the caller drops an optional parameter or counts a rejection.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Mapping

from toolcore.schema import (COMMA_SEPARATED, asks_24h_time, asks_comma_separated, description_noun, flag_phrases,
                             resolve_local_ref)
from toolcore.vocab import Entry, Vocabulary

from ..numbers import number_words
from ..slots import split_pool, stable_fraction
from . import values as V

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^A-Za-z0-9]+")
# leading words of boolean names that say "whether": include_images -> "images"
BOOL_LEADS = ("is", "has", "include", "enable", "use", "show", "with", "allow", "should", "do", "only")


class Unsupported(Exception):
    """A schema the samplers cannot draw a value for; `reason` is counted in the manifest."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def words_of(name: str) -> list[str]:
    """`fromCurrency` / `from_currency` / `from-currency` -> ["from", "currency"]."""
    return [w.lower() for w in _SPLIT.split(_CAMEL.sub(" ", name)) if w]


@dataclass
class Kind:
    """What a parameter is: `sem` the semantic kind ("city", "currency", "int", "enum", ...), `noun` how
    a request calls it, `role` a direction ("from", "to", "start", "end" or ""), `unit` the unit words a
    number is said with; `items` (arrays) and `fields` + `required` (objects) describe what is inside."""

    sem: str
    noun: str
    spec: dict[str, Any]
    role: str = ""
    unit: list[str] = field(default_factory=list)
    items: "Kind | None" = None
    fields: dict[str, "Kind"] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    described: bool = False
    qualify: str = ""    # a city the description wants qualified: "state" ("Austin, TX") or "country"
    # another parameter of the same tool would be said alike ("for Poland" could be either country):
    # a mention names this one's noun, or says its direction when no other parameter alike has it
    alike: bool = False
    own_role: bool = True


def resolve(spec: Any, root: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """One concrete schema for a property: `$ref` followed, the first non-null `anyOf`/`oneOf` branch,
    `allOf` merged, a list of types narrowed to its first non-null one."""
    if not isinstance(spec, Mapping) or depth > 8:
        raise Unsupported("schema")
    spec = dict(spec)
    if "$ref" in spec:
        target = resolve_local_ref(root, spec.pop("$ref"))
        if not isinstance(target, Mapping):
            raise Unsupported("ref")
        spec = {**target, **spec}
        return resolve(spec, root, depth + 1)
    for key in ("anyOf", "oneOf"):
        if key in spec:
            branches = [b for b in spec.pop(key) if not (isinstance(b, Mapping) and b.get("type") == "null")]
            if not branches:
                raise Unsupported("null_only")
            return resolve({**spec, **branches[0]}, root, depth + 1)
    if "allOf" in spec:
        merged = {k: v for k, v in spec.items() if k != "allOf"}
        for b in spec["allOf"]:
            merged.update(resolve(b, root, depth + 1))
        return merged
    if "not" in spec:
        raise Unsupported("not")
    kind = spec.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        if not kinds:
            raise Unsupported("null_only")
        spec["type"] = kinds[0]
    return spec


def humanise(name: str) -> str:
    return " ".join(words_of(name)) or name


NAME_SEMS: list[tuple[str, set[str]]] = [
    ("postal_code", {"postal", "zip", "postcode", "zipcode"}), ("sku", {"sku"}), ("version", {"version", "release"}),
    ("promo_code", {"promo", "coupon", "voucher", "promotion", "discount"}), ("account", {"account", "iban"}),
    ("service", {"service", "microservice"}), ("host", {"host", "subdomain"}),
    ("email", {"email", "mail"}), ("url", {"url", "website", "link", "uri", "homepage"}),
    ("phone", {"phone", "telephone", "mobile"}), ("currency", {"currency", "currencies"}),
    ("language", {"language", "lang", "locale"}), ("country", {"country", "nation"}),
    ("airport", {"airport", "iata"}), ("ip", {"ip", "ipv4"}), ("address", {"address", "street"}),
    ("city", {"city", "location", "place", "destination", "origin", "town", "where", "region", "coast"}),
    ("ticker", {"ticker", "symbol", "stock"}), ("company", {"company", "organization", "organisation", "employer",
                                                            "brand", "vendor", "publisher"}),
    ("team", {"team", "club", "opponent"}), ("sport", {"sport", "league"}),
    ("song", {"song", "track"}), ("artist", {"artist", "band", "singer", "musician"}), ("genre", {"genre"}),
    ("title", {"title", "movie", "film", "book", "show", "series", "album", "podcast", "episode"}),
    ("person", {"name", "person", "contact", "recipient", "user", "author", "assignee", "attendee", "guest",
                "owner", "player", "patient", "customer", "driver", "passenger", "friend", "username", "member", "members", "students", "student"}),
    ("color", {"color", "colour"}), ("room", {"room", "zone", "area"}), ("device", {"device", "appliance"}),
    ("dish", {"dish", "recipe", "meal"}), ("cuisine", {"cuisine"}),
    ("food", {"food", "ingredient", "ingredients", "item", "topping", "toppings", "grocery", "groceries"}),
    ("element", {"element", "chemical", "compound"}), ("subject", {"subject", "course", "discipline"}),
    ("category", {"category", "department", "section", "tag"}), ("product", {"product", "article", "good"}),
    ("file", {"file", "filename", "path", "document", "attachment"}),
    ("message", {"message", "text", "body", "content", "note", "comment", "caption", "reply", "description"}),
    ("query", {"query", "keyword", "keywords", "search", "term", "terms", "topic", "question", "q"}),
    ("date", {"date", "day", "birthday", "deadline"}), ("time", {"time", "clock"}),
    ("venue", {"museum", "restaurant", "store", "shop", "venue", "station", "festival", "event",
               "hotel", "gallery"}),
    ("project", {"project", "assignment", "campaign"}), ("animal", {"species", "animal", "breed"}),
    ("symptom", {"symptom", "condition"}), ("medication", {"medication", "medicine", "drug"}),
    ("formula", {"formula"}), ("word", {"word", "verb", "term"}), ("web_domain", {"domain", "hostname"}),
    ("dna", {"dna", "sequence"}),
    ("id", {"id", "code", "number", "reference", "ref", "sku", "isbn", "serial", "key", "token"}),
]
NAME_SEMS_PERSON = dict(NAME_SEMS)["person"] - {"name"}
ROLES = {"from": {"from", "source", "origin", "departure", "base", "start", "begin", "since", "departing"},
         "to": {"to", "target", "destination", "arrival", "into", "end", "until", "quote", "arriving"}}


def _role(ws: list[str]) -> str:
    for at in (0, -1):          # the first word decides: "to_base" is a target even though "base" is a source
        for role, keys in ROLES.items():
            if ws and ws[at] in keys:
                return role
    return ""


# names of two words that say one thing: "first_name" is a given name, "time_zone" an IANA zone
COMPOUND_SEMS = [({"first", "name"}, "first_name"), ({"given", "name"}, "first_name"), ({"last", "name"}, "last_name"),
                 ({"family", "name"}, "last_name"), ({"surname"}, "last_name"), ({"time", "zone"}, "time_zone"),
                 ({"timezone"}, "time_zone"), ({"tz"}, "time_zone")]


def _sem_from_words(ws: set[str], *, description: bool = False) -> str:
    if description:      # "Assignment name", "Museum name": the word before "name" says what it is
        ws = ws - {"name", "number", "text", "time", "date", "code", "id", "key", "value", "item", "content"}
        if ws & {"city", "town"}:       # "City and country of each stop": a city, said with its country
            return "city"
    for keys, sem in COMPOUND_SEMS:
        if keys <= ws:
            return sem
    for sem, keys in NAME_SEMS:
        if ws & keys:
            return sem
    return ""


def classify(name: str, spec: Any, root: Mapping[str, Any], depth: int = 0) -> Kind:
    """The Kind of parameter `name` with schema `spec` (`root`: the tool's parameters, for `$ref`)."""
    if depth > 3:
        raise Unsupported("too_deep")
    s = resolve(spec, root)
    desc = str(s.get("description") or "")
    ws = words_of(name)
    dws = set(words_of(desc))
    noun = description_noun(desc) if desc and len(desc.split()) <= 5 else ""
    noun = noun or humanise(name)
    kind = Kind("", noun, s, role=_role(ws), described=bool(desc))
    t = s.get("type")
    if "const" in s:
        kind.sem = "const"
    elif "enum" in s:
        if not s["enum"]:
            raise Unsupported("empty_enum")
        kind.sem = "enum"
    elif t == "boolean":
        kind.sem = "bool"
        lead = [w for w in ws if w not in BOOL_LEADS] or ws
        kind.noun = " ".join(lead)
    elif t == "array":
        kind.sem = "array"
        items = s.get("items") if isinstance(s.get("items"), Mapping) else {"type": "string"}
        kind.items = classify(_singular(name), {**items, "description": items.get("description") or desc}, root, depth + 1)
        if kind.items.sem in ("array", "const", "bool"):
            raise Unsupported("array_of_" + kind.items.sem)
    elif t == "object":
        props = s.get("properties")
        if not isinstance(props, Mapping) or not props:
            raise Unsupported("free_object")
        kind.sem = "object"
        kind.required = [r for r in s.get("required", []) if r in props]
        for key, sub in props.items():
            try:
                kind.fields[key] = classify(key, sub, root, depth + 1)
            except Unsupported:
                if key in kind.required:
                    raise
    elif t in ("integer", "number"):
        kind.sem = _numeric_sem(ws, dws, t)
        if t == "number" and kind.sem in ("number", "amount") and is_unit_interval(s):
            kind.sem = "fraction"        # a share, a probability or a threshold between 0 and 1
        kind.unit = _unit_words(ws, words_of(desc)) if kind.sem != "fraction" else []
        if kind.sem == "number" and "%" in kind.unit:       # "Annual interest rate in percent"
            kind.sem = "percent"
    elif (t == "string" or t is None) and asks_comma_separated(s):
        kind.sem = "csv"             # "Comma-separated ticker symbols": a list said as a list, joined by commas
        kind.items = classify(_singular(name), {"type": "string", "description": COMMA_SEPARATED.sub("", desc)},
                              root, depth + 1)
    elif t == "string" or t is None:
        fmt = s.get("format", "")
        kind.sem = {"date": "date", "date-time": "datetime", "time": "time", "email": "email", "uri": "url",
                    "url": "url", "uuid": "uuid"}.get(fmt, "")
        if not kind.sem:
            kind.sem = _sem_from_words(set(ws)) or ("date" if "yyyy" in desc.lower() else "") \
                or ("time" if asks_24h_time({"description": desc}) else "") or _sem_from_words(dws, description=True) or "generic"
            # the last word of a compound name is its head: "event_id", "student_id" name an identifier
            # (a schema's format still wins: a `user_id` of format uuid is a uuid)
            if len(ws) > 1 and ws[-1] == "id":
                kind.sem = "id"
        if ws == ["name"] and kind.sem == "person":       # "Playlist name": a name, but not a person's
            other = _sem_from_words(dws, description=True)
            kind.sem = other if other and other != "person" else ("title" if dws - {"name", "full", "the", "of"} and
                                                                  not dws & NAME_SEMS_PERSON else "person")
        elif len(ws) > 1 and ws[-1] == "name" and kind.sem == "person":
            # "file_name" is a file's name, "race_name" a race's; "player_name" stays a person's
            other = _sem_from_words(set(ws[:-1]))
            if other != "person":
                kind.sem = other or _sem_from_words(dws, description=True) or "title"
        if kind.sem == "city":
            kind.qualify = city_form(desc)
        if kind.sem == "language" and ("code" in ws or "code" in dws or "iso" in dws):
            kind.sem = "language_code"
        if kind.sem == "currency" and not ({"code", "iso"} & (dws | set(ws))) and "name" in dws:
            kind.sem = "generic"
    else:
        raise Unsupported(f"type_{t}")
    return kind


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and len(name) > 3 else name


def list_items(kind: Kind, value: Any) -> list[Any]:
    """The items of a list-valued value: an array's elements, a comma-separated string's parts."""
    return value.split(",") if kind.sem == "csv" else list(value)


_STATE_EXAMPLE = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*, [A-Z]{2}\b")


def city_form(desc: str) -> str:
    """How a city parameter's description asks for its value: "state" ("City and state, e.g. Austin,
    TX": a US city with its state code, another with its country), "country" ("City, Country"), or ""
    (the plain name)."""
    if re.search(r"\bstates?\b|\bprovinces?\b", desc, re.I) or _STATE_EXAMPLE.search(desc):
        return "state"
    if re.search(r"\bcountry\b", desc, re.I):
        return "country"
    return ""


def qualified_city(entry: Entry, form: str) -> str | None:
    """`entry`'s value as `form` asks ("Boston, MA", "Riga, Latvia"), None when the list lacks the facts."""
    country, state = entry.extra.get("country"), entry.extra.get("state")
    if form == "state" and (state or country):
        return f"{entry.value}, {state or country}"
    if form == "country" and country:
        return f"{entry.value}, {country}"
    return None


def _numeric_sem(ws: list[str], dws: set[str], t: str) -> str:
    w = set(ws)
    if w & {"year"}:
        return "year"
    if w & {"lat", "latitude"}:
        return "latitude"
    if w & {"lon", "lng", "longitude"}:
        return "longitude"
    if w & {"percent", "percentage", "pct"} or "percentage" in dws:
        return "percent"
    if t == "number" and is_fraction_rate(w, dws):
        return "fraction"
    if w & {"limit", "count", "num", "number", "top", "k", "max", "results", "quantity", "qty", "size", "n",
            "guests", "people", "adults", "children", "rooms", "nights", "page", "servings", "rating", "stars"}:
        return "count" if t == "integer" else "amount"
    if w & {"amount", "price", "cost", "budget", "salary", "income", "value", "principal", "balance", "total",
             "revenue", "profit", "sales", "investment", "deposit", "fee", "loan", "rent"}:
        return "amount"
    return "int" if t == "integer" else "number"


# what a rate is of, in finance libraries' parameters that take it as a decimal (numpy-financial's
# `rate`: "Rate of interest as decimal (not per cent) per period"; Excel's RATE, PMT and NPV alike)
RATE_OF = {"interest", "discount", "growth", "return", "inflation", "yield", "apr", "apy", "coupon"}


def is_fraction_rate(ws: set[str], dws: set[str]) -> bool:
    """Whether a number parameter takes a share as a decimal fraction, so a request's "5%" is 0.05: its
    description says so ("as a decimal", "fraction"), or it is a rate of interest, discount, growth or
    return that says no percent ("Annual interest rate"; not "Annual interest rate in percent")."""
    if dws & {"decimal", "fraction"} and "places" not in dws:      # "as a decimal (not per cent)"
        return True
    if dws & {"percent", "cent", "places"}:
        return False
    return "rate" in ws | dws and bool((ws | dws) & RATE_OF)


def is_unit_interval(s: Mapping[str, Any]) -> bool:
    """A number that runs from 0 to 1 (`minimum` 0, `maximum` 1): a share people say as a percent ("80%")."""
    return s.get("minimum", s.get("exclusiveMinimum")) == 0 and s.get("maximum", s.get("exclusiveMaximum")) == 1


def _unit_words(ws: list[str], desc_words: list[str]) -> list[str]:
    """The unit a number is said with, from its name, else its description, read in order. A unit after
    "per" is a rate's denominator ("price per liter", "per 100 km"), and a rate ("liters per 100 km")
    is said bare: "consumption 6.5", never "6.5 km"."""
    for words in (ws, desc_words):
        for i, w in enumerate(words):
            if w not in V.UNITS or w in ("dollars", "usd", "euros") or "per" in words[max(0, i - 2):i]:
                continue
            return [] if "per" in words[i + 1:i + 2] else V.UNITS[w]
    return []


def optional_flag(kind: Kind, rng: random.Random) -> bool:
    """An optional flag a request mentions: people name a flag to change it from its default ("with
    details", "including tolls"), so mostly the other value; "on" mostly when the schema gives no default."""
    default = kind.spec.get("default")
    usual = not default if isinstance(default, bool) else True
    return usual if rng.random() < 0.8 else not usual


class Sampler:
    """Draws values; validation/test drafts (`eval_pool`) use values held out from training (by hash,
    as the built-in slots do), so the eval splits measure unseen values too."""

    def __init__(self, vocab: Vocabulary, holdout: float):
        self.holdout = holdout
        lists = {"city": "cities", "person": "names", "song": "songs", "artist": "artists", "genre": "genres",
                 "query": "search_queries", "message": "messages"}
        self.pools: dict[tuple[str, bool], list[str]] = {}
        self.alias: dict[str, list[str]] = {}
        for sem, name in lists.items():
            for flag in (False, True):
                entries = split_pool(vocab[name], holdout, eval_pool=flag)
                self.pools[sem, flag] = [e.value for e in entries]
            for e in vocab[name]:
                if sem in ("city", "person"):
                    self.alias[e.value] = [s for s in e.say if s != e.value]
        for form in ("state", "country"):       # said as written: no alias covers the qualified form
            for flag in (False, True):
                entries = split_pool(vocab["cities"], holdout, eval_pool=flag)
                self.pools["city_" + form, flag] = [q for e in entries if (q := qualified_city(e, form))]
        plain = {"country": V.COUNTRIES, "ticker": V.TICKERS, "company": V.COMPANIES, "team": V.TEAMS,
                 "sport": V.SPORTS, "title": V.TITLES, "color": V.COLORS, "room": V.ROOMS, "device": V.DEVICES,
                 "food": V.FOODS, "dish": V.DISHES, "cuisine": V.CUISINES, "element": V.ELEMENTS,
                 "subject": V.SUBJECTS, "airport": V.AIRPORTS, "address": V.STREETS, "category": V.CATEGORIES,
                 "product": V.PRODUCTS, "file": V.FILES, "currency": list(V.CURRENCIES),
                 "language": list(V.LANGUAGES), "language_code": list(V.LANGUAGES.values()), "generic": V.GENERIC,
                 "topic": V.TOPICS, "venue": V.VENUES, "project": V.PROJECTS, "animal": V.ANIMALS,
                 "symptom": V.SYMPTOMS, "medication": V.MEDICATIONS, "formula": V.FORMULAS, "word": V.WORDS,
                 "web_domain": V.WEB_DOMAINS, "ip": V.IPS, "dna": V.DNA, "first_name": V.FIRST_NAMES,
                 "last_name": V.LAST_NAMES, "postal_code": V.POSTAL_CODES, "time_zone": V.TIME_ZONES,
                 "promo_code": V.PROMO_CODES, "service": V.SERVICES, "host": V.HOSTS}
        for sem, items in plain.items():
            for flag in (False, True):
                pool = [x for x in items if (stable_fraction(x) < holdout) == flag] if holdout > 0 else items
                self.pools[sem, flag] = pool or list(items)

    def pick(self, sem: str, rng: random.Random, eval_pool: bool) -> str:
        return rng.choice(self.pools[sem, eval_pool])

    def draw_fields(self, kinds: Mapping[str, Kind], required: Any, rng: random.Random, eval_pool: bool,
                    optional_share: float, *, skip_optional_const: bool = False) -> dict[str, Any]:
        """Values for an object's fields (a call's arguments, a nested object): every required field, each
        optional one with probability optional_share (never an optional const when skip_optional_const).
        An optional field no sampler can fill is left out; a required one raises Unsupported."""
        out: dict[str, Any] = {}
        for key, kind in kinds.items():
            needed = key in required
            if not needed and ((skip_optional_const and kind.sem == "const") or rng.random() >= optional_share):
                continue
            try:
                out[key] = self.draw(kind, rng, eval_pool, optional_share) if needed or kind.sem != "bool" \
                    else optional_flag(kind, rng)
            except Unsupported:
                if needed:
                    raise
        return out

    def draw(self, kind: Kind, rng: random.Random, eval_pool: bool, optional_share: float = 0.5) -> Any:
        s, sem = kind.spec, kind.sem
        if sem == "const":
            return s["const"]
        if sem == "enum":
            return rng.choice(s["enum"])
        if sem == "bool":
            return rng.random() < 0.5
        if sem == "array":
            lo = max(1, int(s.get("minItems", 1)))
            hi = max(lo, min(int(s.get("maxItems", 3)), 3, lo + 2))
            out: list[Any] = []
            for _ in range(60):
                if len(out) >= rng.randint(lo, hi) and len(out) >= lo:
                    break
                v = self.draw(kind.items, rng, eval_pool, optional_share)   # type: ignore[arg-type]
                if v not in out:       # a user lists distinct things
                    out.append(v)
            if len(out) < lo:
                raise Unsupported("array_min_items")
            return out
        if sem == "object":
            return self.draw_fields(kind.fields, kind.required, rng, eval_pool, optional_share)
        if sem == "csv":
            items: list[str] = []
            for _ in range(30):
                if len(items) >= rng.choice([2, 2, 3]):
                    break
                v = self.string(kind.items, rng, eval_pool)       # type: ignore[arg-type]
                if v not in items and "," not in v:
                    items.append(v)
            value = ",".join(items)
            if len(items) < 2 or not _fits(value, s):
                raise Unsupported("csv")
            return value
        if s.get("type") in ("integer", "number"):
            return self.number(kind, rng)
        return self.string(kind, rng, eval_pool)

    def number(self, kind: Kind, rng: random.Random) -> int | float:
        s, sem = kind.spec, kind.sem
        integer = s.get("type") == "integer"
        lo, hi = {"year": (1990, 2026), "latitude": (-80, 80), "longitude": (-170, 170), "percent": (1, 95), "fraction": (0, 1),
                  "count": (1, 20), "amount": (5, 2000), "int": (1, 100), "number": (1, 500)}[sem]
        if "minimum" in s:
            lo = max(lo, s["minimum"]) if s["minimum"] <= hi else s["minimum"]
        if "exclusiveMinimum" in s:
            lo = max(lo, s["exclusiveMinimum"] + (1 if integer else 0.5))
        if "maximum" in s:
            hi = min(hi, s["maximum"]) if s["maximum"] >= lo else s["maximum"]
        if "exclusiveMaximum" in s:
            hi = min(hi, s["exclusiveMaximum"] - (1 if integer else 0.5))
        if lo > hi:
            raise Unsupported("empty_range")
        step = s.get("multipleOf")
        if integer or sem in ("count", "year"):
            lo_i, hi_i = int(-(-lo // 1)), int(hi // 1)
            if lo_i > hi_i:
                raise Unsupported("empty_range")
            if step and float(step).is_integer() and step > 0:
                k_lo, k_hi = -(-lo_i // int(step)), hi_i // int(step)
                if k_lo > k_hi:
                    raise Unsupported("empty_range")
                n = rng.randint(k_lo, k_hi) * int(step)
            else:
                n = rng.randint(lo_i, hi_i)
            return n if integer else float(n)
        if step:
            raise Unsupported("float_multiple_of")
        rate = "rate" in words_of(f"{kind.noun} {s.get('description', '')}")
        if sem == "fraction" and not rate:
            pct = rng.choice([rng.randrange(5, 100, 5), rng.randrange(5, 100, 5), rng.randint(1, 99)])   # "80%", "35%"
            x = pct / 100
            if _within(x, s):
                return x
            raise Unsupported("fraction_range")
        if sem == "fraction" or sem == "percent" and rate:
            # the rates people quote: whole percents mostly, halves and one decimal too ("3.5%", "4.25%")
            pct = rng.choice([rng.randint(1, 15), rng.randint(1, 15), rng.randint(1, 9) + rng.choice([0.25, 0.5, 0.75]),
                              round(rng.uniform(1, 12), 1)])
            x = round(pct / 100, 6) if sem == "fraction" else float(pct)
            if lo <= x <= hi and _within(x, s):
                return x
            raise Unsupported("rate_range")
        if sem == "amount" and "maximum" not in s and "exclusiveMaximum" not in s and rng.random() < 0.15:
            # the large round sums people say in words: "$1.2M", "250 thousand", "3.5 million"
            head = rng.choice([rng.randint(1, 9), round(rng.uniform(1.1, 9.9), 1), rng.randint(10, 950)])
            return float(round(head * rng.choice([1e3, 1e3, 1e6])))
        # amounts people say: round numbers mostly, a share with cents / one decimal
        x = rng.uniform(lo, hi)
        r = rng.random()
        x = round(x) if r < 0.5 else round(x, 1) if r < 0.8 or sem in ("latitude", "longitude") else round(x, 2)
        x = min(max(float(x), lo), hi)
        return float(x)

    def string(self, kind: Kind, rng: random.Random, eval_pool: bool) -> str:
        s, sem = kind.spec, kind.sem
        if sem == "city" and kind.qualify and self.pools.get(("city_" + kind.qualify, eval_pool)):
            sem = "city_" + kind.qualify
        for _ in range(20):
            value = self._string(sem, rng, eval_pool, kind)
            if _fits(value, s):
                return value
        if "pattern" in s:
            raise Unsupported("pattern")
        raise Unsupported("length")

    def _string(self, sem: str, rng: random.Random, eval_pool: bool, kind: Kind) -> str:
        if sem in ("date", "datetime"):
            d = date(2025, 6, 1) + timedelta(days=rng.randrange(730))
            if sem == "date":
                return d.isoformat()
            return f"{d.isoformat()}T{rng.randrange(6, 23):02d}:{rng.choice([0, 15, 30, 45]):02d}:00"
        if sem == "time":
            return f"{rng.randrange(0, 24):02d}:{rng.choice([0, 0, 15, 30, 45, 10, 20]):02d}"
        if sem == "email":
            return f"{self.pick('person', rng, eval_pool).split()[0].lower()}{rng.choice(['', '.work', '42', '_k'])}" \
                   f"@{rng.choice(V.DOMAINS)}"
        if sem == "url":
            return f"https://www.{rng.choice(V.DOMAINS)}/{rng.choice(['docs', 'blog', 'shop', 'news', 'about'])}"
        if sem == "phone":
            return f"+1-555-{rng.randrange(100, 999)}-{rng.randrange(1000, 9999)}"
        if sem == "uuid":
            return "-".join(f"{rng.getrandbits(4 * n):0{n}x}" for n in (8, 4, 4, 4, 12))
        if sem == "id":
            return rng.choice(["", "A", "ORD-", "INV-", "ID", "X"]) + str(rng.randrange(1000, 99999))
        if sem == "sku":
            return rng.choice(["SKU-", "TR-", "HX-", "BK-", "", "P"]) + str(rng.randrange(100, 99999))
        if sem == "version":
            return f"{rng.randrange(0, 6)}.{rng.randrange(0, 30)}.{rng.randrange(0, 12)}"
        if sem == "account":
            return rng.choice(["", "", "CHK-", "SAV-", "ACC-"]) + str(rng.randrange(10_000_000, 9_999_999_999))
        if sem == "query":
            return self.pick("topic", rng, eval_pool) if rng.random() < 0.4 else self.pick("query", rng, eval_pool)
        if sem == "address" and self.pools.get(("city_state", eval_pool)) and "street" not in kind.noun.lower() \
                and rng.random() < 0.5:
            # a full address goes on past its commas (a user city list without countries: street only)
            return f"{self.pick('address', rng, eval_pool)}, {self.pick('city_state', rng, eval_pool)}"
        # (no commas inside messages: measured, the model then read "saying good night, check the weather in
        # Chicago" as one message; a message is the last thing a request says, so it ran to the end)
        if (sem, eval_pool) in self.pools:
            return self.pick(sem, rng, eval_pool)
        return self.pick("generic", rng, eval_pool)


def _within(x: float, s: Mapping[str, Any]) -> bool:
    """`x` is inside the schema's numeric bounds."""
    return s.get("minimum", x) <= x <= s.get("maximum", x) and \
        s.get("exclusiveMinimum", x - 1) < x < s.get("exclusiveMaximum", x + 1)


def _fits(value: str, s: Mapping[str, Any]) -> bool:
    if "pattern" in s:
        try:
            if not re.search(s["pattern"], value):
                return False
        except re.error:
            return False
    return int(s.get("minLength", 0)) <= len(value) <= int(s.get("maxLength", 10_000))


# ----- how values are said ---------------------------------------------------------------------------
def number_forms(x: int | float) -> list[str]:
    """The written number first; thousands with commas; integers up to twenty in words too."""
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    text = str(x) if isinstance(x, int) else f"{x:.10g}"
    forms = [text]
    if abs(x) >= 1000:
        forms.append(f"{x:,}" if isinstance(x, int) else f"{x:,.10g}")
    if isinstance(x, int) and 0 <= x <= 20:
        forms.append(number_words(x))
    return forms


MONEY_WORDS = {"price", "cost", "budget", "salary", "income", "revenue", "principal", "balance", "investment",
               "dollars", "usd", "money", "loan", "payment", "sales", "profit", "fee", "rent", "deposit", "funds"}


def scaled_forms(x: int | float, *, money: bool = False) -> list[str]:
    """A large round number the way people say it: "1.2 million", "250 thousand"; money also "1.2M" /
    "250k", which `forms` says after a currency sign only ("$1.2M"): a bare "5k" is a run, "600 m"
    metres, and runtime grounding reads the short scales after a sign alone."""
    if isinstance(x, bool) or not float(x).is_integer() or abs(x) < 1000:
        return []
    for size, word, short in ((1e6, "million", "M"), (1e3, "thousand", "k")):
        if abs(x) >= size and (x * 10) % size == 0:
            head = f"{x / size:g}"
            return [f"{head} {word}", f"{head}{short}"] if money else [f"{head} {word}"]
    return []


def date_forms(iso: str) -> list[str]:
    try:
        d = date.fromisoformat(iso[:10])
    except ValueError:
        return [iso]
    m = MONTHS[d.month - 1]
    nth = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}.get(d.day, "th")
    return [iso, f"{m} {d.day}, {d.year}", f"{d.day} {m} {d.year}", f"{m} {d.day}{nth}, {d.year}",
            f"{m[:3]} {d.day}, {d.year}"]


def time_forms(hhmm: str) -> list[str]:
    try:
        h, m = int(hhmm[:2]), int(hhmm[3:5])
    except ValueError:
        return [hhmm]
    h12, mark = h % 12 or 12, ("AM" if h < 12 else "PM")
    return [hhmm, f"{h12}:{m:02d} {mark}", f"{h12}:{m:02d} {mark.lower()}"] + \
        ([f"{h12} {mark}", f"{h12} {mark.lower()}"] if m == 0 else [])


def forms(kind: Kind, value: Any, aliases: Mapping[str, list[str]] | None = None) -> list[str]:
    """Every accepted surface form of a scalar value, the written value first."""
    sem = kind.sem
    if isinstance(value, bool):
        return flag_phrases(kind.noun, value)
    if isinstance(value, (int, float)):
        base = number_forms(value) if sem != "year" else [str(int(value))]
        if sem == "percent":
            return base + [f"{base[0]}%", f"{base[0]} percent"]
        if sem == "fraction":        # a percent mostly ("4.5%" listed twice), the decimal as written sometimes
            pct = number_forms(round(value * 100, 6))[0]
            return [f"{pct}%", f"{pct} percent", f"{pct}%", base[0]]
        said = base + scaled_forms(value)
        if sem == "amount" and MONEY_WORDS & set(words_of(kind.noun) + words_of(str(kind.spec.get("description", "")))):
            said += [f"${f}" for f in base[1:2] + scaled_forms(value, money=True)]
        return said + [f"{b} {u}" for b in base[:1] for u in kind.unit]     # the unit forms last (scalar_said)
    text = str(value)
    if sem == "currency" and text in V.CURRENCIES:
        return [text] + V.CURRENCIES[text]
    if sem == "language_code":
        return [n for n, c in V.LANGUAGES.items() if c == text] + [text]
    if sem in ("date",):
        return date_forms(text)
    if sem == "datetime":
        d, _, t = text.partition("T")
        hhmm = t[:5]
        return [text, f"{d} {hhmm}"] + [f"{df} at {tf}" for df in date_forms(d)[1:3] for tf in time_forms(hhmm)[1:2]]
    if sem == "time":
        return time_forms(text)
    return [text] + list((aliases or {}).get(text, []))
