"""Ovis crop tool system on a tiny, real, native Ovis2 built from a config: LoRA through `python -m train`'s
code path (loss goes down, adapter saved and reloaded), the label mask (never an image or a crop), the live
crop loop end to end - batched, with the KV cache giving exactly the tokens of a full re-prefill - the
trust_remote_code guard, and tool timeouts."""

from __future__ import annotations

import json
import time

import pytest

from runtime.ovis.tools import CROP, ToolSet, VisionTool, toolset_from_schemas
from toolcore.errors import ToolkitError

LLM_TARGETS = r".*(language_model|llm\.model)\.layers\.\d+\.(self_attn\.(q_proj|k_proj|v_proj|o_proj)|mlp\.(gate_proj|up_proj|down_proj))"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from datasets import load_from_disk

    from data_gen.vision.config import VisionConfig
    from data_gen.vision.generate import generate
    from train.config import DataConfig, FamilyConfig, LoraSettings, TrainConfig, TrainingConfig
    from train.ovis.tiny import save_tiny
    from train.run import train

    root = tmp_path_factory.mktemp("ovis")
    generate(VisionConfig(output_dir=str(root / "data"), examples={"train": 32, "test": 4}, kinds={"zoom": 1.0},
                          min_side=96, max_side=128, tags=[1, 1], distractors=[0, 2], shard_size=16, workers=1,
                          preview_examples=2), progress=False)
    ds = load_from_disk(str(root / "data"))
    texts = [t for r in ds["train"] for t in (r["question"], r["answer"], json.loads(r["messages"])[1]["content"][0]["text"])]
    save_tiny(root / "base", texts + [CROP.describe(), ToolSet().system_text()])
    cfg = TrainConfig(
        family=FamilyConfig(name="ovis2_5", kind="ovis", path=str(root / "base"), format="ovis2_5", lora_targets=LLM_TARGETS),
        lora=LoraSettings(r=16, alpha=32), data=DataConfig(path=str(root / "data"), max_length=512, eval_cases=0),
        training=TrainingConfig(learning_rate=5e-3, batch_size=4, max_steps=40, eval_every=0, logging_steps=5,
                                group_by_length=False, threads=1),
        output_dir=str(root / "run"), resume=False, wandb_mode="disabled")
    metrics = train(cfg)
    return root, ds, metrics


def test_remote_code_needs_the_config_switch():
    from runtime.ovis.adapter import load_ovis

    with pytest.raises(ToolkitError, match=r"family.trust_remote_code.*fix: set family.trust_remote_code=true"):
        load_ovis("AIDC-AI/Ovis2.5-2B", trust_remote_code=False)


def test_vision_settings_need_the_ovis_kind():
    from train.config import FamilyConfig, TrainConfig

    with pytest.raises(ToolkitError, match="family.vision_lora_targets"):
        TrainConfig(family=FamilyConfig(train_visual_embeddings=True))


def test_label_mask_never_covers_images_or_crops(setup):
    from runtime.ovis.adapter import adapter_for, load_ovis
    from train.ovis.data import encode_row

    root, ds, _ = setup
    model, tok = load_ovis(str(root / "base"))
    ad = adapter_for(model, tok)
    row = ds["train"][0]
    ids, labels, images = encode_row(row, tok, ad)
    assert len(images) == 2                      # the question's image and the crop fed back
    img_pos = [i for i, t in enumerate(ids) if t in ad.image_token_ids]
    assert len(img_pos) == 2 * (ad.atoms + 3)
    assert all(labels[i] == -100 for i in img_pos)
    learned = tok.decode([t for t in labels if t != -100])
    turn = json.loads(row["messages"])[1]["content"]
    assert learned == turn[0]["text"] + turn[2]["text"] + "<|im_end|>"
    first = next(i for i, t in enumerate(labels) if t != -100)
    assert all(labels[i] == -100 for i in range(first))   # the prompt (question image included) is never learned


def test_trained_tool_left_out_of_the_prompt(setup):
    """family.describe_trained=false: the prompt is the image and the question (the design's
    use_tool_descriptions=False); a described tool is still listed. Training and eval render alike."""
    from runtime.models.ovis import OvisModel
    from train.config import FamilyConfig, TrainConfig
    from train.ovis.data import encode_row

    root, ds, _ = setup
    model = OvisModel(str(root / "base"), adapter=str(root / "run" / "adapter"), dtype="float32", max_new_tokens=4,
                      family={"name": "ovis2_5", "path": str(root / "base"), "describe_trained": False})
    assert model.describe_trained is False
    row = ds["train"][0]
    listed, _, _ = encode_row(row, model.tok, model.adapter)
    bare, labels, _ = encode_row(row, model.tok, model.adapter, describe_trained=False)
    assert "Tools:" in model.tok.decode(listed) and "Tools:" not in model.tok.decode(bare)
    assert model.tok.decode(bare).startswith("<|im_start|>user")
    assert [t for t in labels if t != -100] == [t for t in encode_row(row, model.tok, model.adapter)[1] if t != -100]
    outline = dict(json.loads(row["tools"])[0], name="outline",
                   description="Draw a rectangle. Usage: <tool_call>Outline [x1,y1,x2,y2]</tool_call>")
    described = encode_row(dict(row, tools=json.dumps(json.loads(row["tools"]) + [outline])), model.tok, model.adapter,
                           describe_trained=False)[0]
    assert "Outline" in model.tok.decode(described) and "Crop:" not in model.tok.decode(described)
    assert OvisModel(str(root / "base"), dtype="float32", family={"name": "ovis2_5"}).describe_trained is True
    with pytest.raises(ToolkitError, match="family.vision_lora_targets"):
        TrainConfig(family=FamilyConfig(describe_trained=False))


def test_lora_trains_and_saves(setup):
    root, _, metrics = setup
    losses = [h["loss"] for h in metrics["loss_history"]]
    assert losses[-1] < losses[0] - 0.2, losses
    assert (root / "run" / "adapter" / "adapter_config.json").exists() and metrics["lora_modules"] == 14
    assert json.loads((root / "run" / "metrics.json").read_text())["adapter_kind"] == "ovis2"


def test_crop_loop_end_to_end_cache_equals_reprefill(setup):
    from peft import PeftModel

    from runtime.ovis.adapter import adapter_for, load_ovis
    from runtime.ovis.chat import pieces, row_resolver
    from runtime.ovis.loop import CropLoop

    root, ds, _ = setup
    base, tok = load_ovis(str(root / "base"))
    model = PeftModel.from_pretrained(base, str(root / "run" / "adapter")).eval()
    ad = adapter_for(model, tok)
    prompts = []
    for k, r in enumerate(ds["test"]):
        ps = pieces(json.loads(r["messages"])[:1], toolset_from_schemas(json.loads(r["tools"])), row_resolver(r),
                    add_generation_prompt=True)
        call = json.loads(r["messages"])[1]["content"][0]["text"]
        # half the rows start their answer with an open call (the model closes it, the loop crops and feeds
        # the crop mid-batch); the others generate freely: rows pause at different steps
        prompts.append((ps, r["image"], call.removesuffix("</tool_call>")) if k % 2 == 0 else (ps, r["image"]))
    streamed: dict[int, str] = {}
    loop = CropLoop(model, tok, ad, max_new_tokens=24, on_text=lambda i, t: streamed.__setitem__(i, streamed.get(i, "") + t))
    cached = loop.run(prompts)
    reference = CropLoop(model, tok, ad, max_new_tokens=24).run(prompts, cache=False)
    assert [c.tokens for c in cached] == [r.tokens for r in reference]
    fed = [e for c in cached for e in c.events if e.get("fed", "").startswith("image")]
    assert len(fed) >= 2 and all(c.calls[0].name == "crop" for c in cached[::2])
    assert all(cached[i].text.endswith(streamed.get(i, "")) for i in range(len(cached)))


def test_forward_inputs_follow_the_model_dtype_and_device():
    """The loop builds ids and pixels on the CPU (pixels in float32); adapter.forward hands them to the model
    on its device, pixels in its dtype (bfloat16 on a GPU). The device half ran on an H100 (the proof script
    with --device cuda); CI has no GPU, so here the dtype half."""
    import torch

    from runtime.ovis.adapter import on_model

    model = torch.nn.Linear(2, 2).to(torch.bfloat16)
    t = on_model(model, {"input_ids": torch.ones(1, 3, dtype=torch.long), "pixel_values": torch.zeros(1, 3, 4, 4),
                         "labels": None})
    assert t["input_ids"].dtype == torch.long and t["pixel_values"].dtype == torch.bfloat16 and t["labels"] is None


def test_described_tool_and_timeout():
    from PIL import Image

    slow = VisionTool("Slow", "Sleeps.", lambda im, a: time.sleep(2) or im)
    ts = ToolSet().register(slow)
    assert "Slow: Sleeps." in ts.system_text()
    call, err = ts.parse("Slow [1,2,30,40]")
    assert err is None and call.name == "slow"
    img = Image.new("RGB", (64, 48))
    t = time.perf_counter()
    result, error = ts.execute(call, img, timeout_s=0.2)
    assert error == "timeout" and "timed out" in result and time.perf_counter() - t < 1.5
    drawn = toolset_from_schemas([{"name": "outline", "description": "Draw a box. Usage: <tool_call>Outline [x1,y1,x2,y2]</tool_call>",
                                   "parameters": {"type": "object", "properties": {"bbox": {"type": "array"}}}}])
    call, _ = drawn.parse("Outline [1,2,30,40]")
    out, error = drawn.execute(call, img)
    assert error is None and out.size == img.size
    assert ts.execute(ts.parse("Crop [70,50,90,60]")[0], img)[1] == "outside"


def test_eval_with_crop_loop_and_vision_report(setup, tmp_path):
    from eval.report import write_report
    from eval.runner import evaluate
    from runtime.models.ovis import OvisModel

    root, _, _ = setup
    for feed in ("tool", "full"):
        model = OvisModel(str(root / "base"), name=f"tiny-{feed}", adapter=str(root / "run" / "adapter"), dtype="float32",
                          max_new_tokens=16, batch_size=4, feed=feed)
        summary = evaluate(model, str(root / "data"), tmp_path / feed, latency_cases=0, progress=False)
        assert summary["cases"] == 4
    line = json.loads((tmp_path / "tool" / "predictions.jsonl").read_text().splitlines()[0])
    v = line["vision"]
    assert v["target_boxes"] and v["feed"] == "tool" and "thumb_png" in v and "answer_correct" in v
    page = write_report([tmp_path / "tool", tmp_path / "full"], tmp_path / "report.html").read_text()
    assert page.count("vision: crops and answers") == 2 and page.count("class=vision-cases") == 2


def test_proof_of_learning_script_runs(tmp_path):
    """benchmarks/prove_vision_learning.py end to end in a few steps (its figures come from 15-minute runs,
    README): data, the tiny model at the proof's settings, training, scoring through the live loop, the
    curve, proof.json and the plot."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "prove_vision_learning.py"
    spec = importlib.util.spec_from_file_location("prove_vision_learning", path)
    proof = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(proof)
    out = tmp_path / "proof"
    result = proof.main(["--minutes", "5", "--max-steps", "4", "--train", "48", "--test", "6", "--evals", "2",
                         "--out", str(out)])
    assert result["steps"] == 4 and [c["step"] for c in result["curve"]] == [0, 2, 4]
    assert set(result["after"]) >= {"iou_mean", "iou_at_0_5", "accuracy_with_crop", "accuracy_without_crop"}
    assert result["curve"][-1]["samples_tool"] and "expected" in result["curve"][-1]["samples_tool"][0]
    assert json.loads((out / "proof.json").read_text())["steps"] == 4 and (out / "curve.png").stat().st_size > 0
