"""BFCL as a suite and a metric: the importer (toolcore/bfcl.py), the AST checker (toolcore/bfcl_metric.py),
`python -m eval ... metric=bfcl_ast` end to end, and resuming a killed run (eval/resume.py).

Every BFCL-format case here is made up for these tests (tests/fixtures/bfcl/ and the table below);
none is copied from BFCL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runtime.models import SymbolicModel
from eval.runner import evaluate
from toolcore.bfcl import (category_of, expected_call, is_bfcl_file, load_bfcl_cases, normalize_schema,
                           suite_user_texts)
from toolcore.bfcl_metric import check_case, standardize
from toolcore.errors import ToolkitError
from toolcore.schema import ToolCall
from toolcore.suites import load_suite

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "bfcl"
CATEGORIES = ["simple", "multiple", "parallel", "parallel_multiple", "irrelevance", "live_simple", "live_multiple",
              "live_parallel", "live_irrelevance"]


def question_file(cat: str) -> Path:
    return FIX / f"BFCL_v3_{cat}.json"


def answer_file(cat: str) -> Path | None:
    path = FIX / "possible_answer" / f"BFCL_v3_{cat}.json"
    return path if path.exists() else None


# ----- the checker, rule by rule ---------------------------------------------------------------------
def fn(name: str, props: dict, required: list[str]) -> dict:
    return {"name": name, "description": "", "parameters": {"type": "dict", "properties": props, "required": required}}


AREA = fn("geo.area", {"radius": {"type": "float"}, "unit": {"type": "string"}, "label": {"type": "string"},
                       "precise": {"type": "boolean"}}, ["radius"])
AREA_GT = [{"geo.area": {"radius": [2.0], "unit": ["cm", ""], "precise": ["", False]}}]
COUNT = fn("count", {"n": {"type": "integer"}, "name": {"type": "string"}}, ["n"])
TAGS = fn("tag", {"tags": {"type": "array", "items": {"type": "string"}},
                  "point": {"type": "tuple", "items": {"type": "float"}}}, [])
PREFS = fn("order", {"prefs": {"type": "dict", "properties": {"size": {"type": "string"}, "milk": {"type": "string"}}},
                     "items": {"type": "array", "items": {"type": "dict"}}}, [])
PREFS_GT = {"prefs": [{"size": ["large"], "milk": ["", "regular"]}], "items": ["", [{"item": ["latte"], "n": [2]}]]}
WEATHER = fn("get_weather", {"city": {"type": "string"}}, ["city"])
WEATHER_GT = [{"get_weather": {"city": ["Oslo"]}}, {"get_weather": {"city": ["Madrid"]}}]
VAR = fn("scale", {"factor": {"type": "integer"}}, ["factor"])


def call(tool: str, **args) -> ToolCall:
    return ToolCall(tool, args)


# (rule, category, functions, ground_truth, predicted calls, passes)
TABLE = [
    ("name matches", "simple", [AREA], AREA_GT, [call("geo.area", radius=2.0)], True),
    ("another name fails", "simple", [AREA], AREA_GT, [call("geo.volume", radius=2.0)], False),
    ("name is case-sensitive", "simple", [AREA], AREA_GT, [call("Geo.Area", radius=2.0)], False),
    ("unknown parameter fails", "simple", [AREA], AREA_GT, [call("geo.area", radius=2.0, color="red")], False),
    ("a schema parameter the answer does not list fails", "simple", [AREA], AREA_GT,
     [call("geo.area", radius=2.0, label="x")], False),
    ("unacceptable value fails", "simple", [AREA], AREA_GT, [call("geo.area", radius=3.0)], False),
    ("acceptable optional value passes", "simple", [AREA], AREA_GT,
     [call("geo.area", radius=2.0, unit="cm", precise=False)], True),
    ("optional left out where '' is acceptable", "simple", [AREA], AREA_GT, [call("geo.area", radius=2.0)], True),
    ("required parameter missing fails", "simple", [AREA], AREA_GT, [call("geo.area", unit="cm")], False),
    ("listed parameter without '' may not be left out", "simple", [AREA],
     [{"geo.area": {"radius": [2.0], "unit": ["cm"]}}], [call("geo.area", radius=2.0)], False),
    ("int accepted for float", "simple", [AREA], AREA_GT, [call("geo.area", radius=2)], True),
    ("float not accepted for int", "simple", [COUNT], [{"count": {"n": [3]}}], [call("count", n=3.0)], False),
    ("bool is not an int", "simple", [COUNT], [{"count": {"n": [1]}}], [call("count", n=True)], False),
    ("string for an int fails", "simple", [COUNT], [{"count": {"n": [3]}}], [call("count", n="3")], False),
    ("string for a bool fails", "simple", [AREA], AREA_GT, [call("geo.area", radius=2.0, precise="false")], False),
    ("strings: case, spaces and ,./-_*^ ignored", "simple", [COUNT],
     [{"count": {"n": [1], "name": ["New York, N.Y."]}}], [call("count", n=1, name="new-york ny")], True),
    ("strings: other punctuation counts", "simple", [COUNT], [{"count": {"n": [1], "name": ["Paris"]}}],
     [call("count", n=1, name="Paris!")], False),
    ("strings: single quotes read as double", "simple", [COUNT], [{"count": {"n": [1], "name": ['say "hi"']}}],
     [call("count", n=1, name="say 'hi'")], True),
    ("lists element by element, strings normalised", "simple", [TAGS], [{"tag": {"tags": [["Blue Sky", "red"]]}}],
     [call("tag", tags=["blue-sky", "RED"])], True),
    ("lists: order matters", "simple", [TAGS], [{"tag": {"tags": [["blue", "red"]]}}],
     [call("tag", tags=["red", "blue"])], False),
    ("lists: length matters", "simple", [TAGS], [{"tag": {"tags": [["blue", "red"]]}}], [call("tag", tags=["blue"])],
     False),
    ("lists: any acceptable list", "simple", [TAGS], [{"tag": {"tags": [["a"], ["b", "c"]]}}],
     [call("tag", tags=["b", "c"])], True),
    ("tuple given as a list", "simple", [TAGS], [{"tag": {"point": [[1.5, 2.0]]}}], [call("tag", point=[1.5, 2.0])],
     True),
    ("array items keep BFCL's strict item type (no int for float)", "simple", [TAGS],
     [{"tag": {"point": [[1.0, 2.0]]}}], [call("tag", point=[1, 2])], False),
    ("wrong item type fails", "simple", [TAGS], [{"tag": {"tags": [["1"]]}}], [call("tag", tags=[1])], False),
    ("dict: keys and values, strings normalised, optional key left out", "simple", [PREFS],
     [{"order": PREFS_GT}], [call("order", prefs={"size": "Large"})], True),
    ("dict: unknown key fails", "simple", [PREFS], [{"order": PREFS_GT}],
     [call("order", prefs={"size": "large", "sugar": "none"})], False),
    ("dict: missing required key fails", "simple", [PREFS], [{"order": PREFS_GT}],
     [call("order", prefs={"milk": "regular"})], False),
    ("dict: wrong value fails", "simple", [PREFS], [{"order": PREFS_GT}], [call("order", prefs={"size": "small"})],
     False),
    ("list of dicts in order", "simple", [PREFS], [{"order": PREFS_GT}],
     [call("order", prefs={"size": "large"}, items=[{"item": "Latte", "n": 2}])], True),
    ("list of dicts: count matters", "simple", [PREFS], [{"order": PREFS_GT}],
     [call("order", prefs={"size": "large"}, items=[{"item": "latte", "n": 2}, {"item": "tea", "n": 1}])], False),
    ("a variable-style answer is compared as given", "simple", [VAR], [{"scale": {"factor": ["k"]}}],
     [call("scale", factor="k")], True),
    ("a variable-style answer is not normalised", "simple", [VAR], [{"scale": {"factor": ["k"]}}],
     [call("scale", factor="K")], False),
    ("simple: two calls fail", "simple", [AREA], AREA_GT, [call("geo.area", radius=2.0)] * 2, False),
    ("simple: no call fails", "simple", [AREA], AREA_GT, [], False),
    ("multiple: the right one of several functions", "multiple", [COUNT, AREA], AREA_GT,
     [call("geo.area", radius=2)], True),
    ("multiple: the wrong function fails", "multiple", [COUNT, AREA], AREA_GT, [call("count", n=2)], False),
    ("multiple: an extra call fails", "multiple", [COUNT, AREA], AREA_GT,
     [call("geo.area", radius=2), call("count", n=2)], False),
    ("parallel: order-free", "parallel", [WEATHER], WEATHER_GT,
     [call("get_weather", city="madrid"), call("get_weather", city="Oslo")], True),
    ("parallel: too few calls", "parallel", [WEATHER], WEATHER_GT, [call("get_weather", city="Oslo")], False),
    ("parallel: too many calls", "parallel", [WEATHER], WEATHER_GT,
     [call("get_weather", city="Oslo"), call("get_weather", city="Madrid"), call("get_weather", city="Rome")], False),
    ("parallel: one call cannot answer two", "parallel", [WEATHER], WEATHER_GT,
     [call("get_weather", city="Oslo"), call("get_weather", city="Oslo")], False),
    ("parallel_multiple: different functions, any order", "parallel_multiple", [WEATHER, COUNT],
     [{"get_weather": {"city": ["Oslo"]}}, {"count": {"n": [4]}}],
     [call("count", n=4), call("get_weather", city="Oslo")], True),
    ("live_parallel follows the parallel rule", "live_parallel", [WEATHER], WEATHER_GT,
     [call("get_weather", city="Madrid"), call("get_weather", city="Oslo")], True),
    ("irrelevance: no call passes", "irrelevance", [WEATHER], [], [], True),
    ("irrelevance: any call fails", "irrelevance", [WEATHER], [], [call("get_weather", city="Oslo")], False),
    ("live_irrelevance: any call fails", "live_irrelevance", [WEATHER], [], [call("get_weather", city="x")], False),
    ("live_relevance: a call passes", "live_relevance", [WEATHER], [], [call("get_weather", city="x")], True),
    ("live_relevance: no call fails", "live_relevance", [WEATHER], [], [], False),
]


@pytest.mark.parametrize("rule,category,functions,truth,calls,passes", TABLE, ids=[row[0] for row in TABLE])
def test_ast_checker_rules(rule, category, functions, truth, calls, passes):
    why = check_case(category, functions, truth, calls)
    assert (why is None) == passes, why


def test_standardize_is_bfcls_normalisation():
    assert standardize("April 1, 2024") == standardize("april 1 2024") == "april12024"
    assert standardize("a*b^c/d-e_f.g") == "abcdefg"
    assert standardize("it's") == 'it"s'


# ----- the importer ----------------------------------------------------------------------------------
def test_bfcl_types_are_normalised_everywhere():
    schema = {"type": "dict", "properties": {
        "x": {"type": "float"}, "p": {"type": "tuple", "items": {"type": "float"}},
        "d": {"type": "dict", "properties": {"inner": {"type": "any"}}},
        "u": {"anyOf": [{"type": "float"}, {"type": "null"}]}, "l": {"type": ["float", "null"]}}}
    out = normalize_schema(schema)
    assert out["type"] == "object"
    props = out["properties"]
    # a float stays a float for the model (OpenAPI's format)
    floats = {"type": "number", "format": "float"}
    assert props["x"] == floats and props["p"] == {"type": "array", "items": floats}
    assert props["d"]["type"] == "object"
    assert set(props["d"]["properties"]["inner"]["type"]) == {"string", "number", "boolean", "object", "array", "null"}
    assert props["u"]["anyOf"][0] == floats and props["l"]["type"] == ["number", "null"]
    assert schema["properties"]["x"]["type"] == "float"          # the original is left as it was


def test_a_required_name_that_is_no_property_is_left_out_as_bfcls_own_files_need():
    # BFCL_v3_multiple_143 and _197 offer create_player_profile(player_name, _class) requiring "class"
    schema = {"type": "dict", "properties": {"player_name": {"type": "string"}, "_class": {"type": "string"}},
              "required": ["player_name", "class"]}
    assert normalize_schema(schema)["required"] == ["player_name"]
    assert schema["required"] == ["player_name", "class"]                     # the original, for the checker


def test_category_from_id_or_file_name():
    assert category_of("simple_0") == "simple"
    assert category_of("live_multiple_3-1-0") == "live_multiple"
    assert category_of("parallel_multiple_12") == "parallel_multiple"
    assert category_of("simple_python_4") == "simple_python"              # BFCL v4 names
    assert category_of("weird-id", "data/BFCL_v3_live_parallel.json") == "live_parallel"


def test_fixture_imports_with_verbatim_names_and_bfcl_types_kept_for_the_checker():
    cases = load_bfcl_cases(question_file("multiple"), answer_file("multiple"))
    assert [c.id for c in cases] == ["multiple_0", "multiple_1", "multiple_2"]
    assert [t.name for t in cases[0].tools] == ["units.convert_length", "units.convert_temperature"]
    assert cases[2].tools[0].name == "restaurant.book-table"
    assert cases[0].tools[1].properties["value"]["type"] == "number"            # what the model is shown
    assert cases[0].raw["function"][1]["parameters"]["properties"]["value"]["type"] == "float"   # what BFCL checks
    assert cases[0].raw["category"] == "multiple" and cases[0].difficulty == "easy"
    # call F1's expected call: first acceptable values, optional parameters ("" acceptable) left out
    assert cases[2].expected_calls == [ToolCall("restaurant.book-table", {"restaurant": "Luigi's", "party_size": 4,
                                                                          "time": "19:30"})]
    live = load_bfcl_cases(question_file("live_simple"), answer_file("live_simple"))
    roles = [m.role for m in live[0].conversation.messages]
    assert roles == ["system", "user"] and live[0].user_text.startswith("Change drink order 88")
    assert is_bfcl_file(question_file("simple")) and not is_bfcl_file("hackathon30")
    assert not is_bfcl_file(ROOT / "toolcore" / "suites" / "hackathon30.jsonl")


def test_unnested_turns_and_a_single_dict_ground_truth(tmp_path):
    q = tmp_path / "BFCL_v3_simple.json"
    q.write_text(json.dumps({"id": "simple_0", "question": [{"role": "user", "content": "factorial of 3"}],
                             "function": [fn("math.factorial", {"n": {"type": "integer"}}, ["n"])]}) + "\n")
    a = tmp_path / "answers.json"
    a.write_text(json.dumps({"id": "simple_0", "ground_truth": {"math.factorial": {"n": [3]}}}) + "\n")
    (case,) = load_bfcl_cases(q, a)
    assert case.user_text == "factorial of 3" and case.raw["ground_truth"] == [{"math.factorial": {"n": [3]}}]
    assert expected_call(case.raw["ground_truth"][0]) == ToolCall("math.factorial", {"n": 3})


def _one_line(e: pytest.ExceptionInfo) -> str:
    text = str(e.value)
    assert "\n" not in text
    return text


def test_bad_input_is_one_line_naming_file_line_and_field(tmp_path):
    q = tmp_path / "BFCL_v3_simple.json"
    good = question_file("simple").read_text().splitlines()
    q.write_text(good[0] + "\n{not json\n")
    with pytest.raises(ToolkitError) as e:
        load_bfcl_cases(q, answer_file("simple"))
    assert f"{q}:2" in _one_line(e) and "malformed JSON" in str(e.value)

    q.write_text("\n".join(good) + "\n")
    stray = tmp_path / "stray.json"
    stray.write_text(answer_file("simple").read_text() + json.dumps({"id": "simple_9", "ground_truth": []}) + "\n")
    with pytest.raises(ToolkitError) as e:
        load_bfcl_cases(q, stray)
    assert f"{stray}:4" in _one_line(e) and "simple_9" in str(e.value) and "field 'id'" in str(e.value)

    with pytest.raises(ToolkitError) as e:       # answers of another category: no answer for simple_0
        load_bfcl_cases(q, answer_file("parallel"))
    assert "simple_0" in _one_line(e) and "fix:" in str(e.value)

    with pytest.raises(ToolkitError) as e:
        load_bfcl_cases(q)
    assert f"{q}:1" in _one_line(e) and "answers=" in str(e.value)

    wrong = tmp_path / "wrong.json"
    wrong.write_text("\n".join(json.dumps({"id": f"simple_{i}", "ground_truth": [{"nope": {}}]}) for i in range(3)))
    with pytest.raises(ToolkitError) as e:
        load_bfcl_cases(q, wrong)
    assert f"{wrong}:1" in _one_line(e) and "'nope'" in str(e.value)


def test_irrelevance_needs_no_answers():
    cases = load_bfcl_cases(question_file("irrelevance"))
    assert len(cases) == 3 and all(c.expected_calls == [] for c in cases)


def test_metric_and_answers_mismatches_are_refused(tmp_path):
    with pytest.raises(ToolkitError) as e:
        evaluate(SymbolicModel(), "hackathon30", tmp_path / "a", metric="bfcl_ast", latency_cases=0, progress=False)
    assert "bfcl_ast" in _one_line(e)
    with pytest.raises(ToolkitError) as e:
        evaluate(SymbolicModel(), "hackathon30", tmp_path / "b", answers=str(answer_file("simple")), latency_cases=0,
                 progress=False)
    assert "answers=" in _one_line(e)
    with pytest.raises(ToolkitError) as e:
        evaluate(SymbolicModel(), str(question_file("simple")), tmp_path / "c", metric="bfcl_ast", latency_cases=0,
                 progress=False)
    assert "answers=" in _one_line(e)


def test_symbolic_baseline_on_every_fixture_category(tmp_path):
    """In process (fast): every category scores, and the symbolic parser's known failures show."""
    acc = {}
    for cat in CATEGORIES:
        answers = answer_file(cat)
        s = evaluate(SymbolicModel(), str(question_file(cat)), tmp_path / cat, answers=str(answers) if answers else None,
                     metric="bfcl_ast", latency_cases=0, progress=False)
        assert set(s["accuracy_by_category"]) == {cat} and s["metric"] == "bfcl_ast"
        assert s["variants"]["raw"]["accuracy_by_category"] == s["accuracy_by_category"]
        acc[cat] = s["accuracy"]
    # the rules know a few everyday tools (weather, alarms, timers, messages, music) and never call a tool
    # for chit-chat; made-up tools, German, and get_weather's unit (the hackathon's tool has none) are beyond them
    third = 0.3333
    assert acc == {"simple": third, "multiple": third, "parallel": third, "parallel_multiple": third,
                   "irrelevance": 1.0, "live_simple": 0.0, "live_multiple": third, "live_parallel": 0.0,
                   "live_irrelevance": 1.0}


# ----- through the real CLI --------------------------------------------------------------------------
def run_eval(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "eval", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "WANDB_MODE": "disabled"})


def test_cli_scores_a_bfcl_file_with_bfcl_ast(tmp_path):
    out = tmp_path / "pm"
    r = run_eval(f"suite={question_file('parallel_multiple')}", f"answers={answer_file('parallel_multiple')}",
                 "metric=bfcl_ast", "model=symbolic", f"output_dir={out}", "latency_cases=2")
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["accuracy_by_category"] == {"parallel_multiple": summary["accuracy"]}
    assert "f1" in summary and "f1_by_difficulty" in summary            # call F1 stays beside it
    lines = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert [x["id"] for x in lines] == [f"parallel_multiple_{i}" for i in range(3)]
    assert all(x["category"] == "parallel_multiple" and isinstance(x["bfcl_valid"], bool) for x in lines)
    assert "eval symbolic" in r.stderr                                   # the progress bar
    assert not (out / "partial").exists()

    r = run_eval(f"suite={question_file('irrelevance')}", "metric=bfcl_ast", "model=symbolic",
                 f"output_dir={tmp_path / 'irr'}", "latency_cases=0")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "irr" / "summary.json").read_text())["accuracy"] == 1.0


def test_cli_without_answers_is_one_line(tmp_path):
    r = run_eval(f"suite={question_file('simple')}", "metric=bfcl_ast", "model=symbolic",
                 f"output_dir={tmp_path / 'x'}")
    assert r.returncode == 2
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("error:") and "answers=" in err[0]


# ----- a killed run resumes ----------------------------------------------------------------------------
def big_suite(folder: Path, n: int = 120) -> tuple[Path, Path]:
    """n made-up BFCL cases (simple and irrelevance alike), a thousand-case live file in miniature."""
    q, a = folder / "BFCL_v3_mixed.json", folder / "answers.json"
    weather = fn("get_weather", {"location": {"type": "string"}}, ["location"])
    cities = ["Oslo", "Lima", "Kyiv", "Quito", "Perth", "Accra"]
    qs, ans = [], []
    for i in range(n):
        city = cities[i % len(cities)]
        if i % 3 == 2:
            qs.append({"id": f"irrelevance_{i}", "question": [[{"role": "user", "content": f"Tell me about {city}"}]],
                       "function": [weather]})
        else:
            qs.append({"id": f"simple_{i}", "question": [[{"role": "user", "content": f"weather in {city} please"}]],
                       "function": [weather]})
            ans.append({"id": f"simple_{i}", "ground_truth": [{"get_weather": {"location": [city]}}]})
    q.write_text("".join(json.dumps(x) + "\n" for x in qs))
    a.write_text("".join(json.dumps(x) + "\n" for x in ans))
    return q, a


TIMING_KEYS = {"latency_ms", "single_request_ms", "batched_latency_ms", "latency", "timing", "score",
               "mean_latency_ms"}


def without_timing(x):
    """Wall-clock figures differ between any two runs; everything else must be identical."""
    if isinstance(x, dict):
        return {k: without_timing(v) for k, v in x.items() if k not in TIMING_KEYS}
    if isinstance(x, list):
        return [without_timing(v) for v in x]
    return x


def outputs(folder: Path) -> tuple[list, dict]:
    preds = [without_timing(json.loads(x)) for x in (folder / "predictions.jsonl").read_text().splitlines()]
    summary = without_timing(json.loads((folder / "summary.json").read_text()))
    summary.pop("model", None)
    return preds, summary


def test_a_killed_run_resumes_without_redoing_finished_cases(tmp_path):
    q, a = big_suite(tmp_path)
    log = tmp_path / "predicted.log"
    common = [f"suite={q}", f"answers={a}", "metric=bfcl_ast", "model=symbolic",
              "model._target_=tests.slow_model.SlowSymbolicModel", "+model.delay_s=0.03", f"+model.log={log}",
              "batch_cases=10", "latency_cases=0"]
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "eval", *common, f"output_dir={out}"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 90
        while len(list((out / "partial").glob("batch-*.json"))) < 3:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.time() < deadline, "no batch was saved"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    saved = sorted((out / "partial").glob("batch-*.json"))
    assert 3 <= len(saved) < 12 and not (out / "summary.json").exists()
    finished = {i for f in saved for i in json.loads(f.read_text())["ids"]}

    # another configuration is refused (one line), and leaves the saved batches alone
    r = run_eval(*common, "limit=60", f"output_dir={out}")
    assert r.returncode == 2
    err = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(err) == 1 and "limit" in err[0] and "another configuration" in err[0]
    assert sorted((out / "partial").glob("batch-*.json")) == saved

    log.write_text("")
    r = run_eval(*common, f"output_dir={out}")
    assert r.returncode == 0, r.stderr
    assert f"resuming: {len(finished)} of 120 cases already predicted" in r.stderr
    again = set(log.read_text().split())
    assert again and not again & finished and len(again) == 120 - len(finished)
    assert not (out / "partial").exists()

    ref = tmp_path / "uninterrupted"
    r = run_eval(*common, f"output_dir={ref}")
    assert r.returncode == 0, r.stderr
    assert outputs(out) == outputs(ref)
    assert json.loads((ref / "summary.json").read_text())["cases"] == 120


# ----- decontamination covers imported suites --------------------------------------------------------------
def test_suite_user_texts_reads_bfcl_files_and_toolkit_suites():
    texts = suite_user_texts(question_file("live_simple"))
    assert "Wie ist das Wetter in Berlin?" in texts
    assert not any(t.startswith("You are a helpful assistant") for t in texts)      # system prompts are not users
    old = [m.content for case in load_suite("hackathon30") for m in case.conversation.messages if m.role == "user"]
    assert suite_user_texts("hackathon30") == old


def test_decontamination_against_a_bfcl_file():
    """data_gen and the converter build their Decontaminator with from_suites: a BFCL file is accepted there."""
    from toolcore.decontam import Decontaminator

    d = Decontaminator.from_suites(["hackathon30", str(question_file("parallel_multiple"))])
    assert d.reason("set a timer for 10 minutes and text anna saying i'm running late!") == "decontaminated:exact"
    assert d.reason("ok so bring two lattes and one croissant to table 5 right now") == "decontaminated:8gram"
    assert d.reason("set a timer for ten minutes") is None


def test_report_lists_bfcl_accuracy(tmp_path):
    from eval.report import render_markdown, load_run

    evaluate(SymbolicModel(), str(question_file("live_irrelevance")), tmp_path / "r", metric="bfcl_ast",
             latency_cases=0, progress=False)
    md = render_markdown([load_run(tmp_path / "r")], "t")
    assert "## BFCL accuracy" in md and "| model | suite | cases | accuracy | live_irrelevance |" in md
