"""The learned tool detector (toolcore/detector.py) and the router's veto built on it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from data_gen.config import DataGenConfig
from data_gen.generate import generate
from runtime.models import Prediction, RouterModel
from toolcore.detector import ToolDetector
from toolcore.errors import ToolkitError
from toolcore.schema import ToolCall
from toolcore.suites import cases_from_dataset, load_cases

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def detector_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("detector")
    generate(DataGenConfig(output_dir=str(root / "data"), num_conversations=1200, shard_size=1200), progress=False)
    out = root / "detector"
    run = subprocess.run([sys.executable, "-m", "train.detector", f"data.path={root / 'data'}", f"output_dir={out}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    return root, out


def test_threshold_keeps_the_validation_calls_it_promises(detector_dir):
    _, out = detector_dir
    facts = json.loads((out / "detector.json").read_text())
    assert 0 < facts["threshold"] <= 0.5
    assert facts["kept_calls"] >= 0.98                     # the recall it was fitted for
    assert facts["vetoed_non_calls"] > 0.5                 # and it does tell tools apart


def test_detector_separates_called_from_offered_tools_on_the_test_split(detector_dir):
    root, out = detector_dir
    det = ToolDetector.load(out)
    cases = cases_from_dataset(root / "data", "test")
    called, not_called = [], []
    for case, probs in zip(cases, det.probabilities_many([(c.user_text, [t.name for t in c.tools]) for c in cases])):
        names = {c.name for c in case.expected_calls}
        for tool, p in probs.items():
            (called if tool in names else not_called).append(p)
    from sklearn.metrics import roc_auc_score

    auc = roc_auc_score([1] * len(called) + [0] * len(not_called), called + not_called)
    assert auc > 0.95, auc
    assert np.mean(np.array(called) >= det.threshold) > 0.85   # 0.98 on validation; a small split here


class CallsEveryOfferedTool:
    """An over-eager model: calls each offered tool with no arguments (what the veto is for)."""

    name = "eager"

    def predict(self, cases):
        return [Prediction([ToolCall(t.name, {}) for t in c.tools]) for c in cases]


def test_router_vetoes_the_models_unlikely_calls_and_never_unknown_tools(detector_dir, registry):
    _, out = detector_dir
    cases = [c for c in load_cases("handwritten", registry=registry)]
    plain = RouterModel(CallsEveryOfferedTool()).predict(cases)
    vetoed = RouterModel(CallsEveryOfferedTool(), detector=str(out)).predict(cases)
    det = ToolDetector.load(out)
    dropped = 0
    for case, a, b in zip(cases, plain, vetoed):
        if a.details["route"] == "symbolic":
            assert a.calls == b.calls                    # rules' answers are never vetoed
            continue
        kept = {c.name for c in b.calls}
        probs = det.probabilities_many([(case.user_text, [t.name for t in case.tools])])[0]
        for call in a.calls:
            unlikely = call.name in probs and probs[call.name] < det.threshold
            assert (call.name not in kept) == unlikely
            dropped += unlikely
        assert [c["name"] for c in b.details.get("vetoed_calls", [])] == [c.name for c in a.calls if c.name not in kept]
    assert dropped > 0


def test_a_missing_detector_folder_is_a_one_line_error(tmp_path):
    with pytest.raises(ToolkitError, match="not a tool detector folder.*python -m train.detector"):
        ToolDetector.load(tmp_path)


def test_without_rules_the_model_answers_everything_and_the_detector_vetoes(detector_dir, registry):
    _, out = detector_dir
    cases = load_cases("handwritten", registry=registry)
    preds = RouterModel(CallsEveryOfferedTool(), detector=str(out), rules=False).predict(cases)
    det = ToolDetector.load(out)
    assert {p.details["route"] for p in preds} == {"model"}
    for case, pred in zip(cases, preds):
        assert {c.name for c in pred.calls} == {t.name for t in case.tools} - det.vetoes(case.user_text,
                                                                                       [t.name for t in case.tools])
    with pytest.raises(ToolkitError, match="model.rules"):
        RouterModel(CallsEveryOfferedTool(), rules=False)


class CallsNothing:
    """A shy model: never calls (what the fallback is for, on requests the detector finds tool-shaped)."""

    name = "shy"

    def predict(self, cases):
        return [Prediction([]) for _ in cases]


@pytest.fixture(scope="module")
def symbolic_server():
    """This toolkit's own OpenAI-compatible server (python -m serve) on loopback, as the fallback endpoint."""
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "serve", "model=symbolic", "host=127.0.0.1", f"port={port}"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(600):
            if proc.poll() is not None:
                raise AssertionError(proc.stderr.read()[-2000:])
            try:
                urllib.request.urlopen(url + "/models", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("the server did not come up in 60 s")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_unsure_answers_go_to_the_fallback_endpoint(detector_dir, registry, symbolic_server):
    from runtime.models import SymbolicModel

    _, out = detector_dir
    cases = load_cases("hackathon30", registry=registry) + load_cases("handwritten", registry=registry)
    router = RouterModel(CallsNothing(), detector=str(out), rules=False,
                         fallback={"url": symbolic_server, "model": "symbolic", "threshold": 0.5})
    preds = router.predict(cases)
    direct = SymbolicModel().predict(cases)
    routes = [p.details["route"] for p in preds]
    assert 0 < routes.count("fallback") < len(cases)
    for case, pred, sym in zip(cases, preds, direct):
        conf = pred.details["confidence"]
        assert conf == pytest.approx(router.confidence(case, Prediction([])), abs=1e-4)
        if conf < 0.5:      # left the device: the endpoint's answer, over real HTTP
            assert pred.details["route"] == "fallback" and not pred.on_device and pred.calls == sym.calls
        else:
            assert pred.details["route"] == "model" and pred.on_device and pred.calls == []


def test_an_unreachable_fallback_keeps_the_device_answer(detector_dir, registry):
    import socket

    _, out = detector_dir
    with socket.socket() as s:          # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    cases = load_cases("hackathon30", registry=registry)[:3]
    preds = RouterModel(CallsNothing(), detector=str(out), rules=False,
                        fallback={"url": dead, "model": "x", "threshold": 1.0, "timeout_s": 2, "max_retries": 0}
                        ).predict(cases)
    assert all(p.on_device and p.calls == [] and "fallback_error" in p.details for p in preds)
    with pytest.raises(ToolkitError, match="model.fallback.url"):
        RouterModel(CallsNothing(), fallback={"url": dead, "model": "x"})
