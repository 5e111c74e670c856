"""Optional choices no one asked for: an optional enum member or boolean that the user's words do not name.

Grounding (runtime/grounding.py) judges the values a user says (strings, numbers) and leaves enum members
and booleans to the schema, since "in Fahrenheit" or "open now" carries them only by meaning. That leaves
one guess unchecked: a tuned model pads a call with optional choices nobody asked for (`connector: "Type
2"` for "find charging stations in Orlando", `include_volume: true` for "stock quotes for KO",
`filing_status: "married"` for a tax question that says nothing of it). The tool's default is what such
a request means, so the argument is dropped, as an unsaid optional string already is.

An optional choice is named when the user's words say, loosely (the first four letters of a word of four
or more, a word of three opening one of theirs: "EUR" in "euros", a shorter word or a number whole):
- a word of the enum member ("imperial", "Tesla", "hi"), or
- a word of the parameter's name ("open_now" -> "open", "now"; "includeVolume" -> "volume"), or
- a word of its description that the tool's own name and description do not also use ("Include trading
  volume" -> "trading", "volume"; not "pharmacies" for find_pharmacy's "Only pharmacies open now").
It is deliberately lenient: a choice whose words the user says in any sense is kept, because dropping a
right choice loses what the user asked for, and a wrong one kept is left as the model wrote it.

The converse, strictly: an optional enum parameter the call leaves out gets the member the request names
(`named_member`) when the request says exactly one of its members as whole words and also names the
parameter by a word of its own (its name or description, not the member's): "local climate: dry" ->
climate="dry", "the unit system being metric" -> units="metric". A member said alone ("in the US") or
two members said ("imperial ... then metric": which call gets which is the model's to say) add nothing.
Likewise an optional boolean the call leaves out gets the value the request gives it in one of the
phrasings data_gen writes flags with (toolcore.schema `FLAG_PHRASES`: "open now enabled", "verbose
turned off", "without tolls", "include volume"), naming it by its name's words or its description's
noun (`named_flag`); a request that says it both ways adds nothing.

Flags are also read more loosely, from a plain mention (`mentioned_flag`): a boolean whose name's own
words the request says, with no negation next to them, is meant on ("including human impact" ->
include_human_impact=true, "with detailed description" -> detail=true, "also apply standardization" ->
standardize=true). The name's opening verb ("include", "show", "is") and generic words ("status",
"flag") are not looked for. `read_flag` gives the value the request says (the phrasings first, then a
mention), and grounding puts it in the call even over the value the model wrote: of BFCL multiple's
misses, 5 calls of one adapter and 8 of another had such flags left out or written false (stop 51), and
the unseen-tools set one "emergency enabled" written false. A request that says the flag both ways ("emergency enabled ... then
emergency turned off", one call each) reads as neither, and the calls keep what the model wrote.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterable

from toolcore.schema import FLAG_PHRASES, Tool, description_noun

_TOKEN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# description words that say how a parameter works, not what it is about
HOW_WORDS = {
    "whether", "include", "includes", "including", "only", "with", "without", "from", "that", "this", "these",
    "those", "default", "defaults", "optional", "value", "values", "return", "returns", "should", "will", "when",
    "which", "given", "true", "false", "enable", "enabled", "disable", "flag", "option", "options", "results",
    "result", "type", "kind", "mode", "format", "level", "setting", "also", "each", "more", "less", "than",
    "into", "what", "their", "there", "them", "they", "your", "used", "using", "user", "must", "can", "may",
    "the", "and", "for", "not", "use", "one", "all", "any", "per", "set", "its", "are", "has", "have",
}


_PLAIN = {"none", "both", "other", "auto", "yes", "no", "every", "some"}


def words(text: str) -> list[str]:
    """The lowercased words of a name or phrase ("includeVolume" / "open_now" / "Type 2" split apart)."""
    return [t.lower() for t in _TOKEN.findall(text or "")]


def _said(word: str, said: set[str], prefixes: set[str]) -> bool:
    if len(word) >= 4:
        return word[:4] in prefixes
    if len(word) == 3 and not word.isdigit():       # "EUR" for "euros"
        return any(w.startswith(word) for w in said)
    return word in said


def names_choice(key: str, value: Any, tool: Tool, said_texts: Iterable[str]) -> bool:
    """Whether the user's texts name optional parameter `key` of `tool` or its value (module docstring)."""
    said = set(words(" ".join(said_texts)))
    prefixes = {w[:4] for w in said if len(w) >= 4}
    spec = tool.properties.get(key) or {}
    # a name's single letters and digits say nothing (the masked names data_gen makes: "p_4z0")
    candidates = {w for w in words(key) if len(w) > 1 and not w.isdigit()}
    if isinstance(value, str):                # a member's number does ("Type 2")
        candidates |= {w for w in words(value) if len(w) > 1 or w.isdigit()}
    about_tool = set(words(tool.name)) | set(words(tool.description))
    candidates |= {w for w in words(str(spec.get("description") or ""))
                   if len(w) > 1 and not w.isdigit() and w not in HOW_WORDS and w not in about_tool}
    return any(_said(w, said, prefixes) for w in candidates)


def says(request: str, phrase: str) -> bool:
    """Whether lowercased `request` says `phrase` as whole words ("Type 2", not "Teslas" for "Tesla")."""
    return re.search(rf"(?<![\w-]){re.escape(phrase.lower())}(?![\w-])", request) is not None


def named_member(key: str, tool: Tool, request: str) -> str | None:
    """The member of `tool`'s optional enum parameter `key` that `request` names together with the parameter
    itself (module docstring), else None."""
    spec = tool.properties.get(key)
    if key in tool.required or not isinstance(spec, dict) or not isinstance(spec.get("enum"), list):
        return None
    # a member that is an everyday word of how things are said ("all", "value", "default") names nothing
    members = [m for m in spec["enum"] if isinstance(m, str) and len(m) > 1 and m.lower() not in HOW_WORDS | _PLAIN]
    request = request.lower()
    said_members = [m for m in members if says(request, m)]
    if len(said_members) != 1:
        return None
    member_words = {w for m in members for w in words(m)}
    said = set(words(request))
    prefixes = {w[:4] for w in said if len(w) >= 4}
    about_tool = set(words(tool.name)) | set(words(tool.description))
    own = {w for w in words(key) + words(str(spec.get("description") or ""))
           if len(w) > 2 and not w.isdigit() and w not in HOW_WORDS and w not in about_tool and w not in member_words}
    return said_members[0] if any(_said(w, said, prefixes) for w in own) else None


def unasked_choice(key: str, value: Any, tool: Tool, said_texts: Iterable[str]) -> bool:
    """True for an optional enum member or boolean of `tool` that the user's texts do not name."""
    spec = tool.properties.get(key)
    if key in tool.required or not isinstance(spec, dict):
        return False
    is_member = isinstance(spec.get("enum"), list) and value in spec["enum"]
    if not (is_member or isinstance(value, bool)):
        return False
    return not names_choice(key, value, tool, said_texts)


# words that open a flag's name without saying what it is about ("include_stats", "show_details", "is_open")
_FLAG_VERBS = {"include", "includes", "is", "has", "have", "show", "with", "get", "enable", "use", "apply", "add",
               "return", "fetch", "want", "need", "do", "should", "allow", "check", "verify", "display"}
_FLAG_GENERIC = {"status", "flag", "option", "enabled", "info", "mode"}
# said just before a flag's words: not wanted ("without tolls", "has few artistic interests")
_NEGATIONS = {"no", "not", "without", "don't", "dont", "exclude", "excluding", "never", "skip", "omit", "few",
              "nor", "neither", "except", "non", "w/o", "disable"}
# said just after them: off ("emergency turned off", "verbose disabled")
_OFF = {"off", "disabled", "false", "no", "excluded", "not"}
_REQUEST_WORD = re.compile(r"[\w'/]+")


def _unverbed(key: str) -> list[str]:
    """The words of a flag's name less an opening verb: "include_human_impact" -> human, impact."""
    said = words(key)
    while len(said) > 1 and said[0] in _FLAG_VERBS:
        said = said[1:]
    return said


@lru_cache(maxsize=1024)   # every call of every request asks again for the same few tools' nouns
def _flag_pattern(noun: str, value: bool) -> re.Pattern[str]:
    noun_re = r"\s+".join(re.escape(w) for w in noun.lower().split())
    forms = [r"(?<![\w-])" + noun_re.join(re.escape(part).replace(r"\ ", r"\s+") for part in f.split("{noun}"))
             + r"(?![\w-])" for f in FLAG_PHRASES[value]]
    return re.compile("|".join(forms))


def named_flag(key: str, tool: Tool, request: str) -> bool | None:
    """The value `request` gives `tool`'s optional boolean parameter `key` in one of the flag phrasings
    (module docstring), by the parameter's name ("open_now" -> "open now") or its description's noun, and
    where neither is said, by the name less its opening verb ("without human impact" for
    include_human_impact; not first, as "without include volume" holds "include volume"); None where it
    says none, or both."""
    spec = tool.properties.get(key)
    if key in tool.required or not isinstance(spec, dict) or spec.get("type") != "boolean":
        return None
    request = request.lower()
    named = {" ".join(words(key)), description_noun(str(spec.get("description") or "")).lower()}
    for nouns in (named, {" ".join(_unverbed(key))} - named):     # a name with no opening verb: one pass
        # a noun needs a word of three letters or more, none a code: the masked names data_gen makes
        # ("p_4z0") say nothing
        nouns = {n for n in nouns if any(len(w) > 2 for w in n.split()) and not any(c.isdigit() for c in n)}
        said = {value for value in (True, False) for noun in nouns if _flag_pattern(noun, value).search(request)}
        if said:
            return said.pop() if len(said) == 1 else None
    return None


def mentioned_flag(key: str, tool: Tool, request: str) -> bool:
    """Whether `request` mentions boolean parameter `key` of `tool` as wanted (module docstring): it says
    every word of the name (less an opening verb and generic words; the first four letters of a longer
    word, a three-letter word whole) with no negation in the three words before and no "off" word after.
    A name made only of the tool's own name words, or of codes ("p_9x"), is never mentioned."""
    spec = tool.properties.get(key)
    if not isinstance(spec, dict) or spec.get("type") != "boolean":
        return False
    nouns = _unverbed(key)
    if len(nouns) > 1:
        nouns = [w for w in nouns if w not in _FLAG_GENERIC] or nouns
    nouns = [w for w in nouns if len(w) > 2 and not w.isdigit()]
    if not nouns or set(nouns) <= set(words(tool.name)):
        return False
    said = _REQUEST_WORD.findall(request.lower())
    hits = [[i for i, t in enumerate(said) if (t.startswith(w[:4]) if len(w) > 3 else t == w)] for w in nouns]
    if not all(hits):
        return False
    for i in hits[0]:                 # every time it is said: said both ways is not a mention
        after = said[i + 1:i + len(nouns) + 3]
        if _NEGATIONS & set(said[max(0, i - 3):i]) or _OFF & set(after):
            return False
    return True


def read_flag(key: str, tool: Tool, request: str) -> bool | None:
    """The value `request` gives `tool`'s boolean parameter `key`: the one its flag phrasings say
    (`named_flag`, optional flags), else true where it mentions the flag (`mentioned_flag`), else None."""
    flag = named_flag(key, tool, request)
    if flag is None and mentioned_flag(key, tool, request):
        return True
    return flag
