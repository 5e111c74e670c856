"""Tools and tool calls: the vocabulary every stage shares.

A `Tool` is an OpenAI-style function definition (name, description, JSON-schema parameters).
A `ToolCall` is a name plus an argument dict. Argument validation uses the `jsonschema` library,
with one compiled validator per tool (validation sits on the data generator's hot path).
Schemas as they exist in the wild load: names with '-' (OpenAI) or '.' (BFCL), and properties
described by anyOf / oneOf / $ref + $defs / enum / const instead of a top-level `type`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping
from urllib.parse import unquote

import jsonschema

from .errors import ToolkitError

JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object", "null"}


@dataclass(frozen=True)
class ToolCall:
    """One call: `name(**arguments)`. Equality is exact (types matter: "10" != 10)."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": dict(self.arguments)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, where: str = "call") -> "ToolCall":
        if not isinstance(d, Mapping) or not isinstance(d.get("name"), str):
            raise ToolkitError("a call needs a string 'name'", field=where,
                               fix='write calls as {"name": ..., "arguments": {...}}')
        args = d.get("arguments", {})
        if isinstance(args, str):  # OpenAI wire format keeps arguments as a JSON string
            try:
                args = json.loads(args)
            except json.JSONDecodeError as e:
                raise ToolkitError(f"arguments are not valid JSON: {e}", field=f"{where}.arguments") from e
        if not isinstance(args, Mapping):
            raise ToolkitError("'arguments' must be an object", field=f"{where}.arguments")
        return cls(d["name"], dict(args))

    def __hash__(self) -> int:  # frozen dataclass with a dict field needs an explicit hash
        return hash((self.name, json.dumps(self.arguments, sort_keys=True, default=str)))


@dataclass
class Tool:
    """A callable tool as offered to a model.

    name: identifier the model emits. description: one line shown to the model.
    parameters: JSON schema of the arguments (type "object" with "properties" and "required").
    executor: how the tool runs: "simulated" (a result made from `result` templates) or the
      name of a registered Python executor (see `toolcore.executors`).
    generation: optional section that tells data_gen how users ask for this tool.
    source: the file it was loaded from (for error messages).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    executor: str = "simulated"
    result: dict[str, Any] | None = None
    generation: dict[str, Any] | None = None
    source: str = "<builtin>"

    def __post_init__(self) -> None:
        check_tool_schema(self.to_schema(), file=self.source)
        self._validator = jsonschema.Draft202012Validator(self.parameters)

    @property
    def properties(self) -> dict[str, Any]:
        return self.parameters.get("properties", {})

    @property
    def required(self) -> list[str]:
        return list(self.parameters.get("required", []))

    def to_schema(self) -> dict[str, Any]:
        """The plain function definition, as in the hackathon suite and OpenAI's `function`."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def to_openai(self) -> dict[str, Any]:
        return {"type": "function", "function": self.to_schema()}

    def validation_errors(self, arguments: Mapping[str, Any]) -> list[str]:
        """Every schema violation of `arguments`, as short messages naming the field."""
        errors = []
        for err in self._validator.iter_errors(dict(arguments)):
            path = ".".join(str(p) for p in err.absolute_path) or "arguments"
            errors.append(f"{self.name}.{path}: {err.message}")
        allowed = set(self.properties)
        if self.parameters.get("additionalProperties", True) is not False:
            # JSON schema allows unknown keys by default; a call with a key the tool never
            # declared is still a model error we want to count.
            errors += [f"{self.name}.{k}: unknown argument" for k in arguments if k not in allowed]
        return errors

    def validate(self, arguments: Mapping[str, Any]) -> None:
        errors = self.validation_errors(arguments)
        if errors:
            raise ToolkitError("; ".join(errors), field=self.name)

    @classmethod
    def from_schema(cls, d: Mapping[str, Any], *, source: str = "<schema>") -> "Tool":
        """Build from an OpenAI `{"type": "function", "function": {...}}` or a plain definition."""
        if d.get("type") == "function" and "function" in d:
            d = d["function"]
        check_tool_schema(d, file=source)
        return cls(name=d["name"], description=d.get("description", ""),
                   parameters=dict(d.get("parameters") or {"type": "object", "properties": {}}),
                   executor=d.get("executor", "simulated"), result=d.get("result"),
                   generation=d.get("generation"), source=source)


# OpenAI allows `^[a-zA-Z0-9_-]{1,64}$`; BFCL adds dots (`math.factorial`)
TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
# A property is valid JSON Schema without a top-level `type` when one of these says what its value is
# (Pydantic writes Optional[str] as anyOf, nested models as $ref). One with none of them accepts any
# value, which in a hand-written tool file is nearly always a forgotten or misspelt `type`.
VALUE_KEYWORDS = ("type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const", "not")
# Python's names for JSON types, as people (and BFCL) write them: the fix names the JSON word
PYTHON_TYPE_NAMES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "dict": "object",
                     "list": "array", "tuple": "array", "NoneType": "null"}
# keywords whose value is a map of subschemas; every other key of SUBSCHEMA_KEYS holds one or a list
SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SUBSCHEMA_KEYS = SUBSCHEMA_MAPS + ("items", "prefixItems", "additionalItems", "additionalProperties", "contains",
                                   "anyOf", "oneOf", "allOf", "not", "if", "then", "else", "propertyNames",
                                   "unevaluatedItems", "unevaluatedProperties")


def asks_24h_time(spec: Any) -> bool:
    """A string parameter that takes a 24-hour "HH:MM" time: `format: time`, or a description that says
    HH:MM. data_gen writes such values as "07:10" and the runtime reads them so (runtime/grounding.py)."""
    return isinstance(spec, Mapping) and (spec.get("format") == "time" or "hh:mm" in str(spec.get("description") or "").lower())


# a 12-hour example in a description: "Time for the reminder (e.g. 3:00 PM)", "h:mm AM/PM"
_TWELVE_HOUR = re.compile(r"\b\d{1,2}:\d{2}( ?)([AP]M|[ap]m)\b|\bh:mm( ?)(AM/PM|am/pm)\b")


def twelve_hour_form(spec: Any) -> tuple[str, bool] | None:
    """How a string parameter whose description shows a 12-hour time writes it: (the separator before
    the period, whether the period is upper case), e.g. (" ", True) for "(e.g. 3:00 PM)"; None for a
    parameter that shows none. The runtime writes a time the model gave in 24-hour form ("14:00") so
    (runtime/grounding.py)."""
    if not isinstance(spec, Mapping) or asks_24h_time(spec):
        return None
    m = _TWELVE_HOUR.search(str(spec.get("description") or ""))
    if m is None:
        return None
    sep, period = (m[1], m[2]) if m[2] else (m[3], m[4])
    return sep, period[0].isupper()


# "Comma-separated ticker symbols", "list of emails, separated by commas": a list in one string
COMMA_SEPARATED = re.compile(r"\b(?:a |as a )?comma[- ]separated(?: list of)?|,? separated by commas", re.I)


def asks_comma_separated(spec: Any) -> bool:
    """A string parameter that takes a list as one comma-separated string ("AAPL,TSLA"): data_gen says
    it as a list ("AAPL and TSLA") and the runtime joins a list the model wrote so (runtime/grounding.py)."""
    return isinstance(spec, Mapping) and spec.get("type", "string") == "string" and "enum" not in spec \
        and bool(COMMA_SEPARATED.search(str(spec.get("description") or "")))


# an arithmetic example in a description: "Arithmetic expression, e.g. 15 * 23 + 47 or sqrt(144) + 2**3"
_SPACED_EXAMPLE = re.compile(r"[\d)]\s[-+*/]\s[\d(a-z]")
_POWER_EXAMPLE = re.compile(r"[\d)](\s?)\*\*\s?\d")
_ARITHMETIC_TOKEN = re.compile(r"\s*(\d+(?:\.\d+)?|[A-Za-z_]\w*|\*\*|[-+*/%(),])")
_CONSTANTS = {"pi", "e", "tau"}
_TIMES_SIGN = re.compile(r"(?<=[\d)])\s*[x×]\s*(?=[\d(])")


def spaced_arithmetic_form(spec: Any) -> str | None:
    """How a string parameter whose description shows a spaced arithmetic example writes a power:
    "**" or " ** " (binary + - * / are spaced either way); None for a parameter that shows none."""
    if not isinstance(spec, Mapping) or spec.get("type", "string") != "string" or "enum" in spec:
        return None
    text = str(spec.get("description") or "")
    if "expression" not in text.lower() or not _SPACED_EXAMPLE.search(text):
        return None
    power = _POWER_EXAMPLE.search(text)
    return " ** " if power and power[1] else "**"


def write_arithmetic(value: str, power: str = "**") -> str | None:
    """`value` with one space around each binary + - * / and `power` for "**" ("12*669*639" ->
    "12 * 669 * 639", "15 x 23" -> "15 * 23", "sqrt(36)*30" -> "sqrt(36) * 30"); None when it holds
    anything but numbers, names, operators, brackets and commas."""
    text = _TIMES_SIGN.sub("*", value.strip())
    tokens, at = [], 0
    while at < len(text):
        m = _ARITHMETIC_TOKEN.match(text, at)
        if m is None:
            return None
        tokens.append(m[1])
        at = m.end()
    if not any(t[0].isdigit() for t in tokens):
        return None

    def is_name(k: int) -> bool:
        return tokens[k][0].isalpha() or tokens[k][0] == "_"

    def is_function(k: int) -> bool:
        return is_name(k) and tokens[k + 1:k + 2] == ["("]

    # what may close an operand: a number, ")", a constant ("pi"); a function's name opens one
    ends = [t[0].isdigit() or t == ")" or (is_name(k) and not is_function(k)) for k, t in enumerate(tokens)]
    for k, tok in enumerate(tokens):
        if is_name(k) and not is_function(k) and tok.lower() not in _CONSTANTS:
            return None                       # a word, not a function or a constant: not arithmetic
        if k and ends[k - 1] and (tok[0].isdigit() or is_name(k) or tok == "("):
            return None                       # two operands side by side ("81 6", "2 (3)")
    out = ""
    for k, tok in enumerate(tokens):
        binary = k > 0 and ends[k - 1]
        if tok == "**":
            out += power
        elif tok in {"+", "-", "*", "/", "%"} and binary:
            out += f" {tok} "
        elif tok == ",":
            out += ", "
        else:
            out += tok
    return out


# How a boolean parameter is said: data_gen writes requests this way and verifies them against these
# phrases. "{noun}" is the parameter's noun phrase; the last of each is the form-filling one, which
# requests leave out.
FLAG_PHRASES = {True: ("with {noun}", "{noun} enabled", "{noun} turned on", "include {noun}", "including {noun}",
                       "{noun}: yes"),
                False: ("without {noun}", "{noun} disabled", "{noun} turned off", "no {noun}", "excluding {noun}",
                        "{noun}: no")}


def flag_phrases(noun: str, value: bool) -> list[str]:
    """The ways a request says boolean parameter `noun` is `value` ("open now enabled", "without tolls")."""
    return [f.format(noun=noun) for f in FLAG_PHRASES[bool(value)]]


def description_noun(desc: str) -> str:
    """A short noun phrase from a parameter description ("The amount of money to convert" -> "amount of
    money"), or "" when the description does not start with one short enough to say."""
    text = re.split(r"[.(,;:]| e\.g| to | for | that | which | such as | in the format| in format| in [A-Z]{2}",
                    desc.strip(), maxsplit=1)[0]
    text = re.sub(r"^(the|a|an)\s+", "", text.strip(), flags=re.I)
    ws = text.split()
    if not ws or len(ws) > 4 or not re.fullmatch(r"[A-Za-z][A-Za-z' -]*", text):
        return ""
    return text[:1].lower() + text[1:] if not ws[0].isupper() else text


def subschemas(schema: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every schema object in `schema`, outermost first, with its dotted path (for error messages).
    Iterative: a schema nested deeper than Python's recursion limit is still walked."""
    queue = [(path, schema)]
    for here, node in queue:      # the queue grows while it is read
        if not isinstance(node, Mapping):
            continue
        yield here, node
        for key in SUBSCHEMA_KEYS:
            child = node.get(key)
            if isinstance(child, Mapping) and key in SUBSCHEMA_MAPS:
                queue += [(f"{here}.{key}.{k}", v) for k, v in child.items()]
            elif isinstance(child, list):
                queue += [(f"{here}.{key}[{i}]", v) for i, v in enumerate(child)]
            elif child is not None:
                queue.append((f"{here}.{key}", child))


def resolve_local_ref(root: Any, ref: Any) -> Any | None:
    """The schema a local JSON-pointer `$ref` (`#/$defs/City`) points to inside `root`, or None."""
    if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
        return None
    node = root
    for part in ref[2:].split("/") if ref != "#" else []:
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node if isinstance(node, (Mapping, bool)) else None


def check_tool_schema(d: Any, *, file: str = "<schema>", line: int | None = None) -> None:
    """Reject malformed tool definitions early, naming the field and the fix."""
    if not isinstance(d, Mapping):
        raise ToolkitError("a tool definition must be a mapping", file=file, line=line)
    name = d.get("name")
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise ToolkitError(f"tool name {name!r} must be 1-64 letters, digits, '_', '-' or '.'", file=file,
                           line=line, field="name", fix="rename it, e.g. get_weather, get-weather or math.factorial")
    params = d.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(params, Mapping) or params.get("type") != "object":
        raise ToolkitError("parameters must be a JSON schema with type 'object'", file=file, line=line,
                           field=f"{name}.parameters.type", fix="add `type: object`")
    props = params.get("properties", {})
    if not isinstance(props, Mapping):
        raise ToolkitError("properties must be a mapping", file=file, line=line, field=f"{name}.parameters.properties")
    for key in list(props) + list(params.get("required", [])):
        if not isinstance(key, str):
            raise ToolkitError(f"parameter name {key!r} is not a string", file=file, line=line,
                               field=f"{name}.parameters", fix="quote it: YAML reads on/off/yes/no as booleans")
    for key, spec in props.items():
        if not isinstance(spec, Mapping) or not any(k in spec for k in VALUE_KEYWORDS):
            raise ToolkitError("property has no 'type'", file=file, line=line,
                               field=f"{name}.parameters.properties.{key}",
                               fix="add a JSON type such as `type: string`, or anyOf / oneOf / $ref / enum / const")
    for path, schema in subschemas(params, f"{name}.parameters"):
        _check_types_and_refs(schema, params, file=file, line=line, path=path)
    missing = [r for r in params.get("required", []) if r not in props]
    if missing:
        raise ToolkitError(f"required key {missing[0]!r} is not among the properties", file=file, line=line,
                           field=f"{name}.parameters.required")
    try:
        jsonschema.Draft202012Validator.check_schema(params)
    except jsonschema.SchemaError as e:
        raise ToolkitError(f"invalid JSON schema: {e.message}", file=file, line=line,
                           field=f"{name}.parameters") from e


def _type_fix(kind: Any) -> str:
    """What to write instead of an unknown `type` word: the JSON name of a Python type where it is one."""
    if isinstance(kind, str) and kind in PYTHON_TYPE_NAMES:
        return f"write {PYTHON_TYPE_NAMES[kind]!r}"
    if kind == "any":
        return "list the types instead: [string, number, boolean, object, array, null]"
    return f"use one of {sorted(JSON_TYPES)}"


def _check_types_and_refs(schema: Mapping[str, Any], root: Mapping[str, Any], *, file: str, line: int | None,
                          path: str) -> None:
    """Known JSON `type` words only (BFCL's dict/float/any are mapped by its importer), and local
    `$ref`s that resolve: an unresolvable one would only fail later, inside validation."""
    kinds = schema.get("type", [])
    for kind in kinds if isinstance(kinds, list) else [kinds]:
        if not isinstance(kind, str) or kind not in JSON_TYPES:
            raise ToolkitError(f"unknown JSON type {kind!r}", file=file, line=line, field=f"{path}.type",
                               fix=_type_fix(kind))
    if "$ref" in schema and resolve_local_ref(root, schema["$ref"]) is None:
        raise ToolkitError(f"$ref {schema['$ref']!r} does not point into this schema", file=file, line=line,
                           field=f"{path}.$ref", fix="define it under `$defs` and refer to it as #/$defs/Name")
