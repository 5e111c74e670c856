"""What a valid call looks like, as a grammar, for schema-constrained decoding.

A format's `call_grammar(tools)` is an EBNF grammar (xgrammar's dialect, GBNF-like) of the text
between its call markers (`call_start` ... `call_end`) that is a valid call of one of `tools`: the
name is an offered tool's, the argument keys are that tool's properties in schema order (required
ones present, no others), and the values have the schema's types (integers, numbers, booleans, enum
members, arrays, nested objects, null, anyOf / oneOf, const, local `$ref`s into `$defs`; a recursive
ref is any JSON value where it recurs). The runtime compiles it with a grammar engine and
masks the logits while a call is being written; the free text around calls stays unconstrained.

Two dialects of values, because the formats write calls in two syntaxes: JSON (generic, Hermes:
`{"name": ..., "arguments": {...}}` with `json.dumps` spacing, as `formats.base.dumps` renders) and
Python literals (LFM2's `[f(a=1), g(b="x")]`, as `formats.lfm2.py_literal` renders). Both are written
here as text rather than by the engine's JSON-Schema converter: xgrammar 0.2's converter re-prints
non-ASCII enum members as single bytes, so an enum value like "Zürich" could never be generated
(a property test found it). Every grammar's first rule is `root`.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from ..schema import Tool, resolve_local_ref


def _lit(text: str) -> str:
    """An EBNF string literal."""
    return json.dumps(text, ensure_ascii=False)


class CallGrammar:
    """Writes the rules of one grammar; `dialect` is "json" or "python"."""

    # Strings are right-recursive on purpose: xgrammar precomputes token masks for that shape when
    # it compiles, while `chr*` left it to the matcher at every step (20 ms a token inside a string
    # on this CPU, 0.002 ms this way; bench_constrained.py).
    COMMON = r'''
str ::= "\"" strtail
strtail ::= "\"" | [^"\\\x00-\x1f] strtail | "\\" esc strtail
hex ::= [0-9a-fA-F]
nonsurrogate ::= [0-9a-cA-Ce-fE-F] hex hex hex | [dD] [0-7] hex hex
int ::= "-"? ( "0" | [1-9] [0-9]{0,18} )
num ::= int ( "." [0-9]{1,24} )? ( [eE] ( "-" [0-9]{1,3} | "+"? [0-9]{1,2} ) )? | "-"? [1-9] ( "." [0-9]{1,24} )? [eE] "+"? bigexp
bigexp ::= [1-2] [0-9] [0-9] | "30" [0-7]
anylist ::= "[" ( any ( ", " any )* )? "]"
anydict ::= "{" ( str ": " any ( ", " str ": " any )* )? "}"
any ::= str | num | bool | none | anylist | anydict
'''
    # Numbers stay finite, as the parsers require (1e999999 would read as infinity), and short: at most
    # 19 integer digits (int64's width) and 24 after the point (repr writes 0.00012345678901234567), with
    # a two-digit exponent, or one digit before the point and an exponent up to 307 (as repr writes
    # 1.5e+300). The bound on digits is for the model: the GPU adapter read "$1M" as a 1 followed by
    # zeros until max_new_tokens cut the call off (BFCL multiple_12), which lost the whole
    # call. Both branches bound the digits after the point: a prefix either branch can still finish is
    # allowed, so one unbounded branch would let "1.000..." run on. \u escapes never write a lone
    # surrogate, which the parsers refuse as invalid text: JSON may pair a high surrogate with a low
    # one (json.dumps writes 😀 so), a Python literal may not (it reads the pair as two lone surrogates).
    DIALECT = {
        "json": r'''bool ::= "true" | "false"
none ::= "null"
esc ::= ["\\/bfnrt] | "u" ( nonsurrogate | [dD] [89abAB] hex hex "\\u" [dD] [c-fC-F] hex hex )
''',
        "python": r'''bool ::= "True" | "False"
none ::= "None"
esc ::= ["\\bfnrt] | "u" nonsurrogate
'''}

    def __init__(self, dialect: str):
        self.dialect = dialect
        self.rules: list[str] = []
        self.root: dict[str, Any] = {}         # the schema local `$ref`s point into: the tool's parameters
        self.refs: dict[str, str] = {}         # $ref -> its rule, written once however often it is used
        self.expanding: set[str] = set()       # the $refs whose rules are being written

    def for_tool(self, tool: Tool) -> "CallGrammar":
        """Resolve `$ref`s in `tool`'s parameters from now on (each tool has its own `$defs`)."""
        self.root, self.refs = tool.parameters, {}
        return self

    def rule(self, body: str) -> str:
        name = f"r{len(self.rules)}"
        self.rules.append(f"{name} ::= {body}")
        return name

    def literal(self, value: Any) -> str:
        if self.dialect == "python":
            from .lfm2 import py_literal

            return _lit(py_literal(value))
        return _lit(json.dumps(value, ensure_ascii=False))

    def ref(self, ref: str) -> str:
        """The rule of a local `$ref`. A ref met again while its own rule is being written (a recursive
        schema: a tree of nodes) is any JSON value there, so the grammar stays finite."""
        if ref in self.refs:
            return self.refs[ref]
        target = resolve_local_ref(self.root, ref)
        if ref in self.expanding or target is None:
            return "any"
        self.expanding.add(ref)
        try:
            self.refs[ref] = self.value(target)
        finally:
            self.expanding.discard(ref)
        return self.refs[ref]

    def value(self, spec: dict[str, Any] | bool) -> str:
        if not isinstance(spec, dict):    # a boolean schema (`items: true`)
            return "any"
        if "$ref" in spec:
            return self.ref(spec["$ref"])
        if len(spec.get("allOf") or []) == 1:    # Pydantic's wrapper of a $ref with a description
            return self.value(spec["allOf"][0])
        if "const" in spec:
            return self.literal(spec["const"])
        if "enum" in spec:
            return self.rule(" | ".join(self.literal(v) for v in spec["enum"]))
        for key in ("anyOf", "oneOf"):
            if key in spec:
                return self.rule(" | ".join(self.value(s) for s in spec[key]))
        kind = spec.get("type")
        if isinstance(kind, list):
            return self.rule(" | ".join(self.value(spec | {"type": k}) for k in kind))
        simple = {"string": "str", "integer": "int", "number": "num", "boolean": "bool", "null": "none"}
        if kind in simple:
            return simple[kind]
        if kind == "array":
            return self.array(self.value(spec.get("items") or {}), spec.get("minItems") or 0, spec.get("maxItems"))
        if kind == "object":
            props = spec.get("properties")
            if not props:     # keys named only as required (BFCL writes such dicts): those keys, any values
                props = {k: {} for k in spec.get("required") or []}
            if not props:
                return "anydict"
            return self.rule(f'"{{" {self.keys(props, spec.get("required", []), self.key_head)} "}}"')
        return "any"

    def array(self, item: str, lo: int, hi: int | None) -> str:
        """An array of `lo` to `hi` items (a crop box is exactly 4 integers). Bounds are unrolled, so
        a wide range (over 32 optional items) is left open above rather than blowing up the grammar."""
        if hi is not None and (hi < lo or hi - lo > 32):
            hi = None if hi >= lo else lo
        if hi == 0:
            return self.rule('"[" "]"')
        more = f'( ", " {item} )*' if hi is None else ""
        if hi is not None:     # nested optionals: ( ", " x ( ", " x )? )?
            for _ in range(hi - max(lo, 1)):
                more = f'( ", " {item} {more} )?'
        first = " ".join([item] + [f'", " {item}'] * (max(lo, 1) - 1))
        body = f"{first} {more}".strip()
        return self.rule(f'"[" {body} "]"' if lo >= 1 else f'"[" ( {body} )? "]"')

    def key_head(self, key: str) -> str:
        return _lit(json.dumps(key, ensure_ascii=False) + ": ")

    def keys(self, props: dict[str, Any], required: Sequence[str], head) -> str:
        """The keys in schema order, optional ones skippable, ", " between the ones written."""
        names = list(props)
        memo: dict[tuple[int, bool], str] = {}

        def rest(i: int, after: bool) -> str:
            if i == len(names):
                return '""'
            if (i, after) not in memo:
                item = ('", " ' if after else "") + f"{head(names[i])} {self.value(props[names[i]])} {rest(i + 1, True)}"
                memo[(i, after)] = self.rule(item if names[i] in required else f"( {item} ) | {rest(i + 1, after)}")
            return memo[(i, after)]

        return rest(0, False)

    def grammar(self, root: str) -> str:
        return "\n".join([f"root ::= {root}", *self.rules]) + self.COMMON + self.DIALECT[self.dialect]


def json_calls_ebnf(tools: Sequence[Tool], prefix: str = "", suffix: str = "") -> str:
    """One call object `{"name": ..., "arguments": {...}}` of any of `tools`, between fixed text."""
    g = CallGrammar("json")
    alts = []
    for t in tools:
        g.for_tool(t)
        head = prefix + '{"name": ' + json.dumps(t.name, ensure_ascii=False) + ', "arguments": {'
        alts.append(g.rule(f"{_lit(head)} {g.keys(t.properties, t.required, g.key_head)} {_lit('}}' + suffix)}"))
    return g.grammar(" | ".join(alts))


def pythonic_calls_ebnf(tools: Sequence[Tool]) -> str:
    """`[name(key=value, ...), ...]`: one or more calls of `tools` with Python literal values."""
    g = CallGrammar("python")
    alts = []
    for t in tools:     # names are written verbatim, Python or not (get-weather, math.factorial)
        keys = g.for_tool(t).keys(t.properties, t.required, lambda k: _lit(k + "="))
        alts.append(g.rule(f'{_lit(t.name + "(")} {keys} ")"'))
    call = g.rule(" | ".join(alts))
    return g.grammar(f'"[" {call} ( ", " {call} )* "]"')
