"""Tool libraries made programmatically, and function masking.

`build_library(size, seed)` expands the seed schemas of `blueprints.py` (one line each, ~18 domains)
into `size` tools: every seed as written, then variants of it until the size is reached, each with
another name (camelCase, a domain prefix "finance.convert_currency", a verb synonym "fetch_stock_price",
an SDK's Resource_method "StockPrice_get"),
another description opening ("Get" -> "Retrieve" / "Gets" / "Returns"), parameters reordered, an optional
one dropped or a common one added (language, limit, units, verbose), a city parameter's description
asking for a qualified value ("City and state, e.g. Austin, TX"), a list of strings taken as one
comma-separated string. So the model meets many spellings
of similar tools and has to read each schema instead of remembering a name.

`unseen_library()` is the held-out library (`unseen_blueprints.py`): `check_disjoint` fails when a
domain or a tool name (compared without case, separators or domain prefix) is in both.

`mask(tools, rng)` is Hammer's function masking: tool and parameter names become meaningless
identifiers (`fn_q3x8`, `p2`), so only the descriptions say what a tool does.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from toolcore.errors import ToolkitError
from toolcore.schema import Tool, ToolCall

from .blueprints import TRAIN_BLUEPRINTS
from .samplers import humanise
from .unseen_blueprints import UNSEEN_BLUEPRINTS

SCALARS = {"str": {"type": "string"}, "int": {"type": "integer"}, "num": {"type": "number"},
           "bool": {"type": "boolean"}, "date": {"type": "string", "format": "date"},
           "datetime": {"type": "string", "format": "date-time"}, "time": {"type": "string"},
           "email": {"type": "string", "format": "email"}, "url": {"type": "string", "format": "uri"}}
VERB_SYNONYMS = {"get": ["fetch", "retrieve", "lookup", "query"], "find": ["search", "locate", "lookup"],
                 "calculate": ["compute", "estimate"], "compute": ["calculate"], "create": ["add", "new", "make"],
                 "search": ["find", "query"], "book": ["reserve"], "send": ["dispatch", "push"],
                 "set": ["update", "configure"], "check": ["verify", "get"], "convert": ["transform"],
                 "list": ["get", "fetch"], "log": ["record", "track"], "track": ["monitor", "follow"]}
DESC_SYNONYMS = {"Get": ["Retrieve", "Fetch", "Look up", "Gets", "Returns"], "Find": ["Search for", "Locate", "Finds"],
                 "Calculate": ["Compute", "Work out", "Calculates"], "Compute": ["Calculate", "Computes"],
                 "Create": ["Make", "Add", "Creates"], "Search": ["Look for", "Searches"], "Book": ["Reserve", "Books"],
                 "Check": ["Verify", "Checks"], "Convert": ["Converts", "Translate"], "List": ["Show", "Lists"],
                 "Look": ["Looks"], "Estimate": ["Estimates", "Approximate"], "Set": ["Change", "Sets", "Adjust"]}
EXTRAS = ["?language:str/en=Language code of the response", "?limit:int/10=Maximum number of results",
          "?units:enum(metric,imperial)/metric=Unit system", "?verbose:bool/false=Include extra detail",
          "?response_format:enum(json,text)/json=Format of the response"]

# descriptions that ask for a qualified city (`samplers.city_form` reads them), as many real APIs do
CITY_FORMATS = ["City and state, e.g. Austin, TX", "The city and state (for example Denver, CO)",
                "City and state abbreviation, like Portland, OR", "Location as City, State; outside the US City, Country",
                "City and country, e.g. Lyon, France", "The city and its country, like Osaka, Japan",
                "Location in the form City, Country"]
CITY_WORDS = {"city", "location", "destination", "origin", "place", "town"}
_RANGE = re.compile(r"(int|num)\((-?\d+(?:\.\d+)?)\.\.(-?\d+(?:\.\d+)?)\)")


@dataclass
class LibTool:
    tool: Tool
    domain: str
    family: str          # the seed it was made from: variants of one family never serve as each other's distractors


# ----- the one-line notation ----------------------------------------------------------------------
def _split_top(text: str, sep: str = ";") -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch in "{(") - (ch in "})")
        if ch == sep and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [p for p in out + [cur.strip()] if p]


def _type(token: str, where: str) -> dict[str, Any]:
    token = token.strip()
    if token.endswith("[]"):
        return {"type": "array", "items": _type(token[:-2], where)}
    ranged = _RANGE.fullmatch(token)
    if ranged:      # int(1..500): a range, as APIs document quantities and scores
        spec = dict(SCALARS[ranged[1]])
        lo, hi = (float(x) if ranged[1] == "num" else int(x) for x in (ranged[2], ranged[3]))
        return {**spec, "minimum": lo, "maximum": hi}
    if token.startswith("enum(") and token.endswith(")"):
        return {"type": "string", "enum": [m.strip() for m in token[5:-1].split(",")]}
    if token.startswith("obj{") and token.endswith("}"):
        props, required = _params(token[4:-1], where)
        return {"type": "object", "properties": props, "required": required}
    if token not in SCALARS:
        raise ToolkitError(f"unknown type {token!r}", field=where, fix=f"use one of {sorted(SCALARS)}, int(1..9), enum(...), T[], obj{{...}}")
    return dict(SCALARS[token])


def _params(text: str, where: str) -> tuple[dict[str, Any], list[str]]:
    props: dict[str, Any] = {}
    required: list[str] = []
    for part in _split_top(text):
        head, _, desc = _partition_after_braces(part, "=")
        optional = head.startswith("?")
        name, _, type_token = head.lstrip("?").partition(":")
        type_token, slash, default = _partition_after_braces(type_token, "/")
        default = default if slash else None
        spec = _type(type_token, f"{where}.{name}")
        if desc:
            spec["description"] = desc.strip()
        if default is not None:
            spec["default"] = _coerce(default, spec)
        props[name.strip()] = spec
        if not optional:
            required.append(name.strip())
    return props, required


def _partition_after_braces(part: str, sep: str) -> tuple[str, str, str]:
    """str.partition at the first `sep` outside braces and parentheses."""
    depth = 0
    for i, ch in enumerate(part):
        depth += (ch in "{(") - (ch in "})")
        if ch == sep and depth == 0:
            return part[:i], sep, part[i + 1:]
    return part, "", ""


def _coerce(raw: str, spec: dict[str, Any]) -> Any:
    kind = spec.get("type")
    if kind == "integer":
        return int(raw)
    if kind == "number":
        return float(raw)
    if kind == "boolean":
        return raw == "true"
    return raw


def parse_blueprint(line: str, *, source: str = "<blueprint>") -> Tool:
    head, _, params = line.partition(" | ")
    name, _, desc = head.partition(": ")
    props, required = _params(params, name) if params else ({}, [])
    return Tool(name=name.strip(), description=desc.strip(),
                parameters={"type": "object", "properties": props, "required": required}, source=source)


# ----- variants -----------------------------------------------------------------------------------
def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def variant(tool: Tool, domain: str, k: int, rng: random.Random) -> Tool:
    """The k-th variant of a seed tool (k >= 1): another name, description opening and parameter set."""
    words = tool.name.split("_")
    style = k % 5
    if words[0] in VERB_SYNONYMS and style in (1, 3):
        words = [rng.choice(VERB_SYNONYMS[words[0]])] + words[1:]
    name = "_".join(words)
    if style == 1:
        name = camel(name)
    elif style == 2:
        name = f"{domain}.{name}"
    elif style == 3:
        name = f"{name}_v{k}" if rng.random() < 0.5 else "-".join(name.split("_"))
    elif style == 4 and len(words) > 1:
        # an SDK's Resource_method: get_stock_price -> StockPrice_get
        name = "".join(w[:1].upper() + w[1:] for w in words[1:]) + "_" + words[0]
    if name == tool.name:
        name = f"{name}_{k}"
    desc = tool.description
    first = desc.split(" ")[0]
    if first in DESC_SYNONYMS and rng.random() < 0.8:
        desc = rng.choice(DESC_SYNONYMS[first]) + desc[len(first):]
        desc = re.sub(r"^(\w+ (\w+)) \2\b", r"\1", desc)    # "Search for flights" -> "Look for flights", not "for for"
    props = dict(tool.properties)
    required = list(tool.required)
    optional = [p for p in props if p not in required]
    if optional and rng.random() < 0.4:
        props.pop(rng.choice(optional))
    if rng.random() < 0.35:
        extra_props, _ = _params(rng.choice(EXTRAS), name)
        for key, spec in extra_props.items():
            if key not in props:
                props[key] = spec
    for key, spec in props.items():
        words = set(re.split(r"[^a-z]+", key.lower()))
        said = str(spec.get("description", "")).lower()
        if spec.get("type") == "string" and "enum" not in spec and CITY_WORDS & words and "country" not in words \
                and not re.search(r"airport|code|country|state", said) and rng.random() < 0.5:
            props[key] = {**spec, "description": rng.choice(CITY_FORMATS)}
        items = spec.get("items") or {}
        if spec.get("type") == "array" and items.get("type") == "string" and "enum" not in items and rng.random() < 0.3:
            # many APIs take a list as one string: "Comma-separated list of ticker symbols"
            said = str(spec.get("description") or humanise(key))
            props[key] = {"type": "string", "description": f"Comma-separated list of {said[:1].lower() + said[1:]}"}
    keys = list(props)
    rng.shuffle(keys)
    params = {"type": "object", "properties": {k2: props[k2] for k2 in keys},
              "required": [r for r in required if r in props]}
    return Tool(name=name, description=desc, parameters=params, source=f"<library:{domain}>")


def _seeds(blueprints: dict[str, list[str]], label: str) -> list[LibTool]:
    out = []
    for domain, lines in blueprints.items():
        for line in lines:
            tool = parse_blueprint(line, source=f"<{label}:{domain}>")
            out.append(LibTool(tool, domain, tool.name))
    return out


def build_library(size: int, seed: int = 0) -> list[LibTool]:
    """`size` training tools: the seeds first (all of them when size allows), then variants, round robin."""
    seeds = _seeds(TRAIN_BLUEPRINTS, "library")
    rng = random.Random(f"library:{seed}")
    order = list(seeds)
    rng.shuffle(order)
    out = order[:size]
    names = {t.tool.name for t in out}
    k = 1
    while len(out) < size:
        for s in order:
            if len(out) >= size:
                break
            v = variant(s.tool, s.domain, k, rng)
            if v.name not in names:
                names.add(v.name)
                out.append(LibTool(v, s.domain, s.family))
        k += 1
        if k > 50:
            break
    return out


def unseen_library() -> list[LibTool]:
    return _seeds(UNSEEN_BLUEPRINTS, "unseen")


def name_key(name: str) -> str:
    """What two names share when they differ only in case, separators, a domain prefix or a version tag."""
    base = name.split(".")[-1]
    base = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base).lower()
    base = re.sub(r"_v\d+$|_\d+$", "", base)
    return re.sub(r"[^a-z0-9]", "", base)


def check_disjoint(train: list[LibTool], unseen: list[LibTool]) -> None:
    """The unseen library shares no domain and no tool name with the training library."""
    domains = {t.domain for t in train} & {t.domain for t in unseen}
    if domains:
        raise ToolkitError(f"domain {sorted(domains)[0]!r} is in both libraries", file="data_gen/schema_driven/unseen_blueprints.py",
                           fix="move its tools to a domain the training library does not have")
    keys = {name_key(t.tool.name): t.tool.name for t in train}
    clash = [(t.tool.name, keys[name_key(t.tool.name)]) for t in unseen if name_key(t.tool.name) in keys]
    if clash:
        raise ToolkitError(f"unseen tool {clash[0][0]!r} has the name of training tool {clash[0][1]!r}",
                           file="data_gen/schema_driven/unseen_blueprints.py", fix="rename the unseen tool")


# ----- masking ------------------------------------------------------------------------------------
MASK_PREFIXES = ["fn", "f", "tool", "func", "op", "api", "call"]
PARAM_PREFIXES = ["p", "arg", "x", "v", "param", "a"]
_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"


def meaningless(rng: random.Random, prefixes: list[str], taken: set[str]) -> str:
    while True:
        name = f"{rng.choice(prefixes)}_{''.join(rng.choice(_ALNUM) for _ in range(rng.randint(3, 5)))}"
        if name not in taken:
            taken.add(name)
            return name


def maskable(tool: Tool) -> bool:
    """Masking needs the descriptions to carry the meaning: the tool's and every parameter's."""
    return bool(tool.description.strip()) and all(
        isinstance(s, dict) and str(s.get("description", "")).strip() for s in tool.properties.values())


def mask(tools: list[Tool], rng: random.Random) -> tuple[list[Tool], dict[str, tuple[str, dict[str, str]]]]:
    """Masked copies of `tools` and the renaming: original name -> (new name, {param: new param})."""
    taken: set[str] = set()
    renames: dict[str, tuple[str, dict[str, str]]] = {}
    out = []
    for t in tools:
        pnames: set[str] = set()
        params = {p: meaningless(rng, PARAM_PREFIXES, pnames) for p in t.properties}
        new = meaningless(rng, MASK_PREFIXES, taken)
        schema = {"type": "object", "properties": {params[p]: s for p, s in t.properties.items()},
                  "required": [params[r] for r in t.required]}
        for key, value in t.parameters.items():
            if key not in ("type", "properties", "required"):
                schema[key] = value         # $defs and friends travel unchanged
        renames[t.name] = (new, params)
        out.append(Tool(name=new, description=t.description, parameters=schema, source=t.source))
    return out, renames


def rename_call(call: ToolCall, renames: dict[str, tuple[str, dict[str, str]]]) -> ToolCall:
    new, params = renames[call.name]
    return ToolCall(new, {params[k]: v for k, v in call.arguments.items()})
