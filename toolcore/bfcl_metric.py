"""`bfcl_ast`: BFCL's AST checker, re-implemented from its published rules, on the toolkit's parsed calls.

A case passes or fails as a whole:
- irrelevance categories pass only when no call is produced (a parse failure is no call); live_relevance
  passes when at least one call is produced;
- parallel categories (parallel, parallel_multiple, live_...) need exactly as many calls as expected,
  in any order: each expected call takes the first unused predicted call that passes against it;
- multiple categories need exactly as many calls as expected (one) and check the first;
- every other category (simple, ...) needs exactly one call.
A predicted call passes against an expected one when the name is the expected function's; every
required parameter (from the function's schema) is present; every predicted argument is a known
parameter that the answer lists, of the parameter's BFCL type (an int is accepted for a float, a bool
is never an int), with an acceptable value; and a listed parameter is left out only where `""` is
among its acceptable values. Values: strings compare after BFCL's normalisation (lowercase, no
spaces or `,./-_*^`, single quotes as double quotes); lists element by element (string elements
normalised); dicts key by key against each acceptable dict; lists of dicts dict by dict in order;
anything else with Python `==`.
Two BFCL details are kept on purpose, so scores line up with the leaderboard: an answer listed with
values of another type than the schema's (BFCL's "variable" answers, e.g. a string for an integer) is
compared as is, without normalisation; and array items are type-checked one level deep without the
int-for-float allowance.
"""

from __future__ import annotations

import re
from collections import defaultdict
from statistics import mean
from typing import Any, Mapping, Sequence

from .schema import ToolCall

# BFCL type names (and the JSON Schema names some files use) -> the Python type of a parsed value
PY_TYPES: dict[str, type] = {"string": str, "integer": int, "float": float, "number": float, "boolean": bool,
                             "array": list, "tuple": list, "dict": dict, "object": dict, "any": str}
_STRIP = re.compile(r"[ ,./\-_*^]")


def standardize(text: str) -> str:
    """BFCL's string normalisation: 'April 1, 2024' == 'april 1 2024'."""
    return _STRIP.sub("", text).lower().replace("'", '"')


def _norm(v: Any) -> Any:
    return standardize(v) if isinstance(v, str) else v


def _answer_type(acceptable: Sequence[Any]) -> type | None:
    """The type of the first non-optional acceptable value (None when only "" is listed)."""
    return next((type(a) for a in acceptable if a != ""), None)


def _items_typed(value: list, acceptable: Sequence[Any], item_type: type) -> bool:
    """Array items have the schema's item type (or the type the acceptable list itself uses), judged
    against each acceptable list; a non-list acceptable value (the optional "") lets it through."""
    for option in acceptable:
        if not isinstance(option, list):
            return True
        alt = _answer_type(option)
        if all(type(v) is item_type or (alt is not None and type(v) is alt) for v in value):
            return True
    return False


def _listed(v: Any) -> list:
    return v if isinstance(v, list) else [v]


def _dict_ok(value: Mapping[str, Any], options: Sequence[Any]) -> bool:
    for option in options:
        if not isinstance(option, Mapping):
            continue          # the optional "" is no dict to match
        if all(k in option and _norm(v) in [_norm(a) for a in _listed(option[k])] for k, v in value.items()) and \
                all(k in value or "" in _listed(accepted) for k, accepted in option.items()):
            return True
    return False


def check_value(param: str, value: Any, spec: Mapping[str, Any], acceptable: Sequence[Any]) -> str | None:
    """None when `value` is acceptable for `param`, else why not."""
    kind = spec.get("type")
    declared = PY_TYPES.get(kind) if isinstance(kind, str) else None
    if declared is None:
        return f"parameter {param!r} has an unsupported type {kind!r}"
    if declared is float and type(value) is int:
        value = float(value)
    answer_type = _answer_type(acceptable)
    # BFCL writes some answers as another type than the schema's (variable names as strings): those
    # are compared as given
    variable = answer_type is not None and answer_type is not declared
    item_kind = (spec.get("items") or {}).get("type") if declared is list else None
    item_type = PY_TYPES.get(item_kind) if isinstance(item_kind, str) else None
    if type(value) is declared:
        if item_type is not None and not _items_typed(value, acceptable, item_type):
            return f"items of {param!r} are not all {item_kind}"
    elif answer_type is not None and type(value) is answer_type:
        variable = True
    else:
        return f"{param!r} should be {kind}, got {type(value).__name__}"
    if not variable:
        if declared is dict:
            return None if _dict_ok(value, acceptable) else f"{param!r}: no acceptable dict matches"
        if declared is list and item_type is dict:
            ok = any(isinstance(o, list) and len(o) == len(value) and all(
                isinstance(v, Mapping) and _dict_ok(v, [o[i]]) for i, v in enumerate(value)) for o in acceptable)
            return None if ok else f"{param!r}: the list of dicts does not match"
        if declared is str:
            ok = standardize(value) in [standardize(a) for a in acceptable if isinstance(a, str)]
            return None if ok else f"{param!r}: {value!r} is not acceptable"
        if declared is list:
            # BFCL iterates each acceptable value, so the optional "" stands for the empty list
            options = [[_norm(x) for x in o] for o in acceptable if isinstance(o, list) or o == ""]
            return None if [_norm(x) for x in value] in options else f"{param!r}: {value!r} is not acceptable"
    return None if value in acceptable else f"{param!r}: {value!r} is not acceptable"


def check_call(function: Mapping[str, Any], call: ToolCall, answer: Mapping[str, Sequence[Any]]) -> str | None:
    """One predicted call against one expected call (`answer`: param -> acceptable values)."""
    if call.name != function["name"]:
        return f"expected {function['name']!r}, got {call.name!r}"
    params = function.get("parameters") or {}
    props = params.get("properties") or {}
    for p in params.get("required") or []:
        if p not in call.arguments:
            return f"missing required parameter {p!r}"
    for p, v in call.arguments.items():
        if p not in props or p not in answer:
            return f"unexpected parameter {p!r}"
        why = check_value(p, v, props[p], answer[p])
        if why:
            return why
    for p, acceptable in answer.items():
        if p not in call.arguments and "" not in acceptable:
            return f"parameter {p!r} left out but not optional"
    return None


def check_case(category: str, functions: Sequence[Mapping[str, Any]],
               ground_truth: Sequence[Mapping[str, Mapping[str, Sequence[Any]]]], calls: Sequence[ToolCall]) -> str | None:
    """None when the case passes, else the first reason it fails."""
    if "irrelevance" in category:
        return None if not calls else f"{len(calls)} call(s) made where none was wanted"
    if "relevance" in category:
        return None if calls else "no call made"
    by_name = {f["name"]: f for f in functions}
    if "parallel" in category:
        if len(calls) != len(ground_truth):
            return f"{len(calls)} call(s) for {len(ground_truth)} expected"
        used: set[int] = set()
        for i, answer in enumerate(ground_truth):
            (name, params), = answer.items()
            hit = next((j for j, c in enumerate(calls)
                        if j not in used and check_call(by_name[name], c, params) is None), None)
            if hit is None:
                return f"no call matches expected call {i} ({name})"
            used.add(hit)
        return None
    if "multiple" in category:
        if len(calls) != len(ground_truth):
            return f"{len(calls)} call(s) for {len(ground_truth)} expected"
    elif len(calls) != 1:
        return f"{len(calls)} calls for 1 expected"
    if not ground_truth:
        return None
    (name, params), = ground_truth[0].items()
    return check_call(by_name[name], calls[0], params)


def accuracy_summary(verdicts: Sequence[tuple[str, bool]]) -> dict[str, Any]:
    """(category, passed) per case -> overall accuracy (over cases) and accuracy per category."""
    by_cat: dict[str, list[bool]] = defaultdict(list)
    for cat, ok in verdicts:
        by_cat[cat].append(ok)
    return {"accuracy": round(float(mean(ok for _, ok in verdicts)), 4) if verdicts else 0.0,
            "accuracy_by_category": {c: round(float(mean(v)), 4) for c, v in sorted(by_cat.items())}}
