"""Values the request pairs with their parameters: two values of a call written into each other's places.

A request that names its parameters ("passport country Finland, destination Poland", "from city Caracas
to city Turku", "measured soil pH: 29.2, to 461") says which value goes where, and a small tuned model still
swaps such look-alike values (both countries, both cities, both numbers) for one call in ten on tools it
never saw. This module reads the pairing the request states, for grounding (runtime/grounding.py):

- a parameter's **anchors** are the words of its name and description (examples cut off) that the other
  parameter's name and description do not share: "passport" for passport_country beside
  destination_country, "measured" / "current" for current_ph beside target_ph, "from" for from_city;
- a value **follows** an anchor when it starts within a few words after it, the words between being the
  parameter's own words or linking words ("passport country being Poland", "first port city = Haifa",
  "green material in kilograms: 106.3");
- two values of one type are swapped only when the request pairs at least one of them with the other's
  parameter and neither with its own. Anything less (no anchor said, both pairings, a value said twice
  for two calls) leaves the call as the model wrote it.

And a string that runs on into the next parameter's name ("Open Water stars" for "called Open Water stars
7") ends before it where the request says that name followed by its value (`before_label`).
"""

from __future__ import annotations

import re
from itertools import combinations
from typing import Any

from toolcore.schema import Tool

from .baselines.symbolic import digitize
from .choices import HOW_WORDS, words as name_words

_TOKEN = re.compile(r"-?\d+(?:\.\d+)?|[a-z]+|[=:,.;!?]")
# words that link a parameter's name to its value: "set to", "being", "=", "is", "of"
_LINKS = {"is", "are", "be", "being", "was", "set", "to", "of", "as", "at", "equal", "equals", "=", ":", "the",
          "a", "an", "in", "for", "with", "should", "would", "will", "which", "that", "my", "our", "its"}
_EXAMPLE = re.compile(r"\b(?:e\.g\.|eg\b|such as|for example|for instance|like)\b.*$", re.I | re.S)
_REACH = 6          # the most words between an anchor and its value


def tokens(text: str) -> list[str]:
    """Lowercased words, numbers and the punctuation that ends a phrase (a value never reaches across it)."""
    return _TOKEN.findall(text.lower())


def _words_of(key: str, spec: Any) -> set[str]:
    description = _EXAMPLE.sub("", str(spec.get("description") or "")) if isinstance(spec, dict) else ""
    return {w for w in name_words(key) if len(w) > 1 and not w.isdigit()} | \
        {w for w in name_words(description) if len(w) > 2 and not w.isdigit()}


def _anchors(own: set[str], other: set[str], key: str) -> set[str]:
    """`own` words the other parameter does not share, content words only (a key's own word always)."""
    named = set(name_words(key))
    return {w for w in own - other if w in named or (w not in _LINKS and w not in HOW_WORDS)}


def _said_at(request: list[str], at: int, value: Any) -> bool:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(request[at]) == float(value)
        except (ValueError, IndexError):
            return False
    want = tokens(str(value))
    return bool(want) and request[at:at + len(want)] == want


def _pairings(request: list[str], value: Any, anchors: dict[str, set[str]], own: dict[str, set[str]]) -> set[str]:
    """The parameters whose anchors `value` follows in the request (within a few own or linking words);
    where it follows none, those whose anchors it comes just before ("rose as the plant name")."""
    width = len(tokens(str(value))) if isinstance(value, str) else 1
    at = [i for i in range(len(request)) if _said_at(request, i, value)]
    after, before = set(), set()
    for key, words in anchors.items():
        between = own[key] | _LINKS
        for i in at:
            j = i - 1                         # back from the value to an anchor
            while j >= 0 and i - j <= _REACH and request[j] not in words and request[j] in between:
                j -= 1
            if j >= 0 and i - j <= _REACH and request[j] in words:
                after.add(key)
            j = i + width                     # on from the value to an anchor
            while j < len(request) and j - i - width < _REACH and request[j] not in words and request[j] in between:
                j += 1
            if j < len(request) and j - i - width < _REACH and request[j] in words:
                before.add(key)
    return after or before


def _alike(a: Any, b: Any) -> bool:
    """Two values one parameter could hold as well as the other: both numbers, or both strings with
    digits or both without ("Haifa" / "Philadelphia", not "meeting" / "3:00 PM")."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b)):
        return True
    if not (isinstance(a, str) and isinstance(b, str) and a.strip() and b.strip()):
        return False
    return bool(re.search(r"\d", a)) == bool(re.search(r"\d", b))


def _echo_masked(request: list[str], description: str, least: int = 3) -> list[str]:
    """`request` with the runs of `least` or more words it copies from the tool's description blanked:
    "the filing deadline for a type of claim in a country" says what the tool does, not which value
    goes where."""
    said = tokens(description)
    out = list(request)
    i = 0
    while i < len(request):
        longest = max((n for j in range(len(said)) for n in range(1, len(said) - j + 1)
                       if request[i:i + n] == said[j:j + n]), default=0)
        if longest >= least:
            out[i:i + longest] = ["|"] * longest
            i += longest
        else:
            i += 1
    return out


def read_pairs(args: dict[str, Any], tool: Tool, request_text: str) -> dict[str, Any]:
    """key -> value where the request pairs two of the call's values the other way round (module
    docstring); empty where nothing changes. `request_text`: the request with numbers as digits."""
    request = _echo_masked(tokens(request_text), tool.description)
    out: dict[str, Any] = {}
    keys = [k for k in args if k in tool.properties]
    for p, q in combinations(keys, 2):
        vp, vq = args[p], args[q]
        if p in out or q in out or vp == vq or not _alike(vp, vq):
            continue
        own = {p: _words_of(p, tool.properties[p]), q: _words_of(q, tool.properties[q])}
        anchors = {p: _anchors(own[p], own[q], p), q: _anchors(own[q], own[p], q)}
        with_p, with_q = _pairings(request, vp, anchors, own), _pairings(request, vq, anchors, own)
        if not ((q in with_p or p in with_q) and p not in with_p and q not in with_q):
            continue
        # never into a type the schema refuses: 8.854e-12 stays out of an integer `charge1` (BFCL simple_python_41)
        if len(tool.validation_errors({**args, p: vq, q: vp})) <= len(tool.validation_errors(args)):
            out[p], out[q] = vq, vp
    return out


def before_label(value: str, key: str, args: dict[str, Any], request: str) -> str | None:
    """`value` without its last words where they are the name of another parameter the call fills and
    the request says the rest, that name and that parameter's value in a row: "Open Water stars" for
    "called Open Water stars 7" (`stars=7` beside it) -> "Open Water"; "tee time" for "about my tee
    time" and "Fallen Stars" for "Fallen Stars, 7 stars" stay. None where that is not so."""
    low = value.lower().rstrip()
    text = digitize(request)
    for other, given in args.items():
        label = " ".join(name_words(other))        # "start_time" -> "start time"
        if other == key or isinstance(given, (bool, dict, list)) or given is None or \
                not re.fullmatch(r"[a-z]{3,}(?: [a-z]+)*", label) or not low.endswith(" " + label):
            continue
        head = value.rstrip()[:len(low) - len(label) - 1].rstrip(" ,:-")
        written = f"{given:g}" if isinstance(given, (int, float)) else str(given).lower()
        # the name, then its value: "stars 7", "stars: 7", "start time of 06:15" (not "Fallen Stars, 7 stars")
        if head and written and re.search(re.escape(f"{head.lower()} {label}") + r"(?:\s*[:=]\s*|\s+)"
                                          r"(?:(?:of|is|at|to|set to|being)\s+)?" + re.escape(written), text):
            return head
    return None

