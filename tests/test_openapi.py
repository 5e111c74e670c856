"""An OpenAPI 3 document as tools: one tool per operation (toolcore/openapi.py), loaded wherever tool files
load; bad documents fail on one line naming the file; and the document goes end to end through data_gen
(schema-driven rows), training a tiny from-config model and eval on the dataset's test split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from toolcore.errors import ToolkitError
from toolcore.formats import get_format
from toolcore.registry import load_registry, load_tools
from toolcore.schema import ToolCall

from .test_constrained import accepts, body_ids, constraints, tok  # noqa: F401 (fixtures)

SPEC = Path(__file__).parent / "fixtures" / "bike_workshop_openapi.yaml"
NAMES = ["listFreeSlots", "createBooking", "get_bookings_bookingId", "cancelBooking", "updateBookingNote",
         "parts_catalog_replace"]
# one valid call per operation
CALLS = {
    "listFreeSlots": {"workshopId": "WS-12", "day": "2026-03-14", "service": "brake_repair", "limit": 5,
                      "maxPrice": 40.5},
    "createBooking": {"startsAt": "2026-03-14T09:00:00Z", "customer": {
        "name": "Ana Lima", "email": "ana@example.org", "address": {"street": "Rua Nova 1", "city": "Porto"}},
        "bikes": [{"brand": "Brompton", "service": "tune_up", "note": None}, {"brand": "Gazelle", "service": "wheel_true"}]},
    "get_bookings_bookingId": {"bookingId": "B-881"},
    "cancelBooking": {"bookingId": "B-881", "reason": "changed_plans"},
    "updateBookingNote": {"bookingId": "B-881", "body": {"bookingId": "B-881", "note": "bring a spare tube"}},
    "parts_catalog_replace": {"workshopId": "WS-12", "title": "Brakes", "children": [
        {"title": "Pads", "children": [{"title": "Disc pads"}, {"title": "Rim pads", "children": []}]}]},
}


@pytest.fixture(scope="module")
def tools():
    return {t.name: t for t in load_tools(SPEC)}


def test_every_operation_is_a_tool_with_its_name_and_description(tools):
    # head is left out, and so is the photo upload: its required body has no JSON form
    assert list(tools) == NAMES
    assert tools["listFreeSlots"].description == "List the free repair slots of a bike workshop on a day"
    # no summary: the description's text, whole
    assert tools["get_bookings_bookingId"].description == ("Look up a booking by its reference.\n"
                                                           "Returns the bikes, the slot and the customer.")
    assert all(t.source == str(SPEC) for t in tools.values())
    assert load_registry([SPEC]).names[-len(NAMES):] == NAMES      # beside the built-in tools


def test_parameters_become_properties_and_header_and_cookie_are_left_out(tools):
    slots = tools["listFreeSlots"]
    assert list(slots.properties) == ["workshopId", "day", "service", "limit", "maxPrice"]   # no X-Request-Id
    assert slots.required == ["workshopId", "day"]
    assert slots.properties["workshopId"] == {"type": "string", "description": "Workshop code"}   # $ref'd parameter
    assert slots.properties["day"] == {"type": "string", "format": "date", "description": "Day to look at"}
    assert slots.properties["service"]["enum"] == ["tune_up", "brake_repair", "wheel_true", "full_service"]
    assert slots.properties["limit"] == {"type": "integer", "minimum": 1, "maximum": 50, "default": 10,
                                         "description": "How many slots to return"}
    # 3.0's boolean exclusiveMinimum is 2020-12's number
    assert slots.properties["maxPrice"] == {"type": "number", "exclusiveMinimum": 0,
                                            "description": "Highest price in euros"}
    cancel = tools["cancelBooking"]
    assert list(cancel.properties) == ["bookingId", "reason"]          # no session cookie
    # the operation's bookingId replaces the path item's
    assert cancel.properties["bookingId"]["description"] == "Reference of the booking to cancel"
    assert tools["get_bookings_bookingId"].required == ["bookingId"]


def test_bodies_are_merged_refs_inlined_and_read_only_fields_dropped(tools):
    book = tools["createBooking"]
    assert list(book.properties) == ["startsAt", "customer", "bikes"]       # id and createdAt are readOnly
    assert book.required == ["customer", "bikes", "startsAt"]
    customer = book.properties["customer"]
    assert customer["required"] == ["name", "email"] and customer["properties"]["email"]["format"] == "email"
    assert customer["properties"]["address"]["properties"]["city"] == {"type": "string", "description": "City"}
    bike = book.properties["bikes"]["items"]
    assert bike["properties"]["service"]["enum"][0] == "tune_up"
    assert bike["properties"]["note"]["type"] == ["string", "null"]         # nullable: true
    assert book.properties["startsAt"]["format"] == "date-time"
    text = json.dumps([t.to_schema() for t in tools.values()])
    for keyword in ("$ref\": \"#/components", "nullable", "readOnly", "example", "xml", "x-internal-code",
                    "discriminator"):
        assert keyword not in text
    # a body field named like a parameter: the whole body under `body`
    note = tools["updateBookingNote"]
    assert list(note.properties) == ["bookingId", "body"] and note.required == ["bookingId", "body"]
    assert note.properties["body"]["required"] == ["note"]


def test_a_recursive_schema_refers_to_itself_under_defs(tools):
    parts = tools["parts_catalog_replace"]
    assert list(parts.properties) == ["workshopId", "title", "children"] and parts.required == ["workshopId", "title"]
    assert parts.properties["children"]["items"] == {"$ref": "#/$defs/PartCategory"}
    assert parts.parameters["$defs"]["PartCategory"]["properties"]["children"]["items"] == {
        "$ref": "#/$defs/PartCategory"}
    errors = parts.validation_errors({"workshopId": "WS-1", "title": "Brakes",
                                      "children": [{"title": "Pads", "children": [{"name": "Disc pads"}]}]})
    assert errors and "children.0.children.0" in errors[0]


@pytest.mark.parametrize("name", NAMES)
def test_a_sample_call_validates_and_wrong_ones_do_not(tools, name):
    tool = tools[name]
    assert tool.validation_errors(CALLS[name]) == []
    for key in tool.required:
        assert tool.validation_errors({k: v for k, v in CALLS[name].items() if k != key})
    wrong = {"listFreeSlots": {"limit": 51}, "createBooking": {"bikes": []}, "cancelBooking": {"reason": "bored"},
             "get_bookings_bookingId": {"bookingId": 881}, "updateBookingNote": {"body": {"note": 3}},
             "parts_catalog_replace": {"id": "P1"}}[name]
    assert tool.validation_errors(CALLS[name] | wrong)
    assert tools["listFreeSlots"].validation_errors(CALLS["listFreeSlots"] | {"maxPrice": 0})   # exclusive


@pytest.mark.parametrize("fmt", ["generic", "lfm2"])
def test_the_call_grammar_takes_the_converted_tools(tools, tok, constraints, fmt):
    for name, args in CALLS.items():
        assert accepts(constraints[fmt], list(tools.values()), body_ids(tok, get_format(fmt), ToolCall(name, args)))


def spec_with(tmp_path, **changes) -> Path:
    doc = yaml.safe_load(SPEC.read_text()) | changes
    path = tmp_path / "api.json"
    path.write_text(json.dumps(doc))
    return path


def one_line_error(path: Path) -> str:
    with pytest.raises(ToolkitError) as e:
        load_tools(path)
    msg = str(e.value)
    assert str(path) in msg and "\n" not in msg and "fix:" in msg, msg
    return msg


def test_swagger_2_is_refused_with_the_converter_named(tmp_path):
    path = tmp_path / "old.yaml"
    path.write_text("swagger: '2.0'\ninfo: {title: t, version: '1'}\npaths: {}\n")
    assert "swagger2openapi" in one_line_error(path)


def test_a_dangling_or_external_ref_names_the_operation_and_the_ref(tmp_path):
    doc = yaml.safe_load(SPEC.read_text())
    doc["components"]["schemas"]["Bike"]["properties"]["service"] = {"$ref": "#/components/schemas/Service"}
    msg = one_line_error(spec_with(tmp_path, components=doc["components"]))
    assert "POST /bookings" in msg and "'#/components/schemas/Service'" in msg and "points nowhere" in msg
    paths = doc["paths"] | {"/shops": {"get": {"operationId": "listShops",
                                               "parameters": [{"$ref": "shared.yaml#/parameters/Page"}]}}}
    msg = one_line_error(spec_with(tmp_path, paths=paths))
    assert "GET /shops" in msg and "shared.yaml#/parameters/Page" in msg and "bundle" in msg


def test_two_operations_with_one_name_are_both_named(tmp_path):
    doc = yaml.safe_load(SPEC.read_text())
    doc["paths"]["/bookings/{bookingId}"]["delete"]["operationId"] = "createBooking"
    msg = one_line_error(spec_with(tmp_path, paths=doc["paths"]))
    assert "POST /bookings" in msg and "DELETE /bookings/{bookingId}" in msg and "operationId" in msg


def test_yaml_dates_become_strings_and_a_document_without_operations_fails(tmp_path):
    path = tmp_path / "api.yaml"
    path.write_text("openapi: 3.1.0\ninfo: {title: t, version: '1'}\npaths:\n  /days:\n    get:\n"
                    "      parameters:\n        - {name: from, in: query, schema: {type: string, format: date, "
                    "default: 2026-01-01}}\n")
    (tool,) = load_tools(path)
    assert tool.name == "get_days" and tool.description == "GET /days"
    assert tool.properties["from"]["default"] == "2026-01-01"
    path.write_text("openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {}\n")
    assert "no operation" in one_line_error(path)


def test_end_to_end_data_training_and_eval_on_the_document(tmp_path, tools):
    """The document through data_gen's schema-driven rows, a few training steps of a tiny from-config model
    (its byte-level BPE trained here) and eval on the dataset's held-out test split."""
    from datasets import load_from_disk

    from data_gen.config import DataGenConfig
    from data_gen.generate import generate
    from data_gen.schema_driven.config import SchemaDataConfig
    from eval.runner import evaluate
    from runtime.models.hf import HFModel
    from toolcore.suites import ConversationReader
    from train.config import DataConfig, FamilyConfig, LoraSettings, TrainConfig, TrainingConfig
    from train.run import train

    from .tiny_models import tiny_llama, tiny_tokenizer

    data = tmp_path / "data"
    cfg = DataGenConfig(output_dir=str(data), num_conversations=120, shard_size=120, tool_paths=[str(SPEC)],
                        schema_data=SchemaDataConfig(share=1.0, library_size=0, bfcl_paths=[]))
    manifest = generate(cfg, progress=False)
    g = manifest["schema_data"]
    assert sorted(g["user_tools"]) == sorted(NAMES) and g["by_source"] == {"builtin": 0, "user": 120}
    dd = load_from_disk(str(data))
    read, called = ConversationReader(), set()
    for split in dd.values():
        for row in split:
            conv = read(row)
            offered = {t.name: t for t in conv.tools}
            for call in json.loads(row["expected_calls"]):
                assert offered[call["name"]].validation_errors(call["arguments"]) == [], row["id"]
                if not row["id"].endswith(".masked"):     # masked rows rename tools and parameters
                    assert offered[call["name"]].parameters == tools[call["name"]].parameters
                    assert tools[call["name"]].validation_errors(call["arguments"]) == [], row["id"]
                    called.add(call["name"])
    assert called == set(NAMES), manifest["rejections"]

    fmt = get_format("generic")
    texts = [fmt.render_text(read(r)) for r in dd["train"]]
    tok = tiny_tokenizer(texts, vocab_size=1200)
    base = tmp_path / "base"
    tiny_llama(len(tok), hidden=64, layers=2).save_pretrained(base)
    tok.save_pretrained(base)
    run = tmp_path / "run"
    metrics = train(TrainConfig(family=FamilyConfig(name="tiny", path=str(base), format="generic"), lora=LoraSettings(r=8, alpha=16),
                      data=DataConfig(path=str(data), eval_cases=2, max_length=2048),
                      training=TrainingConfig(max_steps=3, batch_size=4, learning_rate=3e-3, eval_every=3,
                                              logging_steps=1, eval_max_new_tokens=8, seed=0),
                      output_dir=str(run), wandb_mode="disabled"))
    assert (run / "adapter" / "adapter_model.safetensors").exists()
    # every training row fits: the converted schemas are not so long that rows are dropped
    assert metrics["train_examples"] == manifest["splits"]["train"] and metrics["dropped_too_long"] == 0
    assert len(metrics["loss_history"]) == 3

    model = HFModel(adapter=str(run / "adapter"), generation={"max_new_tokens": 16})
    out = tmp_path / "eval"
    summary = evaluate(model, str(data), out, limit=6, latency_cases=0, progress=False)
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    cases = min(6, len(dd["test"]))
    assert summary["cases"] == len(preds) == cases and json.loads((out / "summary.json").read_text())["cases"] == cases
    assert all(set(p["tools_offered"]) <= set(NAMES) or p["id"].endswith(".masked") for p in preds)
