"""Tool schemas and suites as they exist in the wild load, and broken ones still fail early on one line.

Names with '-' (OpenAI) and '.' (BFCL); properties described by anyOf / oneOf / $ref + $defs / enum /
const rather than a top-level `type` (what Pydantic writes); unknown `type` words, anywhere in the
schema, refused with the field that holds them and the JSON word to write instead. The call grammars
of constrained decoding follow such schemas. A suite's `difficulty` is a free label; the hackathon
score covers the easy / medium / hard levels present, and the report says which.
"""

from __future__ import annotations

import json

import pytest

from runtime.models import SymbolicModel
from eval.report import write_report
from eval.runner import evaluate
from toolcore.errors import ToolkitError
from toolcore.formats import get_format
from toolcore.metric import CaseResult, summarize, total_score
from toolcore.registry import load_tools
from toolcore.schema import Tool, ToolCall
from toolcore.suites import load_suite

# the tiny tokenizer and the call constraints of the constrained-decoding tests (generic, qwen2_5, lfm2)
from .test_constrained import FORMATS as GRAMMAR_FORMATS
from .test_constrained import accepts, body_ids, constraints, tok  # noqa: F401 (fixtures)

# what Pydantic 2.14 writes for
#   class Loc(BaseModel): city: str; country: Optional[str] = None
#   class Args(BaseModel): location: Loc; unit: Literal["c", "f"] = "c"; days: Optional[int] = None
PYDANTIC_ARGS = {
    "$defs": {"Loc": {"properties": {"city": {"title": "City", "type": "string"}, "country": {
        "anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Country"}},
        "required": ["city"], "title": "Loc", "type": "object"}},
    "properties": {"location": {"$ref": "#/$defs/Loc"},
                   "unit": {"default": "c", "enum": ["c", "f"], "title": "Unit", "type": "string"},
                   "days": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None, "title": "Days"}},
    "required": ["location"], "title": "Args", "type": "object"}

# a tree: a $ref that refers to itself
RECURSIVE = {"type": "object", "$defs": {"Node": {"type": "object", "properties": {
    "label": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
    "required": ["label"]}}, "properties": {"root": {"$ref": "#/$defs/Node"}}, "required": ["root"]}


def params(**props) -> dict:
    return {"type": "object", "properties": props}


@pytest.mark.parametrize("name", ["get-weather", "math.factorial", "GetWeather2", "2fa_check", "a", "x" * 64,
                                  "spotify.search-tracks_v2"])
def test_openai_and_bfcl_names_load(name):
    assert Tool.from_schema({"name": name, "parameters": params()}).name == name


@pytest.mark.parametrize("name", ["get weather", "x" * 65, "", "wetter/heute", "météo", "f(x)", None, 7])
def test_other_names_are_refused_on_one_line(tmp_path, name):
    f = tmp_path / "tools.json"
    f.write_text(json.dumps({"name": name, "parameters": params()}))
    with pytest.raises(ToolkitError) as e:
        load_tools(f)
    msg = str(e.value)
    assert str(f) in msg and "field 'name'" in msg and "fix:" in msg and "\n" not in msg


def test_pydantic_schema_with_ref_defs_and_optional_loads_and_validates():
    tool = Tool.from_schema({"type": "function", "function": {"name": "get-forecast", "parameters": PYDANTIC_ARGS}})
    assert tool.validation_errors({"location": {"city": "Oslo", "country": None}, "unit": "f", "days": 3}) == []
    assert tool.validation_errors({"location": {"city": "Oslo"}, "days": None}) == []
    errors = tool.validation_errors({"location": {"city": 7}, "days": "3"})
    assert any("location.city" in e for e in errors) and any("days" in e for e in errors)


@pytest.mark.parametrize("spec, good, bad", [
    ({"oneOf": [{"type": "integer"}, {"type": "string", "enum": ["all"]}]}, 3, "some"),
    ({"enum": ["low", 2, None]}, None, "high"),
    ({"const": "v1"}, "v1", "v2"),
    ({"allOf": [{"type": "integer"}, {"minimum": 0}]}, 0, -1),
    ({"not": {"type": "null"}}, "x", None),
])
def test_properties_without_a_top_level_type_load_and_validate(spec, good, bad):
    tool = Tool.from_schema({"name": "f", "parameters": params(v=spec)})
    assert tool.validation_errors({"v": good}) == []
    assert tool.validation_errors({"v": bad})


def test_recursive_ref_loads_and_validates_nested_values():
    tool = Tool("tree.build", "a tree", RECURSIVE)
    assert tool.validation_errors({"root": {"label": "a", "children": [{"label": "b", "children": []}]}}) == []
    assert tool.validation_errors({"root": {"label": "a", "children": [{"children": []}]}})


@pytest.mark.parametrize("spec, field, fix", [
    ({"type": "dict"}, "f.parameters.properties.v.type", "write 'object'"),
    ({"type": "array", "items": {"type": "float"}}, "f.parameters.properties.v.items.type", "write 'number'"),
    ({"anyOf": [{"type": "string"}, {"type": "tuple"}]}, "f.parameters.properties.v.anyOf[1].type", "write 'array'"),
    ({"type": "any"}, "f.parameters.properties.v.type", "list the types"),
    ({"type": ["string", "strng"]}, "f.parameters.properties.v.type", "use one of"),
    ({"type": {"oops": 1}}, "f.parameters.properties.v.type", "use one of"),
    ({"$ref": "#/$defs/Missing"}, "f.parameters.properties.v.$ref", "$defs"),
    ({"$ref": "https://example.com/loc.json"}, "f.parameters.properties.v.$ref", "$defs"),
    ({"description": "forgot the type"}, "f.parameters.properties.v", "type: string"),
])
def test_broken_schemas_name_the_field_and_the_fix(tmp_path, spec, field, fix):
    f = tmp_path / "tools.json"
    f.write_text(json.dumps({"name": "f", "parameters": params(v=spec)}))
    with pytest.raises(ToolkitError) as e:
        load_tools(f)
    msg = str(e.value)
    assert str(f) in msg and f"field '{field}'" in msg and fix in msg and "\n" not in msg


def test_unknown_type_inside_defs_is_found():
    schema = params(v={"$ref": "#/$defs/Unit"}) | {"$defs": {"Unit": {"type": "str"}}}
    with pytest.raises(ToolkitError, match=r"f\.parameters\.\$defs\.Unit\.type.*write 'string'"):
        Tool.from_schema({"name": "f", "parameters": schema})


# ----- constrained decoding: the call grammars of such schemas --------------------------------------

def accepted(constraints, tok, name: str, tools: list[Tool], call: ToolCall, *, body: str | None = None) -> bool:
    """Whether the format's grammar for `tools` lets a model write `call` (or a hand-written `body`)."""
    ids = body_ids(tok, get_format(name), call)
    if body is not None:
        ids = tok.encode(body, add_special_tokens=False) + ids[-1:]
    return accepts(constraints[name], tools, ids)


FORECAST = Tool("get-forecast", "forecast", PYDANTIC_ARGS)
CHOICES = Tool("math.pick", "pick", params(mode={"oneOf": [{"type": "integer"}, {"enum": ["all", None]}]},
                                           version={"const": "v1"}, flag={"type": "boolean"},
                                           tags={"type": "array", "items": {"enum": ["a", "b"]}})
               | {"required": ["mode", "version"]})


@pytest.mark.parametrize("name", GRAMMAR_FORMATS)
@pytest.mark.parametrize("tool", ["get-weather", "math.factorial", "2fa", "class", "True"])
def test_grammar_writes_wild_names(constraints, tok, name, tool):
    tools = [Tool(tool, "t", params(n={"type": "integer"})), Tool(tool + "x", "other", params())]
    assert accepted(constraints, tok, name, tools, ToolCall(tool, {"n": 5}))
    assert not accepted(constraints, tok, name, tools, ToolCall(tool + "y", {"n": 5}))


@pytest.mark.parametrize("name", GRAMMAR_FORMATS)
def test_grammar_follows_refs_into_defs(constraints, tok, name):
    good = ToolCall("get-forecast", {"location": {"city": "Oslo", "country": None}, "unit": "f", "days": 3})
    assert accepted(constraints, tok, name, [FORECAST], good)
    assert accepted(constraints, tok, name, [FORECAST], ToolCall("get-forecast", {"location": {"city": "Oslo"}}))
    for bad in ({"location": {"city": 7}}, {"location": {"town": "Oslo"}}, {"location": {"city": "x"}, "unit": "k"},
                {"location": "Oslo"}, {"unit": "c"}):
        assert not accepted(constraints, tok, name, [FORECAST], ToolCall("get-forecast", bad)), bad


@pytest.mark.parametrize("name", GRAMMAR_FORMATS)
def test_grammar_of_oneof_enum_only_and_const(constraints, tok, name):
    for args in ({"mode": 3, "version": "v1"}, {"mode": "all", "version": "v1", "flag": False},
                 {"mode": None, "version": "v1", "tags": ["b", "a"]}):
        assert accepted(constraints, tok, name, [CHOICES], ToolCall("math.pick", args)), args
    for args in ({"mode": "some", "version": "v1"}, {"mode": 3, "version": "v2"}, {"mode": 3, "version": "v1",
                                                                                    "tags": ["c"]}):
        assert not accepted(constraints, tok, name, [CHOICES], ToolCall("math.pick", args)), args


@pytest.mark.parametrize("name", GRAMMAR_FORMATS)
def test_recursive_ref_gives_a_finite_grammar_that_accepts_trees(constraints, tok, name):
    tree = Tool("tree.build", "a tree", RECURSIVE)
    deep = {"root": {"label": "a", "children": [{"label": "b", "children": [{"label": "c", "children": []}]}]}}
    assert accepted(constraints, tok, name, [tree], ToolCall("tree.build", deep))
    assert not accepted(constraints, tok, name, [tree], ToolCall("tree.build", {"root": {"children": []}}))


@pytest.mark.parametrize("name", ["generic", "qwen2_5"])
def test_json_grammar_keeps_numbers_finite_and_text_valid(constraints, tok, name):
    fmt = get_format(name)
    tool = Tool("f", "t", params(x={"type": "number"}, s={"type": "string"}))
    prefix = fmt.render_calls([ToolCall("f", {})])[len(fmt.call_start):].split('{"name"')[0]

    def ok(args: str) -> bool:
        return accepted(constraints, tok, name, [tool], ToolCall("f", {}),
                        body=prefix + '{"name": "f", "arguments": {' + args + "}}" + ("\n" if prefix else ""))

    assert ok('"x": -1.5e99') and ok('"s": "\\ud83d\\ude00 \\u00e9"')
    assert not ok('"x": 1e999') and not ok('"s": "\\ud800"') and not ok('"s": "\\udc00"')


def test_python_grammar_writes_no_surrogate_escape(constraints, tok):
    tool = Tool("f", "t", params(x={"type": "number"}, s={"type": "string"}))
    assert accepted(constraints, tok, "lfm2", [tool], ToolCall("f", {}), body='[f(x=1e99, s="\\u00e9")]')
    for body in ('[f(x=1e999)]', '[f(s="\\ud800")]', '[f(s="\\ud83d\\ude00")]'):
        assert not accepted(constraints, tok, "lfm2", [tool], ToolCall("f", {}), body=body), body


# ----- suites from elsewhere: difficulty is a free label; the score covers the levels present ----------

def suite_line(case_id: str, difficulty=..., *, city: str = "Paris") -> str:
    case = {"id": case_id, "messages": [{"role": "user", "content": f"What's the weather in {city}?"}],
            "tools": ["get_weather"], "expected_calls": [{"name": "get_weather", "arguments": {"location": city}}]}
    return json.dumps(case if difficulty is ... else case | {"difficulty": difficulty})


def test_difficulty_is_any_label_or_none(tmp_path):
    f = tmp_path / "bfcl_like.jsonl"
    f.write_text("\n".join([suite_line("a", "easy"), suite_line("b", "simple"), suite_line("c", "parallel_multiple"),
                            suite_line("d"), suite_line("e", None)]) + "\n")
    assert [c.difficulty for c in load_suite(f)] == ["easy", "simple", "parallel_multiple", "", ""]


def result(difficulty: str, f1: float) -> CaseResult:
    expected = [ToolCall("f", {"x": 1})]
    return CaseResult(difficulty + str(f1), difficulty, expected, expected if f1 else [], latency_ms=0.0)


def test_score_covers_the_levels_present_with_their_weights_rescaled():
    assert total_score([result("easy", 1.0), result("simple", 0.0)]) == pytest.approx(100.0)
    easy, hard = 0.6 + 0.15 + 0.25, 0.15 + 0.25    # hard: F1 0, fast, on device
    expected = 100 * (0.2 * easy + 0.5 * hard) / (0.2 + 0.5)
    assert total_score([result("easy", 1.0), result("hard", 0.0)]) == pytest.approx(expected)
    assert total_score([result("simple", 1.0), result("", 1.0)]) is None
    summary = summarize([result("hard", 1.0), result("easy", 0.0), result("", 1.0)])
    assert summary["score_levels"] == ["easy", "hard"]
    assert summary["f1_by_difficulty"] == {"(none)": 1.0, "easy": 0.0, "hard": 1.0}


def test_report_says_which_levels_the_score_covers(tmp_path):
    mixed, unlabelled = tmp_path / "mixed.jsonl", tmp_path / "unlabelled.jsonl"
    mixed.write_text("\n".join([suite_line("a", "hard"), suite_line("b", "simple", city="Rome")]) + "\n")
    unlabelled.write_text("\n".join([suite_line("a"), suite_line("b", "multiple", city="Rome")]) + "\n")
    for suite in (mixed, unlabelled):
        evaluate(SymbolicModel(), str(suite), tmp_path / suite.stem, progress=False)
    summary = json.loads((tmp_path / "mixed" / "summary.json").read_text())
    assert summary["score_levels"] == ["hard"] and summary["score"] > 0
    assert json.loads((tmp_path / "unlabelled" / "summary.json").read_text())["score"] is None
    md = write_report([tmp_path / "mixed", tmp_path / "unlabelled"], tmp_path / "report.html").with_suffix(".md")
    rows = [line.split(" | ") for line in md.read_text().splitlines() if line.startswith("| symbolic |")]
    head = next(line for line in md.read_text().splitlines() if line.startswith("| model |")).split(" | ")
    levels, score = head.index("score levels"), head.index("score")
    assert [(r[levels], r[score]) for r in rows] == [("hard", f"{summary['score']:.3f}"), ("none", "-")]
