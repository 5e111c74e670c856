"""Bring your own data: every layout the converter reads, its checks and rejection counts, seeded splits,
the exports data_gen writes coming back unchanged, the cache train and eval share, mixing sources for
training, a real `python -m train` run on a user's OpenAI file, and hostile rows (hypothesis)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from datasets import Dataset, load_from_disk
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from data_gen.config import DataGenConfig
from data_gen.generate import generate
from toolcore.convert import ConvertConfig, convert, detect_layout, resolve_dataset
from toolcore.convert.pipeline import RowConverter
from toolcore.errors import ToolkitError
from toolcore.suites import ConversationReader, load_cases

from .tiny_models import tiny_llama, tiny_tokenizer

ROOT = Path(__file__).resolve().parents[1]
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather for a city",
    "parameters": {"type": "object", "properties": {"location": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
                   "required": ["location"]}}}
ALARM = {"type": "function", "function": {
    "name": "set_alarm", "description": "Set an alarm",
    "parameters": {"type": "object", "properties": {"hour": {"type": "integer"}, "minute": {"type": "integer"}},
                   "required": ["hour", "minute"]}}}


def openai_row(text: str, calls: list[tuple[str, object]] = (), answer: str = "Done.", tools=(WEATHER, ALARM)) -> dict:
    """A chat in OpenAI's format; arguments given as a string stay a string (the wire format)."""
    msgs: list[dict] = [{"role": "user", "content": text}]
    if calls:
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}} for i, (n, a) in enumerate(calls)]})
        msgs += [{"role": "tool", "tool_call_id": f"call_{i}", "content": '{"ok": true}'} for i in range(len(calls))]
    msgs.append({"role": "assistant", "content": answer})
    return {"messages": msgs, "tools": list(tools)}


def good_rows(n: int = 6) -> list[dict]:
    cities = ["Paris", "Oslo", "Lima", "Quito", "Hanoi", "Accra", "Bern", "Riga", "Baku", "Doha", "Male", "Apia"]
    rows = []
    for i in range(n):
        city = cities[i % len(cities)] + ("" if i < len(cities) else f" {i}")
        if i % 3 == 0:   # arguments as an object
            rows.append(openai_row(f"is it raining over {city} these days", [("get_weather", {"location": city})], f"Sunny in {city}."))
        elif i % 3 == 1:  # arguments as a JSON string, two calls
            rows.append(openai_row(f"weather in {city} in celsius and wake me at {i % 12 + 1}",
                                   [("get_weather", json.dumps({"location": city, "unit": "c"})),
                                    ("set_alarm", json.dumps({"hour": i % 12 + 1, "minute": 0}))]))
        else:             # no call
            rows.append(openai_row(f"tell me a fun fact number {i}", answer=f"Fact {i}: octopuses have three hearts."))
    return rows


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def run(tmp_path: Path, source, name: str = "out", **kw) -> dict:
    return convert(ConvertConfig(source=str(source), output_dir=str(tmp_path / name), **kw))


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLKIT_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / "ds"
    generate(DataGenConfig(output_dir=str(out), num_conversations=300, shard_size=300), progress=False)
    return out


# --- the exports data_gen writes come back as the same conversations -------------------------------------


@pytest.mark.parametrize("kind", ["openai", "sharegpt"])
def test_data_gen_exports_round_trip(generated, tmp_path, kind):
    original = load_from_disk(str(generated))
    manifest = run(tmp_path, generated / "export" / f"train.{kind}.jsonl")
    assert manifest["source"]["layout"] == kind and manifest["source"]["layout_detected"]
    assert manifest["rejections"] == {} and manifest["kept"] == len(original["train"])
    back = load_from_disk(str(tmp_path / "out"))
    keys = ("messages", "tools", "expected_calls", "user_text", "history", "num_calls", "tool_names")
    want = sorted(tuple(r[k] for k in keys) for r in original["train"])
    got = sorted(tuple(r[k] for k in keys) for s in back.values() for r in s)
    assert got == want


# --- rejections are counted by reason, never raised ------------------------------------------------------


def broken_file(tmp_path: Path, truncated_line: bool = True) -> Path:
    rows = good_rows(6) + [
        openai_row("what's it like in Rome", [("get_wether", {"location": "Rome"})]),           # not offered
        openai_row("wake me at ten", [("set_alarm", {"hour": "ten", "minute": 0})]),            # schema
        openai_row("weather in Nice", [("get_weather", '{"location": "Ni')]),                   # truncated arguments
        openai_row("hello there", answer="Hi!", tools=[{"name": "lights", "parameters": {
            "type": "object", "properties": {"room": {"type": "strin"}}}}]),                     # schema of a tool
        good_rows(1)[0],                                                                          # a duplicate
        openai_row("What is the weather in San Francisco?", [("get_weather", {"location": "San Francisco"})]),  # hackathon 30
    ]
    if truncated_line:
        rows.append('{"messages": [{"role": "user", "content": "set a tim')
    return write_jsonl(tmp_path / "broken.jsonl", rows)


@pytest.mark.parametrize("truncated_line", [False, True])
def test_broken_calls_are_counted_rejections(tmp_path, truncated_line):
    manifest = run(tmp_path, broken_file(tmp_path, truncated_line))
    want = {"not_offered": 1, "schema": 1, "arguments_not_json": 1, "bad_tool_schema": 1, "duplicate": 1,
            "decontaminated:exact": 1} | ({"malformed_json": 1} if truncated_line else {})
    assert manifest["rejections"] == want
    assert manifest["kept"] == 6 and manifest["rows_read"] == 6 + len(want)
    assert sum(manifest["splits"].values()) == 6 and manifest["created_splits"] == ["validation", "test"]
    assert manifest["decontamination"]["dropped"] == 1
    assert "get_wether" in manifest["rejection_examples"]["not_offered"]
    assert manifest["total"]["by_tool"] == {"get_weather": 4, "set_alarm": 2}
    assert manifest["total"]["by_num_calls"] == {"0": 2, "1": 2, "2": 2}
    assert manifest["total"]["no_tool_share"] == round(2 / 6, 4)
    assert manifest["source"]["content_sha256_16"] and manifest["code_version"]["code_hash"]
    assert (tmp_path / "out" / "manifest.json").exists()
    assert not list(tmp_path.glob(".out.tmp-*"))        # written to a temporary folder, then renamed


def test_arguments_as_strings_and_objects_parse_the_same(tmp_path):
    run(tmp_path, write_jsonl(tmp_path / "a.jsonl", good_rows(6)))
    rows = [r for s in load_from_disk(str(tmp_path / "out")).values() for r in s]
    calls = {c["name"]: c["arguments"] for r in rows for c in json.loads(r["expected_calls"])}
    assert calls["get_weather"]["location"] in ("Paris", "Oslo", "Hanoi", "Bern") and isinstance(calls["set_alarm"]["hour"], int)
    tool_turns = [m for r in rows for m in json.loads(r["messages"]) if m["role"] == "tool"]
    assert tool_turns and all(m["name"] in ("get_weather", "set_alarm") for m in tool_turns)   # names from tool_call_id


def test_splits_are_seeded_and_kept_when_the_source_has_them(tmp_path):
    src = write_jsonl(tmp_path / "many.jsonl", good_rows(60))
    ids = lambda name: {s: d["id"] for s, d in load_from_disk(str(tmp_path / name)).items()}  # noqa: E731
    run(tmp_path, src, "a")
    run(tmp_path, src, "b")
    run(tmp_path, src, "c", seed=1)
    assert ids("a") == ids("b") != ids("c")
    assert {s: len(v) for s, v in ids("a").items()} == {"train": 54, "validation": 3, "test": 3}
    # a folder of data files: datasets.load_dataset, the call that reads hub datasets; its splits are kept
    folder = tmp_path / "hub_like"
    folder.mkdir()
    write_jsonl(folder / "train.jsonl", good_rows(40))
    write_jsonl(folder / "test.jsonl", [openai_row(f"weather in Test City {i}", [("get_weather", {"location": f"T{i}"})])
                                        for i in range(5)])
    manifest = run(tmp_path, folder, "d")
    assert manifest["source"]["kind"] == "load_dataset" and manifest["created_splits"] == ["validation"]
    assert manifest["splits"] == {"train": 38, "validation": 2, "test": 5}


def test_rerun_is_reused_and_another_source_is_refused(tmp_path):
    src = write_jsonl(tmp_path / "a.jsonl", good_rows(6))
    run(tmp_path, src)
    assert run(tmp_path, src).get("reused")
    other = write_jsonl(tmp_path / "b.jsonl", good_rows(9))
    with pytest.raises(ToolkitError, match="another source or config"):
        run(tmp_path, other)
    assert run(tmp_path, other, overwrite=True)["kept"] == 9


# --- the other layouts ------------------------------------------------------------------------------------


def test_sharegpt_llama_factory(tmp_path):
    tools = json.dumps([WEATHER["function"]])
    rows = [{"conversations": [{"from": "human", "value": f"weather in Rome {i}?"},
                               {"from": "function_call", "value": json.dumps({"name": "get_weather", "arguments": {"location": "Rome"}})},
                               {"from": "observation", "value": '{"temp": 20}'},
                               {"from": "gpt", "value": "20 degrees."}],
             "tools": tools, "system": "You are helpful."} for i in range(3)]
    rows.append({"conversations": [{"from": "human", "value": "two"},
                                   {"from": "function_call", "value": "[{\"name\": \"get_weather\", \"arguments\": {\"location\": \"A\"}}, "
                                                                      "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"B\"}}]"},
                                   {"from": "observation", "value": "1"}, {"from": "observation", "value": "2"},
                                   {"from": "gpt", "value": "ok"}], "tools": tools, "system": ""})
    rows.append({"conversations": [{"from": "human", "value": "x"}, {"from": "function_call", "value": "{\"name\": "}],
                 "tools": tools, "system": ""})
    manifest = run(tmp_path, write_jsonl(tmp_path / "s.jsonl", rows))
    assert manifest["source"]["layout"] == "sharegpt" and manifest["kept"] == 4
    assert manifest["rejections"] == {"call_not_json": 1}
    rows = [r for s in load_from_disk(str(tmp_path / "out")).values() for r in s]
    two = next(r for r in rows if r["user_text"] == "two")
    assert [m.get("name") for m in json.loads(two["messages"]) if m["role"] == "tool"] == ["get_weather", "get_weather"]
    assert json.loads(rows[0]["messages"])[0] == {"role": "system", "content": "You are helpful."}


def test_xlam_apigen_tools_become_json_schemas(tmp_path):
    tools = [{"name": "get_weather", "description": "Weather", "parameters": {
        "location": {"description": "City", "type": "str"},
        "unit": {"description": "c or f", "type": "str, optional", "default": "c"},
        "days": {"description": "Days", "type": "List[int]", "default": [1]}}}]
    rows = [{"id": i, "query": f"Weather in Lyon for day {i}?", "tools": json.dumps(tools),
             "answers": json.dumps([{"name": "get_weather", "arguments": {"location": "Lyon", "days": [i]}}])} for i in range(4)]
    rows.append({"id": 9, "query": "bad", "tools": json.dumps(tools), "answers": '[{"name": "get_weather", "arguments": {"unit": "c"}}]'})
    rows.append({"id": 10, "query": "odd", "tools": json.dumps([{"name": "f", "parameters": {"g": {"type": "Callable"}}}]),
                 "answers": "[]"})
    manifest = run(tmp_path, write_jsonl(tmp_path / "x.jsonl", rows))
    assert manifest["source"]["layout"] == "xlam" and manifest["kept"] == 4
    assert manifest["rejections"] == {"schema": 1, "bad_tool_schema": 1}     # location is required
    row = load_from_disk(str(tmp_path / "out"))["train"][0]
    params = json.loads(row["tools"])[0]["parameters"]
    assert params["required"] == ["location"] and params["properties"]["days"]["type"] == "array"


def test_hermes_tools_from_the_system_prompt_or_a_column(tmp_path):
    prompt = ("You are a function calling AI model. You are provided with function signatures within <tools></tools> "
              f"XML tags. <tools> {json.dumps([WEATHER])} </tools> Return calls as <tool_call>{{...}}</tool_call>.")
    rows = [{"conversations": [
        {"from": "system", "value": prompt}, {"from": "human", "value": f"Weather in Oslo, day {i}?"},
        {"from": "gpt", "value": '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Oslo"}}\n</tool_call>'},
        {"from": "tool", "value": '<tool_response>\n{"name": "get_weather", "content": {"temp": 3}}\n</tool_response>'},
        {"from": "gpt", "value": "3 degrees in Oslo."}]} for i in range(3)]
    rows.append({"conversations": [{"from": "system", "value": prompt}, {"from": "human", "value": "broken"},
                                   {"from": "gpt", "value": '<tool_call>\n{"name": "get_weather", "arguments": {'}]})
    manifest = run(tmp_path, write_jsonl(tmp_path / "h.jsonl", rows))
    assert manifest["source"]["layout"] == "hermes" and manifest["kept"] == 3
    assert manifest["rejections"] == {"call_not_json": 1}
    msgs = json.loads(load_from_disk(str(tmp_path / "out"))["train"][0]["messages"])
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "assistant"]     # the tool prompt is dropped
    assert msgs[2]["content"].startswith('{"name": "get_weather"') and msgs[2]["name"] == "get_weather"
    # OpenAI-style turns with a tools column, as a Parquet file
    chat = [{"messages": [{"role": "user", "content": f"Weather in Rome {i}"},
                          {"role": "assistant", "content": '<tool_call>{"name": "get_weather", "arguments": {"location": "Rome"}}</tool_call>'}],
             "tools": json.dumps([WEATHER])} for i in range(3)]
    Dataset.from_list(chat).to_parquet(str(tmp_path / "h.parquet"))
    manifest = run(tmp_path, tmp_path / "h.parquet", "pq")
    assert manifest["source"]["layout"] == "hermes" and manifest["kept"] == 3


def test_layout_detection_names_what_it_saw(tmp_path):
    assert detect_layout(["query", "tools", "answers"], []) == "xlam"
    with pytest.raises(ToolkitError, match=r"unknown layout: columns \['completion', 'prompt'\].*known layouts: openai"):
        detect_layout(["prompt", "completion"], [])
    mixed = [openai_row("a", [("get_weather", {"location": "x"})]),
             {"messages": [{"role": "user", "content": "b"}, {"role": "assistant", "content": "<tool_call>{}</tool_call>"}]}]
    with pytest.raises(ToolkitError, match="ambiguous layout") as e:
        run(tmp_path, write_jsonl(tmp_path / "m.jsonl", mixed))
    assert e.value.field == "layout" and "layout=hermes or layout=openai" in str(e.value)
    # naming the layout settles it: rows that do not fit it are counted, not crashed on
    manifest = run(tmp_path, f"openai:{tmp_path / 'm.jsonl'}", "named")
    assert manifest["source"]["layout"] == "openai" and manifest["rejections"] == {"call_in_text": 1}


def test_saved_dataset_folder_and_bad_sources(tmp_path):
    Dataset.from_list([{"messages": json.dumps(r["messages"]), "tools": json.dumps(r["tools"])} for r in good_rows(6)]
                      ).save_to_disk(str(tmp_path / "saved"))
    manifest = run(tmp_path, tmp_path / "saved")
    assert manifest["source"]["kind"] == "saved" and manifest["kept"] == 6
    with pytest.raises(ToolkitError, match="does not exist"):
        run(tmp_path, tmp_path / "nope.jsonl", "x")
    (tmp_path / "data.csv").write_text("a,b\n")
    with pytest.raises(ToolkitError, match="unsupported file type"):
        run(tmp_path, tmp_path / "data.csv", "x")


# --- train and eval read any source through the same cache ----------------------------------------------


def test_train_and_eval_share_one_conversion(tmp_path):
    src = write_jsonl(tmp_path / "mine.jsonl", good_rows(60))
    folder = resolve_dataset(str(src))
    assert folder.parent == tmp_path / "cache" / "converted" and folder.name.startswith("mine.jsonl-")
    assert resolve_dataset(str(src)) == folder
    cases = load_cases(str(src), split="test")
    test_rows = load_from_disk(str(folder))["test"]
    assert [c.id for c in cases] == test_rows["id"] and len(cases) == 3
    assert len(load_cases("hackathon30")) == 30                       # suites are still suites
    with pytest.raises(ToolkitError, match="field 'suite'.*does not exist"):
        load_cases(str(tmp_path / "nope.jsonl"))
    broken = write_jsonl(tmp_path / "all_bad.jsonl", ['{"messages": 1}', '{"messages": [}'])
    with pytest.raises(ToolkitError, match="no conversation was kept"):
        resolve_dataset(str(broken))


def test_mix_draws_each_source_by_its_share(generated, tmp_path):
    from train.config import DataConfig, MixSource
    from train.data import source_rows, tokenize_split

    mine = write_jsonl(tmp_path / "mine.jsonl", good_rows(60))
    cfg = DataConfig(path=str(generated), mix=[MixSource(path=str(mine), weight=0.25)],
                     category_weights={"single": 1, "multi2": 1, "multi3": 1, "chitchat": 1, "knowledge": 1, "unavailable": 1,
                                       "ask_back": 0})
    assert source_rows(cfg, "train", 40) == [(str(generated), 30), (str(mine), 10)]
    assert source_rows(cfg, "train", None) == [(str(generated), 162), (str(mine), 54)]   # mine's 54 train rows bound it
    assert source_rows(cfg, "validation", 5) == [(str(generated), 5)]
    with pytest.raises(ToolkitError, match="not enough training rows"):
        source_rows(cfg, "train", 400)
    texts = [json.dumps(r) for r in good_rows(20)]
    tok = tiny_tokenizer(texts, vocab_size=400)
    from toolcore.formats import get_format

    fmt = get_format("generic")
    tok.add_special_tokens({"additional_special_tokens": list(fmt.tool_tokens)})
    ds, dropped = tokenize_split(cfg, "train", tok, fmt, 24)   # 18 rows, 3 a category, and 6 of mine in its own mix
    assert len(ds) + dropped == 24
    # a converted source keeps its own mix under a recipe's data_gen weights, and follows weights naming no_call
    # as far as its rows allow (54 train rows: 18 of each category; 2:1:1 takes all 18 no_call + 9 + 9)
    from train.data import category_mix

    own = DataConfig(path=str(mine), category_weights=cfg.category_weights)
    assert category_mix(own, str(mine), ["single", "no_call"]) == ({}, False)
    for_mine = DataConfig(path=str(mine), category_weights={"single": 1, "multi2": 1, "multi3": 1, "no_call": 2})
    assert category_mix(for_mine, str(mine), ["single", "no_call"]) == ({"single": 1, "no_call": 2}, False)
    ds, dropped = tokenize_split(for_mine, "train", tok, fmt, 1000)
    assert len(ds) + dropped == 36
    with pytest.raises(ToolkitError, match="data.mix"):
        DataConfig(mix=[MixSource(path="a", weight=0.7), MixSource(path="b", weight=0.6)])
    # the command-line form the config documents
    from hydra import compose, initialize_config_dir
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    from train.config import TrainConfig

    ConfigStore.instance().store(name="train_schema", node=TrainConfig)
    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        composed = compose(config_name="train", overrides=["+recipe=smollm2_cpu_lora", "data.mix=[{path: my.jsonl, weight: 0.3}]"])
    assert OmegaConf.to_object(composed).data.mix == [MixSource(path="my.jsonl", weight=0.3)]


@pytest.fixture(scope="module")
def tiny_base(generated, tmp_path_factory):
    from toolcore.formats import get_format

    read = ConversationReader()
    fmt = get_format("generic")
    texts = [fmt.render_text(read(r)) for r in load_from_disk(str(generated))["train"].select(range(200))]
    tok = tiny_tokenizer(texts, vocab_size=600)
    base = tmp_path_factory.mktemp("base") / "tiny"
    tiny_llama(len(tok), hidden=32, layers=1).save_pretrained(base)
    tok.save_pretrained(base)
    return base


def test_train_cli_on_a_users_openai_file(generated, tiny_base, tmp_path):
    """`python -m train +recipe=smollm2_cpu_lora data.path=<an OpenAI JSONL>`, the recipe's model swapped for
    a tiny one: the file is converted once and the run records the converted dataset's manifest hash."""
    import hashlib

    users_file = generated / "export" / "train.openai.jsonl"
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "train", "+recipe=smollm2_cpu_lora", f"family.path={tiny_base}",
           f"data.path={users_file}", "training.max_steps=2", "training.batch_size=2", "data.eval_cases=2",
           "training.eval_max_new_tokens=8", "training.bf16_autocast=false", f"output_dir={out}", "wandb_mode=disabled"]
    env = dict(os.environ, TOOLKIT_CACHE=str(tmp_path / "cache"), OMP_NUM_THREADS="1")
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    metrics = json.loads((out / "metrics.json").read_text())
    converted = next((tmp_path / "cache" / "converted").glob("train.openai.jsonl-*"))
    assert metrics["steps"] == 2 and (out / "adapter" / "adapter_model.safetensors").exists()
    assert metrics["dataset_manifest_sha256_16"] == hashlib.sha256((converted / "manifest.json").read_bytes()).hexdigest()[:16]


# --- hostile rows: counted rejections, never an exception -----------------------------------------------

REASONS = {"malformed_row", "malformed_messages", "malformed_call", "unknown_role", "unsupported_content",
           "bad_tool_schema", "arguments_not_json", "arguments_not_object", "call_not_json", "call_in_text",
           "mixed_layout", "not_offered", "schema", "no_user_turn", "no_answer", "empty_user_turn",
           "empty_assistant_turn", "tool_result_without_call", "non_finite_number", "invalid_unicode", "too_deep",
           "too_long", "duplicate", "decontaminated:exact", "decontaminated:8gram"} | {
    f"roundtrip:{f}" for f in ("qwen2_5", "qwen3", "lfm2", "ovis2_5", "generic")}


def nested(depth: int):
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return value


HOSTILE = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3),
    st.just("x" * 300_000), st.integers(min_value=60, max_value=3000).map(nested),
    st.just('{"name": "get_weather", "arguments": {"loc'), st.just("[{"), st.just("<tool_call>{</tool_call>"),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
TEMPLATES = {
    "openai": openai_row("weather in Paris", [("get_weather", json.dumps({"location": "Paris"}))]),
    "sharegpt": {"conversations": [{"from": "human", "value": "weather in Paris"},
                                   {"from": "function_call", "value": json.dumps({"name": "get_weather", "arguments": {"location": "Paris"}})},
                                   {"from": "observation", "value": "sunny"}, {"from": "gpt", "value": "Sunny."}],
                 "tools": json.dumps([WEATHER["function"]]), "system": "hi"},
    "xlam": {"query": "weather in Paris", "tools": json.dumps([{"name": "get_weather", "parameters": {"location": {"type": "str"}}}]),
             "answers": json.dumps([{"name": "get_weather", "arguments": {"location": "Paris"}}])},
    "hermes": {"conversations": [{"from": "human", "value": "weather in Paris"},
                                 {"from": "gpt", "value": '<tool_call>{"name": "get_weather", "arguments": {"location": "Paris"}}</tool_call>'},
                                 {"from": "gpt", "value": "Sunny."}], "tools": [WEATHER]},
}


def paths(value, prefix=()):
    """Where a row can be changed: every field down to a depth of 8 (a hostile value may be far deeper)."""
    yield prefix
    if len(prefix) >= 8:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, prefix + (i,))


def replaced(value, path, new):
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = replaced(value[path[0]], path[1:], new)
    return copy


def truncated_json(row: dict, path, cut: int):
    """The JSON string at `path` (a tools / arguments / call string) cut short."""
    text = row
    for p in path:
        text = text[p]
    return replaced(row, path, text[:cut]) if isinstance(text, str) else row


CONVERTERS: dict[str, RowConverter] = {}


@pytest.mark.parametrize("layout", sorted(TEMPLATES))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(data=st.data())
def test_hostile_rows_are_counted_rejections(layout, data):
    if layout not in CONVERTERS:
        CONVERTERS[layout] = RowConverter(ConvertConfig(), layout)
    conv = CONVERTERS[layout]
    conv.seen.clear()
    template = TEMPLATES[layout]
    assert conv.convert_row(template, "t")[0] is not None            # the untouched row is kept
    conv.seen.clear()
    row = template
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(list(paths(row))))
        if data.draw(st.booleans()):
            row = truncated_json(row, path, data.draw(st.integers(0, 30)))
        else:
            row = replaced(row, path, data.draw(HOSTILE))
    rec, reason, detail = conv.convert_row(row, "fuzz")
    if rec is None:
        assert reason in REASONS, (reason, detail)
    else:                                    # what is kept loads back as a toolkit conversation
        json.dumps(rec, allow_nan=False).encode("utf-8")
        ConversationReader()(rec)


def short_and_shallow(v) -> bool:
    """What json.dumps can write (the deep lists of `nested` are written as text below)."""
    return not (isinstance(v, str) and len(v) >= 1000) and not (isinstance(v, list) and v and isinstance(v[0], list))


LINES = st.one_of(
    st.sampled_from([json.dumps(r) for r in good_rows(12)]),
    st.builds(lambda r, cut: json.dumps(r)[:cut], st.sampled_from(good_rows(3)), st.integers(1, 80)),
    st.just('{"messages": [{"role": "user", "content": NaN}], "tools": []}'),
    st.just('{"messages": "\\ud800", "tools": Infinity}'),
    st.just("[" * 5000 + "]" * 5000), st.just("3"), st.just('"a string row"'),
    st.builds(lambda k: json.dumps({"messages": k, "tools": k}), HOSTILE.filter(short_and_shallow)),
    # deep nesting written as text: json.dumps itself recurses past Python's limit above ~1000 levels
    st.integers(min_value=60, max_value=3000).map(lambda d: '{"messages": ' + "[" * d + '"x"' + "]" * d + ', "tools": []}'),
)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.one_of(LINES.map(str.encode), st.just(b"\xff\xfe{\"messages\": 1}")), min_size=1, max_size=12))
def test_hostile_files_are_counted_rejections(tmp_path_factory, lines):
    folder = tmp_path_factory.mktemp("fuzz")
    src = folder / "hostile.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    manifest = convert(ConvertConfig(source=f"openai:{src}", output_dir=str(folder / "out"), decontaminate_against=[]))
    assert manifest["rows_read"] == len(lines)
    assert manifest["kept"] + sum(manifest["rejections"].values()) == len(lines)
    assert set(manifest["rejections"]) <= REASONS | {"malformed_json"}
