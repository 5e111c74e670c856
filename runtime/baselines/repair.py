"""Repair post-processor: generic, schema-driven fixes for any model's predicted calls.

`repair_calls(calls, tools, user_text)` returns a cleaned copy of `calls`. Every rule reads
only the offered tools' JSON schemas (names, types, descriptions) and, for one rule, the user's
text; none knows a particular benchmark. The rules, in the order they run:

1. Offered tools only: a call to a tool that is not offered is dropped.
2. Declared arguments only: an argument the tool's schema does not declare is dropped.
3. Type coercion to the declared JSON type (a value that already fits is left alone):
   - integer: "5" -> 5, "5.0" -> 5, 5.0 -> 5, "five" -> 5, and "45 degrees" -> 45 when the
     unit word appears in the parameter's name or description; an integer parameter about
     minutes also reads durations ("2 hours" -> 120, "half an hour" -> 30).
   - number: "2.5" -> 2.5, "3" -> 3.
   - boolean: "true"/"yes"/"1" -> True, "false"/"no"/"0" -> False, 1/0 -> True/False.
   - string: 5 -> "5", 5.0 -> "5", 2.5 -> "2.5", True -> "true".
   - array/object: a JSON string holding one is parsed; a lone value for an array is wrapped.
   - enum: a case/space variant of an allowed value becomes that value ("Celsius" -> "celsius").
4. String tidying (string values only):
   - surrounding whitespace and matching quotes are removed;
   - if the user text quotes the value exactly ("...", '...'), it is kept as quoted, with
     its punctuation, and the rules below are skipped;
   - leading fillers are removed: "um", "uh", "er", "please", and "just"/"like" when used as a
     filler with a comma ("like, pizza") - bare "just"/"like" start real values ("just landed",
     "Like a Prayer") so they stay; a value in Title Case is a name ("Please Please Me") and
     keeps its words (this also holds for rule 5);
   - trailing . ! ? (and stray , ; :) are removed, except the dot of an abbreviation ("D.C.").
5. Music-like parameters (decided by parameter name: song, track, tune, music, playlist,
   album, artist, or query/name/title on a tool whose name mentions play/music/song/track):
   leading "some"/"any"/"the song"/"song" and trailing "music"/"song(s)" are removed, so
   "some jazz music" -> "jazz" (a value that would become empty stays as it was).
6. Time-like string parameters (the name is or ends in "time", or the description mentions
   "time"): a clock time is rewritten to the form the description shows - "H:MM AM/PM" by
   default ("3pm" -> "3:00 PM", "15:00" -> "3:00 PM", "noon" -> "12:00 PM"), or "HH:MM" when the
   description's example is a 24-hour time. Ambiguous readings ("3:00" with no AM/PM) and
   anything that is not a plain clock time (dates, "tomorrow") are left alone.
7. De-duplication: an identical call (same name and arguments after repair) is kept once,
   first occurrence first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from toolcore.schema import Tool, ToolCall

from .symbolic import digitize, find_clocks, format_clock_12h, parse_duration_minutes, words_to_number

# ------------------------------------------------------------------------------------------------
# Rule 3: type coercion
# ------------------------------------------------------------------------------------------------

_TRUE = {"true", "yes", "y", "1", "on"}
_FALSE = {"false", "no", "n", "0", "off"}
_NUMBER_WITH_UNIT = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?)\s*([A-Za-z°%]+)?\s*$")


def _types(spec: dict[str, Any]) -> list[str]:
    t = spec.get("type", [])
    return t if isinstance(t, list) else [t]


def _fits(value: Any, json_type: str) -> bool:
    if json_type == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if json_type == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if json_type == "boolean":
        return isinstance(value, bool)
    if json_type == "string":
        return isinstance(value, str)
    if json_type == "array":
        return isinstance(value, list)
    if json_type == "object":
        return isinstance(value, dict)
    return value is None  # "null"


def _unit_matches(unit: str, name: str, spec: dict[str, Any]) -> bool:
    """ "45 degrees" fits a `degrees` parameter: the unit appears in its name or description."""
    where = f"{name} {spec.get('description', '')}".lower()
    stem = unit.lower().rstrip("s")
    return unit == "°" and "degree" in where or bool(stem) and stem in where


def _to_int(value: Any, name: str, spec: dict[str, Any]) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, str):
        return None
    text = value.strip()
    n = words_to_number(text)
    if n is not None:
        return n
    m = _NUMBER_WITH_UNIT.match(text)
    if m and float(m.group(1)).is_integer() and (not m.group(2) or _unit_matches(m.group(2), name, spec)):
        return int(float(m.group(1)))
    if "minute" in f"{name} {spec.get('description', '')}".lower():
        return parse_duration_minutes(digitize(text))
    return None


def _to_number(value: Any) -> Any:
    if not isinstance(value, str):
        return None
    text = value.strip()
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if re.fullmatch(r"[+-]?(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?", text):
        return float(text)
    return words_to_number(text)


def _to_bool(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    return None


def _to_string(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    return None


def _to_json(value: Any, want: type) -> Any:
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, want):
            return parsed
    if want is list and value is not None and not isinstance(value, (list, dict)):
        return [value]
    return None


def _coerce(value: Any, name: str, spec: dict[str, Any]) -> Any:
    """Rule 3: the value converted to the first declared type it can take (unchanged if it fits)."""
    types = _types(spec)
    if not types or any(_fits(value, t) for t in types):
        return _match_enum(value, spec)
    for t in types:
        if t == "integer":
            new = _to_int(value, name, spec)
        elif t == "number":
            new = _to_number(value)
        elif t == "boolean":
            new = _to_bool(value)
        elif t == "string":
            new = _to_string(value)
        elif t == "array":
            new = _to_json(value, list)
        elif t == "object":
            new = _to_json(value, dict)
        else:
            new = None
        if new is not None:
            if t == "array" and isinstance(spec.get("items"), dict):
                new = [_coerce(v, name, spec["items"]) for v in new]
            return _match_enum(new, spec)
    return value


def _match_enum(value: Any, spec: dict[str, Any]) -> Any:
    options = spec.get("enum")
    if not options or value in options or not isinstance(value, str):
        return value
    key = re.sub(r"[\s_-]+", " ", value.strip().lower())
    for option in options:
        if isinstance(option, str) and re.sub(r"[\s_-]+", " ", option.lower()) == key:
            return option
    return value


# ------------------------------------------------------------------------------------------------
# Rules 4-6: string tidying
# ------------------------------------------------------------------------------------------------

_QUOTE_PAIRS = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019", "`": "`"}
_QUOTED_IN_TEXT = re.compile(r"\"([^\"]+)\"|\u201c([^\u201d]+)\u201d|(?:(?<=\s)|^)'(.+?)'(?=[\s.,!?;:]|$)")
_LEADING_FILLER = re.compile(r"^(?:(?:um+|uh+|er+|erm|hmm+|please)\b[\s,]*|(?:just|like)\s*,\s*)+", re.I)
_ABBREV_END = re.compile(r"(?:\b[A-Za-z]\.){2,}$")
_MUSIC_PARAMS = {"song", "track", "tune", "song_name", "track_name", "song_title", "track_title",
                 "music", "playlist", "album", "artist"}
_MUSIC_TOOL = re.compile(r"play|music|song|track|spotify", re.I)
_MUSIC_LEAD = re.compile(r"^(?:(?:some|any|the\s+song|the\s+track|song|track)\s+)+", re.I)
_MUSIC_TAIL = re.compile(r"\s+(?:music|songs?)$", re.I)
_TIME_NAME = re.compile(r"(?:^|_)time$|^time(?:_|$)", re.I)


def _quoted_values(user_text: str | None) -> set[str]:
    if not user_text:
        return set()
    return {next(g for g in m.groups() if g is not None).strip() for m in _QUOTED_IN_TEXT.finditer(user_text)}


def _unquote(value: str) -> str:
    while len(value) >= 2 and _QUOTE_PAIRS.get(value[0]) == value[-1]:
        value = value[1:-1].strip()
    return value


def _strip_trailing_punct(value: str) -> str:
    while value and value[-1] in ".!?,;:" and not (value[-1] == "." and _ABBREV_END.search(value)):
        value = value[:-1].rstrip()
    return value


_MINOR_WORDS = {"a", "an", "the", "of", "and", "or", "in", "on", "to", "for", "by", "with", "at", "from"}


def _is_title_case(value: str) -> bool:
    """ "The Song Remains the Same": capitalised words, short function words aside."""
    words = re.findall(r"[^\W\d_]+", value)
    return (len(words) > 1 and words[0][0].isupper()
            and all(w[0].isupper() or w in _MINOR_WORDS for w in words))


def _is_music_param(tool: Tool, name: str) -> bool:
    low = name.lower()
    return low in _MUSIC_PARAMS or (low in ("query", "name", "title") and bool(_MUSIC_TOOL.search(tool.name)))


def _is_time_param(name: str, spec: dict[str, Any]) -> bool:
    return bool(_TIME_NAME.search(name)) or bool(re.search(r"\btime\b", spec.get("description", ""), re.I))


def _whole_clock(num: str, offset: int = 0) -> Any:
    """The clock time that spans all of `num` from `offset` (trailing dots aside), else None."""
    clocks = find_clocks(num)
    if len(clocks) == 1 and clocks[0].start == offset and not num[clocks[0].end:].strip(" ."):
        return clocks[0]
    return None


def _format_time(value: str, spec: dict[str, Any]) -> str:
    """Rule 6: a plain clock time in the form the parameter's description shows."""
    num = digitize(re.sub(r"^(?:at|@)\s+", "", value.strip(), flags=re.I))
    c = _whole_clock(num) or _whole_clock("at " + num, offset=3)  # "3:00" needs its "at"
    if c is None:
        return value
    desc = spec.get("description", "")
    if re.search(r"\b\d{1,2}:\d{2}\b", desc) and not re.search(r"\d\s*[AaPp]\.?[Mm]\b", desc):
        return f"{c.hour:02d}:{c.minute:02d}"  # the schema's example is a 24-hour time
    if not c.explicit and 1 <= c.hour <= 12:
        return value  # "3:00" or "3": AM or PM is anyone's guess; leave the model's answer
    return format_clock_12h(c.hour, c.minute)


def _tidy_string(value: str, tool: Tool, name: str, spec: dict[str, Any], quoted: set[str]) -> str:
    """Rules 4-6 on one string value."""
    value = _unquote(value.strip())
    if value in quoted:
        return value  # the user quoted it: keep it verbatim
    original = value
    titled = _is_title_case(value)  # "Please Please Me", "Some Nights": a name, not filler
    if not titled:
        value = _LEADING_FILLER.sub("", value)
    value = _strip_trailing_punct(value)
    if _is_music_param(tool, name) and not titled:
        trimmed = _MUSIC_TAIL.sub("", _MUSIC_LEAD.sub("", value)).strip()
        value = trimmed or value
    if _is_time_param(name, spec):
        value = _format_time(value, spec)
    return value or original


# ------------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------------


def _repair_arguments(tool: Tool, arguments: dict[str, Any], quoted: set[str]) -> dict[str, Any]:
    props = tool.properties
    out: dict[str, Any] = {}
    for name, value in arguments.items():
        if name not in props:  # rule 2
            continue
        spec = props[name] if isinstance(props[name], dict) else {}
        value = _coerce(value, name, spec)  # rule 3
        if isinstance(value, str):
            value = _match_enum(_tidy_string(value, tool, name, spec, quoted), spec)  # rules 4-6
        out[name] = value
    return out


def repair_calls(calls: Sequence[ToolCall], tools: Sequence[Tool],
                 user_text: str | None = None) -> list[ToolCall]:
    """A repaired copy of `calls` against the offered `tools` (rules in the module docstring)."""
    offered = {tool.name: tool for tool in tools}
    quoted = _quoted_values(user_text)
    repaired: list[ToolCall] = []
    seen: set[ToolCall] = set()
    for call in calls:
        tool = offered.get(call.name)
        if tool is None:  # rule 1
            continue
        fixed = ToolCall(call.name, _repair_arguments(tool, dict(call.arguments or {}), quoted))
        if fixed in seen:  # rule 7
            continue
        seen.add(fixed)
        repaired.append(fixed)
    return repaired
