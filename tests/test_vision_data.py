"""data_gen.vision: deterministic synthetic scenes, the document's sequence and box convention, user JSONL
validation (errors name line + field), resume/atomic output, and the preview rendered in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from PIL import Image

from data_gen.vision.config import VisionConfig
from data_gen.vision.generate import generate, make_example
from data_gen.vision.user_data import read_user_rows
from runtime.ovis.tools import ToolSet, box_problem
from toolcore.errors import ToolkitError

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def small(tmp, **kw) -> VisionConfig:
    base = dict(output_dir=str(tmp / "vision"), examples={"train": 24, "validation": 4, "test": 6}, shard_size=8,
                workers=1, preview_examples=6, min_side=128, max_side=256)
    return VisionConfig(**(base | kw))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vis")
    cfg = small(tmp)
    return cfg, generate(cfg, progress=False)


def test_pure_function_of_seed_and_index(tmp_path):
    cfg = small(tmp_path)
    a, _ = make_example(cfg, "train", 3)
    b, _ = make_example(cfg, "train", 3)
    c, _ = make_example(small(tmp_path, seed=1), "train", 3)
    assert a["image"].tobytes() == b["image"].tobytes() and a["messages"] == b["messages"]
    assert a["image"].tobytes() != c["image"].tobytes()


def test_dataset_rows_follow_the_design(built):
    from datasets import load_from_disk

    cfg, manifest = built
    out = cfg.output_dir
    ds = load_from_disk(out)
    assert manifest["splits"] == {s: len(ds[s]) for s in ds} and sum(manifest["splits"].values()) > 0
    assert {"config", "seed", "rejections", "kinds", "timing"} <= set(manifest)
    seen = set()
    for r in ds["train"]:
        seen.add(r["kind"])
        turn = json.loads(r["messages"])[1]["content"]
        calls = json.loads(r["expected_calls"])
        # [text, tool_call, cropped image, remaining text]: each call is followed at once by its image
        assert len(turn) == 2 * len(calls) + 1 and len(r["crops"]) == len(calls)
        ts = ToolSet.from_descriptions([])
        for k, call in enumerate(calls):
            assert turn[2 * k]["text"].startswith("<tool_call>") and turn[2 * k]["text"].endswith("</tool_call>")
            assert turn[2 * k + 1] == {"type": "image", "image": f"crops/{k}"}
            assert box_problem(call["arguments"]["bbox"], r["width"], r["height"]) is None
            if call["name"] == "crop":
                parsed, _ = ts.parse(turn[2 * k]["text"][len("<tool_call>"):-len("</tool_call>")])
                assert parsed.arguments == call["arguments"]
                x1, y1, x2, y2 = call["arguments"]["bbox"]
                assert r["crops"][k].size == (x2 - x1, y2 - y1)
        if r["kind"] == "no_crop":
            assert not calls
        assert isinstance(r["image"], Image.Image) and r["image"].size == (r["width"], r["height"])
    assert {"zoom", "no_crop"} <= seen


def test_resume_reuses_and_refuses_other_config(built, tmp_path):
    cfg, manifest = built
    again = generate(cfg, progress=False)
    assert again["reused"]
    with pytest.raises(ToolkitError, match="output_dir"):
        generate(small(tmp_path, output_dir=cfg.output_dir, seed=5), progress=False)


def test_bad_config_fails_early():
    with pytest.raises(ToolkitError, match="kinds.two_crops"):
        VisionConfig(tags=[1, 1], kinds={"two_crops": 1.0})


def _img(path, size=(100, 80)):
    Image.new("RGB", size, "white").save(path)
    return path.name


@pytest.mark.parametrize("row,field", [
    ({"question": "q", "boxes": [], "answer": "a"}, "image"),
    ({"image": "missing.png", "question": "q", "boxes": [], "answer": "a"}, "image"),
    ({"image": "broken.png", "question": "q", "boxes": [], "answer": "a"}, "image"),
    ({"image": "ok.png", "question": "q", "boxes": [[0, 0, 120, 10]], "answer": "a"}, "boxes[0]"),
    ({"image": "ok.png", "question": "q", "boxes": [[0, 0, 10, 10], [5, 5, 5, 9]], "answer": "a"}, "boxes[1]"),
    ({"image": "ok.png", "question": 3, "boxes": [], "answer": "a"}, "question"),
])
def test_user_jsonl_errors_name_line_and_field(tmp_path, row, field):
    _img(tmp_path / "ok.png")
    (tmp_path / "broken.png").write_bytes(b"not an image")
    good = {"image": "ok.png", "question": "What?", "boxes": [[10, 10, 50, 40]], "answer": "7"}
    f = tmp_path / "mine.jsonl"
    f.write_text(json.dumps(good) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(ToolkitError) as e:
        read_user_rows(f)
    assert "mine.jsonl:2" in str(e.value) and f"field '{field}'" in str(e.value)


def test_user_rows_join_the_dataset(tmp_path):
    _img(tmp_path / "ok.png")
    f = tmp_path / "mine.jsonl"
    f.write_text(json.dumps({"image": "ok.png", "question": "What?", "boxes": [[10, 10, 50, 40]], "answer": "7"}) + "\n")
    m = generate(small(tmp_path, user_data=str(f), examples={"train": 4}), progress=False)
    assert m["user_rows"] == 1 and m["splits"]["train"] == 5


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is installed by `make test` (apt)")
def test_preview_renders_in_headless_chromium(built, tmp_path):
    cfg, _ = built
    page = (tmp_path.parent / "x").resolve()
    url = (__import__("pathlib").Path(cfg.output_dir) / "preview.html").resolve().as_uri()
    dom = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'p'}", "--virtual-time-budget=5000",
                          "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    total = re.search(r'data-images-total="(\d+)"', dom)
    loaded = re.search(r'data-images-loaded="(\d+)"', dom)
    assert total and int(total.group(1)) >= 3 and loaded and loaded.group(1) == total.group(1)
    assert "tool_call" in dom


def test_tag_texts_and_plate_padding(tmp_path):
    from data_gen.vision.draw import scene

    cfg = small(tmp_path, texts=["digit"], tag_padding=[12, 12], text_px=[9, 9])
    for k in range(6):
        sc = scene(cfg, "train", k)
        for t in sc.tags:
            assert re.fullmatch(r"\d", t.text), t.text
            w, h = t.box[2] - t.box[0], t.box[3] - t.box[1]
            assert w >= 24 + 4 and h >= 24 + 6, (w, h)      # the text inside a 12 px plate on every side
    # the default mix is the one the data was drawn with before these knobs existed
    a, _ = make_example(small(tmp_path), "train", 5)
    b, _ = make_example(small(tmp_path, texts=["number", "price", "word"], tag_padding=None), "train", 5)
    assert a["image"].tobytes() == b["image"].tobytes()
    for bad in (dict(texts=["emoji"]), dict(texts=[]), dict(tag_padding=[5, 2]), dict(tag_padding=[0, 3])):
        with pytest.raises(ToolkitError) as e:
            small(tmp_path, **bad)
        assert e.value.field == next(iter(bad))


def test_crop_iou_is_taken_against_the_taught_box():
    from toolcore.vision_metric import crop_scores, reference_boxes

    tag = [40, 40, 60, 59]                     # a 20x19 tag; its taught crop has a 4 px margin
    taught = [36, 36, 64, 63]
    assert reference_boxes([{"name": "crop", "arguments": {"bbox": taught}}]) == [taught]
    exact = crop_scores([taught], [tag], [taught])
    assert exact["iou"] == 1.0 and exact["crops_containing_target"] == 1
    # against the tag itself the taught crop would score about half
    assert 0.49 < crop_scores([taught], [tag])["iou"] < 0.51
    # a crop a few pixels off still overlaps; a crop cutting the tag does not contain it
    off = crop_scores([[40, 38, 68, 65]], [tag], [taught])
    assert 0.6 < off["iou"] < 0.8 and off["crops_containing_target"] == 1
    cut = crop_scores([[50, 36, 78, 63]], [tag], [taught])
    assert cut["crops_containing_target"] == 0
    # two targets, boxes in the other order: each paired with the one that overlaps it
    two = crop_scores([[0, 0, 10, 10], taught], [tag, [2, 2, 8, 8]], [taught, [0, 0, 10, 10]])
    assert two["iou"] == 1.0 and two["crops_containing_target"] == 2
    assert crop_scores([], [tag], [taught])["iou"] == 0.0
    with pytest.raises(ValueError):
        crop_scores([taught], [tag], [])
