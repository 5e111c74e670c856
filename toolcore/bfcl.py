"""BFCL (Berkeley Function Calling Leaderboard) v3/v4 single-turn files as evaluation cases.

A question file holds one JSON object a line: `id` (`simple_0`, `live_multiple_3-1-0`), `question`
(a list of turns, each a list of {role, content} messages; some files give the messages unnested)
and `function` (the functions offered: {name, description, parameters: {type: "dict", properties,
required}}). Its possible-answer file has the same ids with `ground_truth`: one
{function_name: {param: [acceptable values]}} per expected call. Irrelevance files (irrelevance,
live_irrelevance, live_relevance) have none: there the right answer is no call (or, for
live_relevance, any call).

BFCL types that are not JSON Schema (`dict`, `float`, `tuple`, `any`) are normalised for the schema
the model is shown; the original `function` list stays in `Case.raw`, because the checker
(`toolcore.bfcl_metric`) needs BFCL's own types (float vs integer, tuple, any). Function names are
kept verbatim: BFCL names functions like `math.factorial`.

BFCL is an evaluation set and nothing here feeds training: `suite_user_texts` exists so data_gen and
the converter can decontaminate against it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping

from .conversation import Conversation, Message
from .errors import ToolkitError
from .files import read_jsonl
from .schema import SUBSCHEMA_KEYS, SUBSCHEMA_MAPS, Tool, ToolCall

# BFCL type -> JSON Schema type(s); `any` is every JSON type (integer is within number)
TYPE_MAP: dict[str, str | list[str]] = {"dict": "object", "float": "number", "tuple": "array",
                                        "any": ["string", "number", "boolean", "object", "array", "null"]}
_ID = re.compile(r"^(?P<category>.+?)_\d+(?:-\d+)*$")
_FILE = re.compile(r"^BFCL_v\d+_", re.IGNORECASE)


def is_bfcl_file(suite: str | Path) -> bool:
    """A JSONL file whose first object has `question` and `function` (and no toolkit `messages`)."""
    path = Path(suite)
    if not path.is_file():
        return False
    try:
        with path.open(encoding="utf-8") as f:
            d = json.loads(next((line for line in f if line.strip()), ""))
    except (UnicodeDecodeError, json.JSONDecodeError):    # not a JSONL file: the suite loader will say so
        return False
    return isinstance(d, dict) and "question" in d and "function" in d and "messages" not in d


def category_of(case_id: str, file: str | Path = "") -> str:
    """`live_multiple_3-1-0` -> live_multiple; an id without a numeric suffix falls back to the file
    name (`BFCL_v3_parallel.json` -> parallel)."""
    m = _ID.match(case_id)
    if m:
        return m.group("category")
    return _FILE.sub("", Path(file).stem) or "unknown"


def needs_answers(category: str) -> bool:
    """Irrelevance and relevance cases are judged by whether a call was made, not against answers."""
    return "relevance" not in category


def _json_types(kind: Any) -> Any:
    """One BFCL `type` (or a list of them) as JSON Schema; unknown words are left for the schema check
    to refuse, with its own fix."""
    kinds = kind if isinstance(kind, list) else [kind]
    out: list = []
    for k in kinds:
        mapped = TYPE_MAP.get(k, k) if isinstance(k, str) else k
        for m in mapped if isinstance(mapped, list) else [mapped]:
            if m not in out:
                out.append(m)
    return out if isinstance(kind, list) or len(out) > 1 else out[0]


def normalize_schema(schema: Any) -> Any:
    """BFCL parameter schema -> JSON Schema, in every subschema (properties, items, anyOf...). A required
    name that is not among the properties is left out of `required`: BFCL's own files have such names
    (BFCL_v3_multiple's `create_player_profile` requires `class` and has the property `_class`), and the
    case is still evaluated as BFCL does (its checker reads the original functions, kept in `Case.raw`)."""
    if isinstance(schema, list):
        return [normalize_schema(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = dict(schema)
    props, required = out.get("properties"), out.get("required")
    if isinstance(props, Mapping) and isinstance(required, list):
        out["required"] = [r for r in required if r in props]
    if out.get("type") == "float":      # kept as OpenAPI writes it: the model sees that a float is asked for
        out.setdefault("format", "float")
    if "type" in out:
        out["type"] = _json_types(out["type"])
    for key in SUBSCHEMA_KEYS:
        child = out.get(key)
        if key in SUBSCHEMA_MAPS and isinstance(child, Mapping):
            out[key] = {k: normalize_schema(v) for k, v in child.items()}
        elif isinstance(child, (Mapping, list)):
            out[key] = normalize_schema(child)
    return out


def question_messages(d: Mapping[str, Any], *, file: str, line: int) -> list[Message]:
    """The `question` turns as messages; turns are lists of messages (v3/v4) or messages themselves."""
    turns = d.get("question")
    if not isinstance(turns, list) or not turns:
        raise ToolkitError("`question` must be a non-empty list of turns", file=file, line=line, field="question")
    flat = [m for t in turns for m in (t if isinstance(t, list) else [t])]
    messages = []
    for i, m in enumerate(flat):
        try:
            messages.append(Message.from_dict(m, where=f"question[{i}]"))
        except ToolkitError as e:
            raise ToolkitError(str(e), file=file, line=line) from e
    if not any(m.role == "user" for m in messages):
        raise ToolkitError("no user message", file=file, line=line, field="question")
    return messages


def _functions(d: Mapping[str, Any], *, file: str, line: int) -> list[dict[str, Any]]:
    funcs = d.get("function")
    if isinstance(funcs, Mapping):            # a few old files give the single function unwrapped
        funcs = [funcs]
    if not isinstance(funcs, list) or not all(isinstance(f, Mapping) and isinstance(f.get("name"), str)
                                              for f in funcs):
        raise ToolkitError("`function` must be a list of {name, description, parameters}", file=file, line=line,
                           field="function")
    return [dict(f) for f in funcs]


def _tool(func: Mapping[str, Any], *, file: str, line: int, index: int) -> Tool:
    where = f"function[{index}]"
    try:
        params = normalize_schema(func.get("parameters") or {"type": "dict", "properties": {}})
        return Tool.from_schema({"name": func["name"], "description": func.get("description", ""),
                                 "parameters": params}, source=file)
    except ToolkitError as e:
        detail = str(e).removeprefix(f"{file}: ")
        raise ToolkitError(detail, file=file, line=line, field=where) from e


def check_ground_truth(gt: Any, offered: set[str], *, file: str, line: int) -> list[dict[str, dict[str, list]]]:
    """`ground_truth` as a list of one-function dicts {name: {param: [acceptable values]}}; a single
    dict with several functions is split into one call each."""
    items = [gt] if isinstance(gt, Mapping) else gt
    if not isinstance(items, list):
        raise ToolkitError("`ground_truth` must be a list of {function_name: {param: [values]}}", file=file,
                           line=line, field="ground_truth")
    calls = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping) or not item:
            raise ToolkitError("each expected call must be {function_name: {param: [values]}}", file=file,
                               line=line, field=f"ground_truth[{i}]")
        for name, params in item.items():
            if name not in offered:
                raise ToolkitError(f"function {name!r} is not among the question's functions", file=file,
                                   line=line, field=f"ground_truth[{i}]",
                                   fix="the answers file must belong to this question file")
            if not isinstance(params, Mapping) or not all(isinstance(v, list) for v in params.values()):
                raise ToolkitError("parameters must map to lists of acceptable values", file=file, line=line,
                                   field=f"ground_truth[{i}].{name}")
            calls.append({name: dict(params)})
    return calls


def expected_call(answer: Mapping[str, Mapping[str, list]]) -> ToolCall:
    """One representative call for the toolkit's call F1: each parameter's first acceptable value;
    optional parameters (`""` acceptable) are left out, so F1 never demands them."""
    (name, params), = answer.items()
    return ToolCall(name, {p: values[0] for p, values in params.items() if values and "" not in values})


def load_answers(path: str | Path) -> dict[str, tuple[int, Any]]:
    """id -> (line, ground_truth) of a possible-answer file."""
    out: dict[str, tuple[int, Any]] = {}
    for n, d in read_jsonl(path):
        if "id" not in d or "ground_truth" not in d:
            raise ToolkitError("an answer line needs `id` and `ground_truth`", file=str(path), line=n)
        if str(d["id"]) in out:
            raise ToolkitError(f"duplicate id {d['id']!r}", file=str(path), line=n, field="id")
        out[str(d["id"])] = (n, d["ground_truth"])
    return out


def load_bfcl_cases(questions: str | Path, answers: str | Path | None = None, *,
                    limit: int | None = None) -> list:
    """A BFCL question file (+ its possible-answer file) as eval cases. Categories that are scored
    against answers need the answers file, and every id must appear in both files."""
    from .suites import Case, difficulty_for   # suites imports the schema stack; keep this module light

    qfile = str(questions)
    answer_map = load_answers(answers) if answers else {}
    cases, seen = [], set()
    for n, d in read_jsonl(questions):
        if "id" not in d:
            raise ToolkitError("missing key", file=qfile, line=n, field="id")
        case_id = str(d["id"])
        if case_id in seen:
            raise ToolkitError(f"duplicate case id {case_id!r}", file=qfile, line=n, field="id")
        seen.add(case_id)
        category = category_of(case_id, qfile)
        if category.startswith("multi_turn"):
            raise ToolkitError(f"category {category!r} is multi-turn (not supported)", file=qfile, line=n,
                               fix="give a single-turn file: simple, multiple, parallel, parallel_multiple, "
                                   "irrelevance or their live_ variants")
        funcs = _functions(d, file=qfile, line=n)
        tools = [_tool(f, file=qfile, line=n, index=i) for i, f in enumerate(funcs)]
        messages = question_messages(d, file=qfile, line=n)
        truth: list = []
        if needs_answers(category):
            if case_id not in answer_map:
                if answers:
                    raise ToolkitError(f"no answer for {case_id!r} (question line {n})", file=str(answers),
                                       field="id", fix=f"give the possible_answer file of {Path(qfile).name}")
                raise ToolkitError(f"category {category!r} is scored against answers, and none were given",
                                   file=qfile, line=n, field="answers",
                                   fix="add answers=<its possible_answer file> (only irrelevance files need none)")
            aline, gt = answer_map[case_id]
            truth = check_ground_truth(gt, {f["name"] for f in funcs}, file=str(answers), line=aline)
        expected = [expected_call(a) for a in truth]
        raw = {"id": case_id, "category": category, "function": funcs, "ground_truth": truth}
        cases.append(Case(case_id, difficulty_for(len(expected)), Conversation(messages, tools), expected, raw))
    if not cases:
        raise ToolkitError("suite has no cases", file=qfile)
    stray = set(answer_map) - seen
    if stray:
        first = min(stray, key=lambda i: answer_map[i][0])
        raise ToolkitError(f"answer id {first!r} is not in the question file ({len(stray)} such ids)",
                           file=str(answers), line=answer_map[first][0], field="id",
                           fix=f"give the possible_answer file that belongs to {Path(qfile).name}")
    return cases[:limit] if limit else cases


def suite_user_texts(suite: str | Path, registry: Any = None) -> list[str]:
    """Every user turn's text of a suite (a built-in name, a toolkit JSONL file or a BFCL file): what
    decontamination (data_gen, the converter) compares generated text against. BFCL files are read
    without building tools, so any function name works here; `registry` (a ToolRegistry) serves suites
    that name registered tools."""
    if is_bfcl_file(suite):
        file = str(suite)
        return [m.content for n, d in read_jsonl(suite) for m in question_messages(d, file=file, line=n)
                if m.role == "user"]
    from .suites import load_suite

    return [m.content for case in load_suite(suite, registry) for m in case.conversation.messages
            if m.role == "user"]
