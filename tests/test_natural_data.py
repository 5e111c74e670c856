"""Data that reads like users' requests over APIs as they are built: context sentences, details in sentences
of their own, objects and arrays of objects said in prose, long tool lists, and the statistics that
measure all of it (data_gen/discourse.py, data_gen/schema_driven/, data_gen/stats.py)."""

import json
import random
import re
from collections import Counter

import pytest

from data_gen.config import DataGenConfig
from data_gen.discourse import DOMAIN_CONTEXT, GENERIC_CONTEXT, around, follow_sentence, with_context
from data_gen.generate import generate
from data_gen.schema_driven.config import SchemaDataConfig
from data_gen.schema_driven.episodes import grounding_problem, structured
from data_gen.schema_driven.library import build_library, parse_blueprint
from data_gen.schema_driven.realise import object_pieces
from data_gen.schema_driven.samplers import Sampler, classify
from data_gen.schema_driven.source import GeneralSource
from data_gen.stats import FORM_LIKE, markdown, measure, sentences, shapes
from data_gen.stats import main as stats_main
from data_gen.surface import Piece
from toolcore.errors import ToolkitError
from toolcore.registry import load_registry
from toolcore.vocab import load_vocabulary

from .test_schema_driven import verified as kept
from .tiny_models import tiny_tokenizer


def source(**general) -> GeneralSource:
    top = {k: general.pop(k) for k in ("context_share",) if k in general}
    cfg = DataGenConfig(**top, schema_data=SchemaDataConfig(**{"share": 1.0, "bfcl_paths": [], **general}))
    return GeneralSource(cfg, load_registry(), load_vocabulary())


def test_context_sentences_hold_no_value_a_request_could_be_grounded_by():
    for text in GENERIC_CONTEXT + [t for pool in DOMAIN_CONTEXT.values() for t in pool]:
        assert not re.search(r"\d", text), text
        assert text.endswith((".", "?")) and text[0].isupper()
    rng = random.Random(0)
    assert with_context("set a timer", "set_timer", rng, 0.0, spoken=False) == "set a timer"
    assert with_context("set a timer", "set_timer", rng, 1.0, spoken=True) == "set a timer"
    text = with_context("set a timer for 5 minutes", "set_timer", random.Random(1), 1.0, spoken=False)
    assert sentences(text) == 2 and text.endswith("set a timer for 5 minutes.") and text == text.lower()


def test_a_detail_in_its_own_sentence_names_its_parameter():
    kind = classify("delivery_date", {"type": "string", "format": "date", "description": "Latest delivery date"}, {})
    rng = random.Random(3)
    for _ in range(20):
        said = follow_sentence(kind, [Piece("March 3, 2026", is_slot=True)], rng)
        text = "".join(p.text for p in said)
        assert "latest delivery date" in text.lower() and "March 3, 2026" in text
    whole = around("book it", "We're planning a trip.", [said], lower=False)
    assert whole.startswith("We're planning a trip. book it. ") and whole.endswith(text) and sentences(whole) == 3


def test_objects_are_said_in_prose_and_every_value_stays_grounded():
    tool = parse_blueprint("po: Create a purchase order | items:obj{product:str=Product name; quantity:int(1..99)=Units "
                           "to order; unit_cost:num=Cost per unit}[]=Items; to:obj{street:str=Street and number; "
                           "city:str=City; postal_code:str=Postal code}=Delivery address")
    assert tool.properties["items"]["items"]["properties"]["quantity"] == {
        "type": "integer", "minimum": 1, "maximum": 99, "description": "Units to order"}
    sampler = Sampler(load_vocabulary(), 0.15)
    kinds = {k: classify(k, s, tool.parameters) for k, s in tool.properties.items()}
    rng = random.Random(0)
    said_counts = Counter()
    for _ in range(40):
        address = sampler.draw(kinds["to"], rng, False)
        text = "".join(p.text for p in object_pieces(kinds["to"], address, rng, sampler.alias))
        # an address is said as its lines, and its street never carries a city of its own
        assert text.count(", ") >= len(address) - 1 and "," not in address["street"]
        assert not grounding_problem(kinds["to"], address, text.lower(), sampler.alias)
        item = sampler.draw(kinds["items"].items, rng, False)
        text = "".join(p.text for p in object_pieces(kinds["items"].items, item, rng, sampler.alias))
        assert not grounding_problem(kinds["items"].items, item, text.lower(), sampler.alias)
        said_counts[bool(re.search(r"\d+ (?:x|of|units of) ", text) or " x " in text)] += 1
    assert said_counts[True] >= 20          # "3 x rain jacket", "16 units of water bottle"


def test_common_api_fields_get_values_of_their_kind():
    sampler = Sampler(load_vocabulary(), 0.15)
    rng = random.Random(1)

    def draw(name, desc):
        return sampler.draw(classify(name, {"type": "string", "description": desc}, {}), rng, False)

    assert re.fullmatch(r"[A-Z][a-z]+/[A-Za-z_]+", draw("time_zone", "IANA time zone"))
    assert re.fullmatch(r"\d+\.\d+\.\d+", draw("version", "Release version"))
    assert " " not in draw("first_name", "Given name") and draw("first_name", "Given name")[0].isupper()
    assert re.fullmatch(r"[A-Z0-9]+", draw("promo_code", "Promotion code")) and not draw("promo_code", "Promotion code").isdigit()
    assert draw("origin_postal_code", "Postal code it ships from") not in {e.value for e in load_vocabulary()["cities"]}


def test_the_library_holds_apis_as_they_are_built():
    lib = build_library(400)
    names = [t.tool.name for t in lib]
    assert any(re.fullmatch(r"[A-Z][A-Za-z]+_[a-z]+", n) for n in names)           # Resource_method
    assert any("." in n for n in names) and any(re.search(r"[a-z][A-Z]", n) for n in names)
    flags = [shapes({"parameters": t.tool.parameters}) for t in lib]
    assert sum(a for a, _, _ in flags) >= 25 and sum(n for _, _, n in flags) >= 3


def test_long_lists_and_structured_tools_are_drawn_as_configured():
    src = source(long_list_share=1.0, shapes={"multiple": 1.0})
    drafts = kept(src, 120)
    assert len(drafts) > 100
    g = src.g
    for d in drafts:
        assert g.max_offered < len(d.conversation.tools) <= g.long_list_max
    # two to four tools of the request's own domain beside the right one, where the pool has them
    same = [sum(o.domain == d.calls[0].prepared.domain for o in src.pools[False] if o.tool.name in
                {t.name for t in d.conversation.tools}) for d in drafts if not d.masked]
    assert sum(s >= 3 for s in same) > len(same) / 2

    def share(weight):
        ds = kept(source(structured_weight=weight, shapes={"simple": 1.0}), 400)
        return sum(structured(d.calls[0].prepared) for d in ds) / len(ds)

    assert share(3.0) > share(1.0) + 0.08


def test_requests_spread_over_sentences_and_stay_verified():
    plain = kept(source(context_share=0.0, follow_share=0.0, shapes={"simple": 1.0}, mask_share=0.0), 200)
    prose = kept(source(context_share=1.0, follow_share=1.0, shapes={"simple": 1.0}, mask_share=0.0), 200)
    assert len(prose) > 190          # check() re-verified every value of every request
    written = [d for d in prose if d.style == "text"]
    assert all(sentences(d.user_text) >= 2 for d in written)

    def mean(ds):
        return sum(sentences(d.user_text) for d in ds) / len(ds)

    assert mean(written) > mean(plain) + 1.0


def test_stats_measure_requests_tools_and_prompts(tmp_path, capsys):
    assert sentences("Book a table for six at Osteria Lupa on Friday around 8. One of us is vegetarian.") == 2
    assert sentences("Convert 3.5 km, e.g. for a run") == 1
    assert FORM_LIKE.search("add a task with the priority set to high")
    assert not FORM_LIKE.search("Translate this into Spanish: the heater stopped working")
    assert shapes({"parameters": {"type": "object", "properties": {"lines": {"type": "array", "items": {
        "type": "object", "properties": {"sku": {"type": "string"}}}}}}}) == (True, True, False)
    assert shapes({"parameters": {"type": "object", "properties": {"a": {"type": "object", "properties": {
        "b": {"type": "object", "properties": {"c": {"type": "string"}}}}}}}}) == (False, True, True)

    data = tmp_path / "ds"
    generate(DataGenConfig(output_dir=str(data), num_conversations=300, shard_size=300, schema_data=SchemaDataConfig(
        share=0.6, bfcl_paths=[])), progress=False)
    from data_gen.stats import dataset_rows, request

    rows = dataset_rows(str(data), "train", 200, 0)
    assert rows and all(r["num_calls"] > 0 for r in rows)
    every = dataset_rows(str(data), "train", 10_000, 0)
    schema, builtin = (dataset_rows(str(data), "train", 10_000, 0, kind) for kind in ("schema", "builtin"))
    assert schema and builtin and len(schema) + len(builtin) == len(every)
    assert all("-g." in r["id"] for r in schema) and not any("-g." in r["id"] for r in builtin)
    texts = [request(r)[0] for r in rows]
    tok = tiny_tokenizer(texts + [json.dumps(json.loads(r["tools"])) for r in rows[:50]], vocab_size=500)
    table = measure({"gen": (texts, rows), "people": (["One. Two sentences here."], None)}, tokenizer=tok)
    gen = table["gen"]
    assert gen["requests"] == len(rows) and gen["prompt_tokens_max"] >= gen["prompt_tokens_mean"] > 50
    assert 0 <= gen["form_like_share"] < 0.3 and gen["sentences_mean"] > 1.0
    assert table["people"] == {"requests": 1, "median_chars": 24, "sentences_mean": 2.0, "form_like_share": 0.0}
    assert "| request length, median characters |" in markdown(table)

    ref = tmp_path / "ref.txt"
    ref.write_text("# a comment\nWe're moving offices. Can you book the freight elevator on Monday?\n")
    stats_main([str(data), "--reference", str(ref), "--no-tokens", "--sample", "50", "--json", str(tmp_path / "s.json")])
    out = capsys.readouterr().out
    assert "ref.txt" in out and json.loads((tmp_path / "s.json").read_text())["ref.txt"]["sentences_mean"] == 2.0
    stats_main([str(data), "--rows", "schema", "--no-tokens", "--sample", "20", "--json", str(tmp_path / "g.json")])
    assert json.loads((tmp_path / "g.json").read_text())[f"{data} (train, schema rows)"]["requests"] == 20
    builtin_only = tmp_path / "builtin_only"
    generate(DataGenConfig(output_dir=str(builtin_only), num_conversations=40, shard_size=40, schema_data=SchemaDataConfig(
        share=0.0, bfcl_paths=[])), progress=False)
    with pytest.raises(SystemExit, match="no schema rows with calls"):
        stats_main([str(builtin_only), "--rows", "schema", "--no-tokens"])
    with pytest.raises(SystemExit, match="reference file does not exist"):
        stats_main([str(data), "--reference", str(tmp_path / "absent.txt"), "--no-tokens"])
    with pytest.raises(ToolkitError, match="context_share"):
        DataGenConfig(context_share=1.5)
    with pytest.raises(ToolkitError, match="long_list_max"):
        SchemaDataConfig(long_list_max=3)
