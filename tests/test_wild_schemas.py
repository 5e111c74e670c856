"""Tool schemas as they exist in the wild load, and broken ones still fail early on one line.

Names with '-' (OpenAI) and '.' (BFCL); properties described by anyOf / oneOf / $ref + $defs / enum /
const rather than a top-level `type` (what Pydantic writes); unknown `type` words, anywhere in the
schema, refused with the field that holds them and the JSON word to write instead.
"""

from __future__ import annotations

import json

import pytest

from toolcore.errors import ToolkitError
from toolcore.registry import load_tools
from toolcore.schema import Tool

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
