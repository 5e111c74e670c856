"""The HTML report, opened in a real headless Chromium: charts decode and the tables are there."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from runtime.models import SymbolicModel
from eval.report import confusion, write_report
from eval.runner import evaluate
from toolcore.metric import call_f1

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    evaluate(SymbolicModel(), "hackathon30", root / "sym", repair=False)
    evaluate(SymbolicModel(), "hackathon30", root / "sym_repair", repair=True)
    return write_report([root / "sym", root / "sym_repair"], root / "report.html", title="test report")


def test_markdown_summary(report):
    md = report.with_suffix(".md").read_text()
    assert "| symbolic | hackathon30 | 30 |" in md and "| symbolic +repair | hackathon30 | 30 |" in md
    # the error table counts, per run, the cases whose calls are exact, from its predictions
    rows = [json.loads(line) for line in (report.parent / "sym" / "predictions.jsonl").read_text().splitlines()]
    exact = sum(call_f1(r["expected_calls"], r["predicted_calls"]) == 1.0 for r in rows)
    assert "## What went wrong (cases per kind of error)" in md and f"| symbolic | hackathon30 | 30 | {exact} | " in md


def test_confusion_pairs_missing_and_extra_calls():
    cases = [{"expected_calls": [{"name": "a"}, {"name": "b"}], "predicted_calls": [{"name": "a"}, {"name": "c"}]},
             {"expected_calls": [{"name": "a"}], "predicted_calls": []},
             {"expected_calls": [], "predicted_calls": [{"name": "c"}]}]
    assert confusion(cases) == {("a", "a"): 1, ("b", "c"): 1, ("a", "(none)"): 1, ("(none)", "c"): 1}


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is installed by `make test` (apt)")
def test_report_renders_in_headless_chromium(report, tmp_path):
    url = report.resolve().as_uri()
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'p1'}", "--virtual-time-budget=5000",
                          "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    n_images = dom.count("<img class=\"chart\"")
    assert n_images == 3 + 2           # difficulty, tool, latency + one confusion matrix per run
    loaded = re.search(r'data-charts-loaded="(\d+)"', dom)
    assert loaded and int(loaded.group(1)) == n_images, "some chart did not decode"
    assert dom.count("<table") >= 3 and "worst" in dom and "weather_sf" in dom
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'p2'}", "--window-size=1200,1800",
                    f"--screenshot={shot}", url], capture_output=True, timeout=120)
    import matplotlib.image as mpimg

    pixels = mpimg.imread(shot)
    assert pixels.shape[0] == 1800 and pixels.shape[1] == 1200
    assert pixels[..., :3].std() > 0.05      # a page with charts, not a blank one


def test_wandb_offline_logging_writes_a_local_run(report, monkeypatch):
    from eval.report import load_run, log_wandb

    monkeypatch.setenv("WANDB_SILENT", "true")
    run = load_run(report.parent / "sym")
    log_wandb(run, project="toolkit-test", mode="offline")
    runs = list((run.folder / "wandb").glob("offline-run-*"))
    assert runs and any(p.suffix == ".wandb" for p in runs[0].iterdir())
