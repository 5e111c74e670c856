"""Training on a tiny from-config llama (byte-level BPE trained here, no tool tokens, so the generic
format's markers are added): fixed seed, N steps of expected loss, resume equivalence, reload and
merge giving the same generations, and data-parallel training with two real gloo processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import TrainerCallback

from data_gen.config import DataGenConfig
from data_gen.generate import generate
from runtime.engine import GenerationConfig, ToolLoopEngine
from runtime.models.hf import load_model_and_tokenizer
from toolcore.formats import get_format
from toolcore.suites import cases_from_dataset
from train.config import DataConfig, FamilyConfig, LoraSettings, TrainConfig, TrainingConfig
from train.run import train
from train.tokens import describe, missing_tool_tokens

from .tiny_models import assert_same_safetensors, tiny_llama, tiny_tokenizer

ROOT = Path(__file__).resolve().parents[1]
FMT = get_format("generic")
# the 4 logged losses (every 2 steps) of the seeded tiny run; a change here is a behaviour change
# (the fixture uses the data defaults: a change to what data_gen writes moves them)
EXPECTED_LOSSES = [6.5523, 6.5146, 6.4554, 6.4577]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("train")
    data = root / "data"
    generate(DataGenConfig(output_dir=str(data), num_conversations=400, shard_size=400), progress=False)
    from datasets import load_from_disk
    from toolcore.suites import ConversationReader

    read = ConversationReader()
    texts = [FMT.render_text(read(r)) for r in load_from_disk(str(data))["train"].select(range(300))]
    tok = tiny_tokenizer(texts, vocab_size=700)
    assert missing_tool_tokens(tok, FMT) == list(FMT.tool_tokens)
    model = tiny_llama(len(tok), hidden=64, layers=2)
    base = root / "base"
    model.save_pretrained(base)
    tok.save_pretrained(base)
    return root, data, base


def config(root: Path, data: Path, base: Path, name: str, train_examples: int = 200, **training) -> TrainConfig:
    t = dict(max_steps=8, batch_size=8, learning_rate=3e-3, eval_every=4, logging_steps=2, save_total_limit=3,
             eval_max_new_tokens=24, seed=0)
    t.update(training)
    return TrainConfig(family=FamilyConfig(name="tiny", path=str(base), format="generic", lora_targets="all-linear"),
                       lora=LoraSettings(r=8, alpha=16), data=DataConfig(path=str(data), train_examples=train_examples,
                                                                        eval_cases=6, max_length=600),
                       training=TrainingConfig(**t), output_dir=str(root / name), wandb_mode="disabled")


@pytest.fixture(scope="module")
def straight(setup):
    root, data, base = setup
    return train(config(root, data, base, "straight")), root / "straight"


def test_loss_goes_down_with_expected_values(straight):
    metrics, _ = straight
    losses = [h["loss"] for h in metrics["loss_history"]]
    assert len(losses) == 4 and losses[-1] < losses[0]
    if EXPECTED_LOSSES is not None:
        assert losses == pytest.approx(EXPECTED_LOSSES, rel=1e-3)


def test_output_folder(straight):
    metrics, out = straight
    adapter = out / "adapter"
    assert (adapter / "adapter_model.safetensors").exists() and (adapter / "tokenizer.json").exists()
    assert (out / "config.yaml").exists() and metrics["dataset_manifest_sha256_16"]
    assert set(metrics["new_tool_tokens"]) == set(FMT.tool_tokens)
    assert metrics["f1_history"] and "eval_f1" in metrics["final"]
    assert metrics["best_checkpoint"]
    # only LoRA matrices and the new token rows are stored, not the embedding matrix: in the adapter
    # and in every Trainer checkpoint (peft's default would save the resized matrix in those)
    vocab = max(metrics["new_tool_tokens"].values()) + 1          # the added rows are the last ones
    checkpoints = sorted((out / "checkpoints").glob("checkpoint-*"))
    assert checkpoints
    for folder in [adapter, *checkpoints]:
        weights = load_file(str(folder / "adapter_model.safetensors"))
        assert not [k for k, v in weights.items() if v.shape[0] >= vocab], folder
        deltas = [v for k, v in weights.items() if "trainable_tokens" in k]
        assert deltas and deltas[0].shape[0] == 4 and deltas[0].abs().sum() > 0


def test_keep_last_holds_the_final_weights_and_their_scores(setup, straight):
    """training.keep_checkpoint=last: adapter/ is the last step's weights and `final` that step's scores,
    where the default (the straight run) holds the checkpoint validation scored best."""
    from toolcore.errors import ToolkitError

    root, data, base = setup
    metrics = train(config(root, data, base, "keep_last", keep_checkpoint="last"))
    out = root / "keep_last"
    assert metrics["kept"] == "last" and metrics["steps"] == 8
    assert_same_safetensors(out / "adapter" / "adapter_model.safetensors",
                            out / "checkpoints" / "checkpoint-8" / "adapter_model.safetensors")
    last_pass = next(h for h in metrics["f1_history"] if h["step"] == 8)
    assert metrics["final"]["eval_f1"] == last_pass["eval_f1"]
    best_metrics, best_out = straight
    assert best_metrics["kept"] == "best"
    best = Path(best_metrics["best_checkpoint"])
    assert_same_safetensors(best_out / "adapter" / "adapter_model.safetensors", best / "adapter_model.safetensors")
    if best.name != "checkpoint-8":       # the tiny model's passes tie, and a tie keeps the first
        with pytest.raises(AssertionError):
            assert_same_safetensors(best_out / "adapter" / "adapter_model.safetensors",
                                    best_out / "checkpoints" / "checkpoint-8" / "adapter_model.safetensors")
    with pytest.raises(ToolkitError, match="training.keep_checkpoint"):
        TrainConfig(training=TrainingConfig(keep_checkpoint="final"))


def test_full_fine_tuning_trains_every_weight_and_writes_a_whole_model(setup):
    """training.method=full: every weight trains; model/ holds the whole model (tool tokens included),
    its tokenizer and a record with the format but no path (the folder is its own base), and no
    adapter/; it loads with model.path alone and generates what the saved weights generate; a killed
    run resumes to the same weights."""
    from runtime.models import HFModel
    from toolcore.errors import ToolkitError
    from toolcore.run_record import read_family_record

    root, data, base = setup
    metrics = train(config(root, data, base, "full", method="full", learning_rate=1e-3))
    out = root / "full"
    assert metrics["method"] == "full" and metrics["model_bytes"] > 0 and "adapter_bytes" not in metrics
    assert not (out / "adapter").exists() and not (out / ".model.partial").exists()
    assert (out / "model" / "config.json").exists() and (out / "model" / "chat_template.jinja").exists()
    record = read_family_record(out / "model")
    assert record["format"] == FMT.name and "path" not in record
    trained, before = load_file(str(out / "model" / "model.safetensors")), load_file(str(base / "model.safetensors"))
    assert metrics["trainable_parameters"] == sum(v.numel() for v in trained.values())
    # every tensor moved, the embedding (resized for the four tool tokens) included
    changed = [k for k, v in trained.items()
               if v.shape != before[k].shape or not torch.equal(v, before[k])]
    assert sorted(changed) == sorted(trained)
    assert trained["model.embed_tokens.weight"].shape[0] == before["model.embed_tokens.weight"].shape[0] + 4

    m = HFModel(path=str(out / "model"), generation={"max_new_tokens": 12})
    assert m.fmt.name == FMT.name
    convs = [c.conversation for c in cases_from_dataset(data, "test", limit=4)]
    again = ToolLoopEngine(*load_model_and_tokenizer(str(out / "model")), FMT, GenerationConfig(max_new_tokens=12))
    assert [o.text for o in m.engine.run(convs)] == [o.text for o in again.run(convs)]
    with pytest.raises(ToolkitError, match=r"a whole model.*model\.path="):
        HFModel(adapter=str(out / "model"), path=str(base))

    cfg = config(root, data, base, "full_resumed", method="full", learning_rate=1e-3)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, extra_callbacks=[Die(4)])
    assert train(cfg)["resumed_from"].endswith("checkpoint-4")
    assert_same_safetensors(out / "model" / "model.safetensors", root / "full_resumed" / "model" / "model.safetensors")


def test_bad_training_methods_fail_early():
    from toolcore.errors import ToolkitError

    with pytest.raises(ToolkitError, match="training.method.*use lora or full"):
        TrainConfig(training=TrainingConfig(method="qlora"))
    with pytest.raises(ToolkitError, match="lora.top_layers.*training.method=full"):
        TrainConfig(lora=LoraSettings(top_layers=2), training=TrainingConfig(method="full"))
    with pytest.raises(ToolkitError, match="training.method.*causal_lm"):
        TrainConfig(family=FamilyConfig(kind="lfm2_audio"), training=TrainingConfig(method="full"))


def test_new_rows_start_from_their_descriptions():
    assert describe("<|tool_call_start|>") == "tool call start"


class Die(TrainerCallback):
    def __init__(self, step: int):
        self.step = step

    def on_save(self, args, state, control, **kw):
        if state.global_step >= self.step:
            raise KeyboardInterrupt("killed after the checkpoint of step %d" % state.global_step)


def test_resume_after_a_kill_gives_the_same_adapter(setup, straight):
    root, data, base = setup
    cfg = config(root, data, base, "resumed")
    with pytest.raises(KeyboardInterrupt):
        train(cfg, extra_callbacks=[Die(4)])
    assert (root / "resumed" / "checkpoints" / "checkpoint-4").exists()
    metrics = train(cfg)
    assert metrics["resumed_from"].endswith("checkpoint-4")
    assert_same_safetensors(root / "straight" / "adapter" / "adapter_model.safetensors",
                            root / "resumed" / "adapter" / "adapter_model.safetensors")


def test_resume_in_a_later_epoch_gives_the_same_adapter(setup):
    # 32 examples, batch 8: 4 steps an epoch; killed at step 6, the run resumes inside epoch 2, whose
    # batch order must come from the sampler's seed + epoch, not from wherever the global RNG stands
    root, data, base = setup
    def cfg_for(name: str) -> TrainConfig:
        cfg = config(root, data, base, name, train_examples=32, eval_every=2, max_steps=8)
        cfg.data.eval_cases = 0      # checkpoints every 2 steps, no generation passes
        return cfg

    train(cfg_for("epochs_straight"))
    cfg = cfg_for("epochs_resumed")
    with pytest.raises(KeyboardInterrupt):
        train(cfg, extra_callbacks=[Die(6)])
    assert train(cfg)["resumed_from"].endswith("checkpoint-6")
    assert_same_safetensors(root / "epochs_straight" / "adapter" / "adapter_model.safetensors",
                            root / "epochs_resumed" / "adapter" / "adapter_model.safetensors")


@pytest.mark.parametrize("multiple", [1, 8])
def test_right_padded_rows_need_no_attention_mask(setup, multiple):
    # the trainer drops the mask for right-padded batches: the logits of every real token must not move,
    # also when the width is rounded up (9 -> 16)
    from train.data import Collator
    from train.trainer import ToolTrainer

    _, _, base = setup
    model, tok = load_model_and_tokenizer(str(base))
    rows = [{"input_ids": list(range(5, 5 + n)), "labels": [1] * n} for n in (9, 4, 7)]
    batch = Collator(0, multiple)(rows)
    assert batch["input_ids"].shape[1] == (9 if multiple == 1 else 16)
    assert (batch["labels"] != -100).sum() == 20 and batch["attention_mask"].sum() == 20
    assert ToolTrainer.attention_mask(type("T", (), {"unmasked_right_padding": True})(), batch) is None
    with torch.no_grad():
        masked = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        unmasked = model(input_ids=batch["input_ids"]).logits
    real = batch["attention_mask"].bool()
    torch.testing.assert_close(unmasked[real], masked[real])
    left = {**batch, "attention_mask": batch["attention_mask"].flip(1)}
    assert ToolTrainer.attention_mask(type("T", (), {"unmasked_right_padding": True})(), left) is left["attention_mask"]


def test_decision_tokens_weigh_more_in_the_loss(setup):
    # decision_weight: the token opening each assistant turn and the token after each call closes
    # (another call, or the end of the turn) count w times; every other labelled token once, and the
    # mean still divides by the labelled-token count
    from types import SimpleNamespace

    from datasets import load_from_disk
    from toolcore.suites import ConversationReader
    from toolcore.tokenize import IGNORE, encode_conversation
    from train.data import Collator
    from train.tokens import add_tool_tokens
    from train.trainer import ToolTrainer

    _, data, base = setup
    model, tok = load_model_and_tokenizer(str(base))
    add_tool_tokens(model, tok, FMT, "mean")
    train_rows = load_from_disk(str(data))["train"]
    row = next(r for r in train_rows if r["category"] == "multi3")
    ids, labels = encode_conversation(tok, FMT, ConversationReader()(row))
    start, end = (tok.convert_tokens_to_ids(t) for t in (FMT.call_start, FMT.call_end))
    stub = SimpleNamespace(real_tokens=0, labeled_lm_head=True, unmasked_right_padding=True,
                           decision_weight=3.0, call_end_id=end)
    stub.attention_mask = partial(ToolTrainer.attention_mask, stub)
    stub.decision_weights = partial(ToolTrainer.decision_weights, stub)
    stub.packed = ToolTrainer.packed
    batch = Collator(tok.pad_token_id)([{"input_ids": ids, "labels": labels}])

    weights = stub.decision_weights(batch["input_ids"], batch["labels"])[0]
    heavy = [labels[i + 1] for i in range(len(ids) - 1) if weights[i] == 3.0 and labels[i + 1] != IGNORE]
    # three calls: open the first, open the second and third after a call closes, end after the third;
    # then the answer after the results opens with words
    assert heavy[:4] == [start, start, start, tok.eos_token_id], [tok.decode([t]) for t in heavy]
    assert len(heavy) == 5 and heavy[4] not in (start, end, tok.eos_token_id)

    with torch.no_grad():
        weighted = ToolTrainer.compute_loss(stub, model, batch)
        stub.decision_weight = 1.0
        plain = ToolTrainer.compute_loss(stub, model, batch)
        logits = model(input_ids=batch["input_ids"]).logits[0, :-1]
    target = batch["labels"][0, 1:]
    ce = torch.nn.functional.cross_entropy(logits.float(), target.clamp(min=0), reduction="none")
    real = target != IGNORE
    torch.testing.assert_close(plain, ce[real].mean(), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(weighted, (ce * weights)[real].sum() / real.sum(), rtol=1e-4, atol=1e-5)
    assert weighted > plain


def test_a_decision_weight_outside_the_causal_lm_trainer_fails_early():
    with pytest.raises(Exception, match="training.decision_weight"):
        TrainConfig(training=TrainingConfig(decision_weight=0))
    with pytest.raises(Exception, match="training.decision_weight"):
        TrainConfig(family=FamilyConfig(kind="lfm2_audio"), training=TrainingConfig(decision_weight=2))


def test_lora_on_the_top_layers_stops_the_backward_pass_below_them(setup):
    # lora.top_layers=1 of 2: adapters in the last layer only, no gradient ever reaches the first, and the
    # new tool tokens' rows still learn through the tied output head
    from train.run import add_lora, top_layer_indices
    from train.tokens import add_tool_tokens

    root, data, base = setup
    cfg = config(root, data, base, "top1", max_steps=2, eval_every=0)
    cfg.lora.top_layers = 1
    model, tok = load_model_and_tokenizer(str(base))
    new_ids = add_tool_tokens(model, tok, FMT, "mean")
    top = top_layer_indices(cfg, model)
    peft_model = add_lora(cfg, model, new_ids)
    lora = [n for n, p in peft_model.named_parameters() if p.requires_grad and "lora_" in n]
    assert top == [1] and lora and all(".layers.1." in n for n in lora)
    reached = []
    peft_model.get_decoder().layers[0].register_full_backward_hook(lambda *a: reached.append(1))
    ids = torch.tensor([[5, 6, *new_ids, 7]])
    peft_model(input_ids=ids, labels=ids).loss.backward()
    assert not reached
    rows = [p for n, p in peft_model.named_parameters() if p.requires_grad and "trainable_tokens" in n]
    assert rows and all(p.grad is not None and p.grad.abs().sum() > 0 for p in rows)
    metrics = train(cfg)                                           # and a whole run trains with it
    assert len(metrics["loss_history"]) == 1 and (root / "top1" / "adapter" / "adapter_config.json").exists()
    with pytest.raises(Exception, match="lora.top_layers"):
        TrainConfig(lora=LoraSettings(top_layers=0))
    too_many = config(root, data, base, "top9", max_steps=1, eval_every=0)
    too_many.lora.top_layers = 9
    with pytest.raises(Exception, match="has 2 decoder layers"):
        train(too_many)


def test_category_weights_set_the_training_mix(setup):
    from collections import Counter

    from toolcore.errors import ToolkitError
    from toolcore.suites import load_split
    from train.data import tokenize_split, weighted_rows

    _, data, base = setup
    weights = {"single": 2, "multi2": 1, "multi3": 1, "chitchat": 0, "knowledge": 0, "unavailable": 0, "ask_back": 0}
    categories = load_split(str(data), "train").shuffle(seed=0)["category"]
    rows = weighted_rows(categories, weights, 40, where="x")
    assert Counter(categories[i] for i in rows) == {"single": 20, "multi2": 10, "multi3": 10}
    assert rows == sorted(rows)   # the shuffled order is kept, not one category after another
    # no limit: as many rows as the scarcest weighted category allows
    everything = weighted_rows(categories, weights, None, where="x")
    assert len(everything) == min(4 * Counter(categories)["multi3"], 2 * Counter(categories)["single"])
    with pytest.raises(ToolkitError, match="leaves out .*'unavailable'") as e:
        weighted_rows(categories, {"single": 1, "multi2": 1, "multi3": 1, "chitchat": 1, "knowledge": 1}, 40, "x")
    assert e.value.field == "data.category_weights"
    with pytest.raises(ToolkitError, match="names .*'singel'"):
        weighted_rows(categories, {**weights, "singel": 1}, 40, "x")
    with pytest.raises(ToolkitError, match="not enough rows"):
        weighted_rows(categories, {**weights, "multi3": 100}, 300, "x")
    # through the training data path: the tokenized split follows the weights
    model, tok = load_model_and_tokenizer(str(base))
    cfg = DataConfig(path=str(data), max_length=4096, category_weights={**weights, "single": 0})
    ds, _ = tokenize_split(cfg, "train", tok, FMT, 30)
    assert len(ds) == 30   # multi2 and multi3 only: every row learns at least two calls
    for row in ds:
        learned = tok.decode([t for t, l in zip(row["input_ids"], row["labels"]) if l != -100])
        assert learned.count(FMT.tool_tokens[0]) >= 2, learned


def test_length_grouped_batches_come_in_shuffled_order():
    from train.sampler import ShuffledLengthGroupedSampler

    # 1605 rows: the last length group leaves one short batch of 5
    lengths = [(i * 37) % 400 + 20 for i in range(1605)]
    sampler = ShuffledLengthGroupedSampler(lengths, 8, seed=3)
    order = list(sampler)
    assert sorted(order) == list(range(1605))
    # cut as the DataLoader cuts it: every batch_size indices of the flat order
    batches = [order[i:i + 8] for i in range(0, len(order), 8)]
    assert max(lengths[i] for i in batches[0]) == max(lengths)          # an out-of-memory error shows at once
    assert sorted(batches) == sorted(sampler.batches())      # the re-cut batches are the grouped ones
    # little padding: rows of a batch are close in length ...
    waste = sum(8 * max(lengths[i] for i in b) - sum(lengths[i] for i in b) for b in batches) / sum(lengths)
    assert waste < 0.05
    # ... but long and short batches alternate instead of running long-to-short for 50 steps
    widths = [max(lengths[i] for i in b) for b in batches]
    falls = sum(a > b for a, b in zip(widths, widths[1:]))
    assert 0.3 < falls / (len(widths) - 1) < 0.7
    assert list(ShuffledLengthGroupedSampler(lengths, 8, seed=3)) == order
    sampler.set_epoch(1)
    assert list(sampler) != order


def test_trainer_batches_carry_little_padding(setup, tmp_path):
    # the batches the Trainer's own DataLoader builds (not the sampler's idea of them): a row count
    # that is not a multiple of the batch size once shifted every later batch across two length groups
    from datasets import Dataset
    from transformers import TrainingArguments

    from train.data import Collator
    from train.trainer import ToolTrainer

    _, _, base = setup
    model, tok = load_model_and_tokenizer(str(base))
    lengths = [(i * 37) % 300 + 10 for i in range(437)]
    ds = Dataset.from_dict({"input_ids": [[5] * n for n in lengths], "labels": [[5] * n for n in lengths],
                            "length": lengths})
    args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=8, use_cpu=True, report_to=[],
                             train_sampling_strategy="group_by_length", length_column_name="length",
                             remove_unused_columns=False)
    trainer = ToolTrainer(model=model, args=args, train_dataset=ds, data_collator=Collator(0), fmt=FMT)
    masks = [batch["attention_mask"] for batch in trainer.get_train_dataloader()]
    assert [len(m) for m in masks] == [8] * 54 + [5]
    padded = sum(m.numel() for m in masks)
    assert sum(int(m.sum()) for m in masks) == sum(lengths)
    assert 1 - sum(lengths) / padded < 0.05


def test_reloaded_and_merged_adapters_generate_the_same(setup, straight):
    root, data, base = setup
    _, out = straight
    cases = cases_from_dataset(data, "test", limit=6)
    convs = [c.conversation for c in cases]

    def gen(model, tok):
        return [o.text for o in ToolLoopEngine(model, tok, FMT, GenerationConfig(max_new_tokens=20)).run(convs)]

    unmerged = gen(*load_model_and_tokenizer(str(base), adapter=str(out / "adapter"), merge_adapter=False))
    merged = gen(*load_model_and_tokenizer(str(base), adapter=str(out / "adapter"), merge_adapter=True))
    assert unmerged == merged
    r = subprocess.run([sys.executable, "-m", "train.merge", str(out / "adapter"), str(root / "merged")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert not (root / ".merged.partial").exists()
    # the merged folder is its own base: its record names no path, so a moved copy loads by itself
    from runtime.models import HFModel
    from toolcore.run_record import read_family_record

    assert "path" not in read_family_record(root / "merged") and read_family_record(root / "merged")["format"] == FMT.name
    moved = root / "moved" / "merged"
    moved.parent.mkdir(exist_ok=True)
    os.replace(root / "merged", moved)
    assert gen(*load_model_and_tokenizer(str(moved))) == merged
    m = HFModel(path=str(moved), generation={"max_new_tokens": 20})
    assert m.fmt.name == FMT.name


def test_adapter_names_its_base_and_format(setup, straight):
    """The adapter's toolcall_family.json says what it was trained on: a model config with no base or
    format (model=hf) loads it right, and a family that contradicts it fails naming both values."""
    from runtime.models import HFModel
    from toolcore.errors import ToolkitError
    from toolcore.run_record import read_family_record

    _, out = straight
    record = read_family_record(out / "adapter")
    assert record["format"] == FMT.name and Path(record["path"]).exists()
    m = HFModel(adapter=str(out / "adapter"), generation={"max_new_tokens": 8})
    assert m.fmt.name == FMT.name and m.source.path == record["path"]
    with pytest.raises(ToolkitError, match=r"model.format is 'qwen2_5' but .* says format 'generic'"):
        HFModel(adapter=str(out / "adapter"), format="qwen2_5")
    with pytest.raises(ToolkitError, match=r"family 'other' .* says path"):
        HFModel(adapter=str(out / "adapter"), family={"name": "other", "path": "/elsewhere", "format": "generic"})


@pytest.mark.parametrize("sync", [True, False])
def test_data_parallel_two_ranks(setup, sync):
    """torchrun starts two real gloo processes; with sync their LoRA weights stay identical."""
    root, data, base = setup
    out = root / f"ddp_{sync}"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "train",
           "family=hf", f"family.path={base}", "family.format=generic", f"data.path={data}",
           "data.train_examples=96", "data.eval_cases=0", "training.max_steps=3", "training.batch_size=4",
           "training.eval_every=0", "training.learning_rate=3e-3", "training.dump_rank_weights=true",
           f"training.ddp_sync={str(sync).lower()}", "lora.r=4", f"output_dir={out}", "wandb_mode=disabled"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    w0, w1 = load_file(str(out / "rank0.safetensors")), load_file(str(out / "rank1.safetensors"))
    assert w0.keys() == w1.keys() and w0
    same = all(torch.equal(w0[k], w1[k]) for k in w0)
    assert same is sync
    adapters = list(out.glob("**/adapter_model.safetensors"))
    assert [p.parent.name for p in adapters if "checkpoint" not in str(p)] == ["adapter"]


# --- a time budget instead of a step count (train/budget.py) -----------------------------------------

def test_steps_within_a_budget_follow_the_measured_speed():
    from train.budget import steps_within

    per_token = 1 / 200                          # a step of two 100-token rows costs 1 s
    lengths = [100] * 20
    assert steps_within(lengths, per_token, 3.5 / 60, 2, 100) == 3
    assert steps_within(lengths, per_token, 3.5 / 60, 2, 2) == 2        # max_steps is the ceiling
    assert steps_within(lengths, per_token, 60, 2, 100) == 10           # one pass over the rows at most
    assert steps_within([5000] * 4, per_token, 1 / 60, 2, 100) == 1     # never none


def test_a_bad_time_budget_fails_early():
    from toolcore.errors import ToolkitError
    from train.budget import check_budget

    with pytest.raises(ToolkitError, match="training.time_budget_minutes"):
        TrainConfig(training=TrainingConfig(time_budget_minutes=0))
    with pytest.raises(ToolkitError, match="training.time_budget_minutes"):
        TrainConfig(family=FamilyConfig(kind="ovis", format="ovis2_5"), training=TrainingConfig(time_budget_minutes=5))
    with pytest.raises(ToolkitError, match="several"):
        check_budget(5, world_size=2)


def test_measuring_the_speed_leaves_the_weights_and_gradients_as_they_were(setup):
    from peft import get_peft_model
    from transformers import TrainingArguments

    from train.budget import seconds_per_token
    from train.data import Collator, tokenize_split
    from train.run import lora_config
    from train.trainer import ToolTrainer

    root, data, base = setup
    cfg = config(root, data, base, "measured")
    model, tok = load_model_and_tokenizer(str(base))
    model = get_peft_model(model, lora_config(cfg, model, []))
    ds, _ = tokenize_split(cfg.data, "train", tok, FMT, 40)
    trainer = ToolTrainer(model=model, args=TrainingArguments(output_dir=str(root / "measured"), use_cpu=True, report_to=[]),
                          train_dataset=ds, data_collator=Collator(tok.pad_token_id), processing_class=tok, fmt=FMT)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    per_token = seconds_per_token(trainer, ds, 4, bf16=False, seed=0)
    assert per_token > 0 and trainer.real_tokens == 0
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())


def test_a_time_budget_sizes_the_run_and_a_resumed_run_keeps_its_steps(setup, monkeypatch):
    import json

    import train.run as run

    root, data, base = setup
    cfg = config(root, data, base, "budgeted", time_budget_minutes=0.1, max_steps=12)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, extra_callbacks=[Die(1)])           # killed at its first checkpoint (halfway)
    record = json.loads((root / "budgeted" / "time_budget.json").read_text())
    steps = record["steps"]
    assert 1 <= steps <= 12 and 0 < record["ceiling"] <= 200 // 8     # one pass over train_examples at most
    # the resumed run trusts the record: measuring again could pick another step count mid-schedule
    monkeypatch.setattr(run, "seconds_per_token", lambda *a, **k: pytest.fail("measured twice"))
    metrics = train(cfg)
    assert metrics["steps"] == steps and metrics["train_examples"] == steps * 8
    assert metrics["time_budget"] == record and metrics["resumed_from"]
    assert [h["step"] for h in metrics["f1_history"]][-1] == steps        # validation at the end


class Slow(TrainerCallback):
    """A machine slower than the plan: every step takes `seconds` more."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def on_step_end(self, args, state, control, **kw):
        time.sleep(self.seconds)


def test_a_run_slower_than_its_plan_stops_at_the_guard_validated_and_saved(setup, monkeypatch):
    import json

    import train.run as run

    root, data, base = setup
    # the measurement says steps are free: the plan takes every step the data allows (12)
    monkeypatch.setattr(run, "seconds_per_token", lambda *a, **k: 1e-9)
    # guard at 3.3 s, steps of at least 1 s: a loaded machine (a first step of 2 s) still takes two
    cfg = config(root, data, base, "guarded", time_budget_minutes=0.05, max_steps=12)
    metrics = train(cfg, extra_callbacks=[Slow(1.0)])
    planned = json.loads((root / "guarded" / "time_budget.json").read_text())["steps"]
    assert planned == 12 and 2 <= metrics["steps"] < planned
    assert metrics["f1_history"][-1]["step"] == metrics["steps"]          # the stop was validated
    assert (root / "guarded" / "adapter" / "adapter_model.safetensors").exists()


def test_a_run_behind_its_plan_is_shortened_and_its_learning_rate_still_anneals():
    from types import SimpleNamespace

    import torch
    from transformers import get_cosine_schedule_with_warmup, get_constant_schedule_with_warmup

    from train.budget import GUARD, REPLAN_EVERY, BudgetGuard

    now = [0.0]
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = get_cosine_schedule_with_warmup(opt, num_warmup_steps=2, num_training_steps=100)
    guard = BudgetGuard(1.0, evaluating=True, clock=lambda: now[0])      # stops by 66 s
    state = SimpleNamespace(global_step=0, max_steps=100)
    guard.on_train_begin(None, state, None)
    stops = []
    for step in range(1, 101):          # each step takes 1 s: 100 planned steps do not fit 66 s
        now[0] += 1.0
        opt.step()
        sched.step()
        state.global_step = step
        control = SimpleNamespace(should_training_stop=False, should_save=False, should_evaluate=False)
        guard.on_step_end(None, state, control, lr_scheduler=sched)
        if control.should_training_stop:
            stops.append(step)
            break
    end = int(60 * GUARD)
    assert guard.end == end == stops[0] == guard.stopped_at            # shortened at step 10, stopped there
    assert control.should_save and control.should_evaluate
    assert sched.get_last_lr()[0] < 0.01                               # annealed by its new end
    # a schedule without num_training_steps is left as it is; the run still ends where it fits
    sched = get_constant_schedule_with_warmup(opt, num_warmup_steps=2)
    guard, now[0] = BudgetGuard(1.0, evaluating=False, clock=lambda: now[0]), 0.0
    state = SimpleNamespace(global_step=0, max_steps=100)
    guard.on_train_begin(None, state, None)
    for step in range(1, REPLAN_EVERY + 1):
        now[0] += 1.0
        state.global_step = step
        guard.on_step_end(None, state, SimpleNamespace(), lr_scheduler=sched)
    assert guard.end == end and sched.lr_lambdas[0](50) == 1.0


def timed_steps(guard, state, now, sched, first, last, seconds):
    """Steps `first`..`last` through `guard`, each taking `seconds` on the clock `now`."""
    from types import SimpleNamespace

    for step in range(first, last + 1):
        now[0] += seconds
        state.global_step = step
        guard.on_step_end(None, state, SimpleNamespace(), lr_scheduler=sched)


def test_the_guard_reads_the_recent_step_time_and_skips_a_window_with_validation():
    from types import SimpleNamespace

    from train.budget import BudgetGuard

    now = [0.0]
    guard = BudgetGuard(1.0, evaluating=False, clock=lambda: now[0])    # 66 s
    state = SimpleNamespace(global_step=0, max_steps=60)
    guard.on_train_begin(None, state, None)
    steps = partial(timed_steps, guard, state, now, None)

    steps(1, 10, 0.5)                   # on plan
    guard.on_evaluate(None, state, None)
    now[0] += 20.0                      # a validation pass: its window is not a step time
    steps(11, 20, 0.5)
    assert guard.end is None
    steps(21, 30, 2.0)                  # the machine slows 4x: 50 s gone, 16 s left = 8 steps
    assert guard.end == 38


def test_a_run_slowed_for_a_while_gets_its_steps_back_up_to_its_plan():
    """Another job beside the first minutes of a run: shortened while it lasts, lengthened once it is
    gone (never past the plan), and the cosine schedule follows the end each time."""
    from types import SimpleNamespace

    import torch
    from transformers import get_scheduler

    from train.budget import BudgetGuard

    now = [0.0]
    guard = BudgetGuard(1.0, evaluating=False, clock=lambda: now[0])    # 66 s
    state = SimpleNamespace(global_step=0, max_steps=60)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = get_scheduler("cosine", opt, num_warmup_steps=0, num_training_steps=60)
    guard.on_train_begin(None, state, None)
    steps = partial(timed_steps, guard, state, now, sched)

    steps(1, 10, 2.0)                   # 20 s gone at 2 s a step: 46 s left = 23 more
    assert guard.end == 33 and sched.lr_lambdas[0].keywords["num_training_steps"] == 33
    steps(11, 20, 0.5)                  # fast again: 25 s gone, 41 s left = 82 more, capped at the plan
    assert guard.end is None and sched.lr_lambdas[0].keywords["num_training_steps"] == 60
    steps(21, 30, 1.5)                  # 40 s gone, 26 s left = 17 more: 47
    assert guard.end == 47
    steps(31, 40, 1.4)                  # 54 s gone, 12 s left = 8 more: 48, under 5% more than 47: kept
    assert guard.end == 47


def test_the_guard_reads_time_per_token_so_long_and_short_batches_do_not_move_the_end():
    """Length-grouped batches: windows of short rows and of long rows, at one speed per token. Read
    per step, a window of long rows looks like a slow machine; read per token, the run is on plan."""
    from types import SimpleNamespace

    from train.budget import BudgetGuard

    def run(per_token: bool):
        now, tokens = [0.0], [0.0]
        guard = BudgetGuard(1.0, evaluating=False, clock=lambda: now[0],       # 66 s
                            **({"work": lambda: tokens[0], "work_per_step": 100.0} if per_token else {}))
        state = SimpleNamespace(global_step=0, max_steps=60)   # 60 steps of 100 tokens on average: 60 s
        guard.on_train_begin(None, state, None)
        ends = []
        for step in range(1, 61):
            rows = 50 if (step - 1) // 10 % 2 == 0 else 150     # ten short steps, ten long ones, ...
            now[0] += rows * 0.01
            tokens[0] += rows
            state.global_step = step
            guard.on_step_end(None, state, SimpleNamespace(should_training_stop=False), lr_scheduler=None)
            ends.append(guard.end)
        return ends

    assert set(run(per_token=True)) == {None}
    assert any(end is not None and end < 60 for end in run(per_token=False))    # per step: shortened


def test_a_run_on_plan_is_not_shortened():
    from types import SimpleNamespace

    from train.budget import BudgetGuard

    now = [0.0]
    guard = BudgetGuard(1.0, evaluating=False, clock=lambda: now[0])
    state = SimpleNamespace(global_step=0, max_steps=60)
    guard.on_train_begin(None, state, None)
    for step in range(1, 61):           # 60 steps of 1 s: the plan fits 66 s
        now[0] += 1.0
        state.global_step = step
        control = SimpleNamespace(should_training_stop=False)
        guard.on_step_end(None, state, control, lr_scheduler=None)
        assert not control.should_training_stop
    assert guard.end is None and guard.stopped_at is None


@pytest.fixture(scope="module")
def caller(setup):
    """A tiny llama trained (whole, a few seconds) on 32 generated training conversations: it has learned
    to open calls, so what the evaluator returns can be compared with what it wrote."""
    from datasets import load_from_disk

    from toolcore.suites import ConversationReader
    from .tiny_models import train_chats

    root, data, _ = setup
    read = ConversationReader()
    convs = [read(r) for r in load_from_disk(str(data))["train"].select(range(32))]
    model, tok = train_chats(convs, FMT, steps=100, hidden=64, vocab_size=700, lr=5e-3, max_loss=1.5)
    folder = root / "caller"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("suite", ["hackathon30", "test split"])
def test_eval_by_default_returns_the_trained_models_calls_under_the_grammar(setup, caller, tmp_path, suite):
    """`python -m eval` with no decoding override, on a tiny trained model: every prediction's calls
    are the calls the model wrote (parsed from its own text), every token inside a call was under the
    grammar, and no prediction carries an assist record."""
    import json
    import subprocess
    import sys

    root, data, base = setup
    out = tmp_path / "eval"
    where = ["suite=hackathon30"] if suite == "hackathon30" else [f"suite={data}", "limit=24"]
    r = subprocess.run([sys.executable, "-m", "eval", *where, "model=hf", f"model.path={caller}",
                        "model.format=generic", "model.name=tiny",
                        "model.generation.max_new_tokens=48", "latency_cases=0", "report=false",
                        f"output_dir={out}"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 30 if suite == "hackathon30" else len(preds) >= 12
    written = 0
    for p in preds:
        as_written = [c.to_dict() for c in FMT.parse(p["raw_text"]).calls]
        assert p["predicted_calls"] == as_written, p["id"]
        assert not p["assists"], p["id"]
        written += len(as_written)
    assert written > 0          # the tiny model does call, so the comparison is not between empty lists
    summary = json.loads((out / "summary.json").read_text())
    assert summary["assists"]["cases_touched"] == 0 and summary["invalid_calls"]["total"] == 0


@pytest.mark.parametrize("tied", [True, False])
def test_new_rows_trained_apart_give_peft_s_outputs_and_gradients(setup, tied):
    # rows_apart leaves the frozen matrix as it is and computes only the new rows from the trainable ones:
    # the logits, the loss's gradients (new rows and LoRA) and the merged model are peft's own
    import copy

    from train.run import add_lora
    from train.tokens import add_tool_tokens

    root, data, base = setup
    cfg = config(root, data, base, "apart")
    model, tok = load_model_and_tokenizer(str(base))
    if not tied:
        model.config.tie_word_embeddings = False
        model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone() * 0.5)
    new_ids = add_tool_tokens(model, tok, FMT, "mean")
    twin = copy.deepcopy(model)
    torch.manual_seed(0)
    apart = add_lora(cfg, model, new_ids)
    torch.manual_seed(0)
    from peft import get_peft_model
    from train.run import lora_config
    peft_own = get_peft_model(twin, lora_config(cfg, twin, new_ids))
    assert "forward_adapters" in model.get_input_embeddings().token_adapter.__dict__     # rows_apart took it
    for m in (apart, peft_own):         # move the new rows away from their start, as training does
        for n, p in m.named_parameters():
            if "trainable_tokens" in n:
                with torch.no_grad():
                    p.add_(torch.linspace(-0.3, 0.3, p.numel()).view_as(p))
    ids = torch.tensor([[5, new_ids[0], 6, 7, new_ids[1], 8, *new_ids[2:], 9]])
    grads = []
    for m in (apart, peft_own):
        out = m(input_ids=ids, labels=ids)
        out.loss.backward()
        grads.append((out.logits.detach(), {n: p.grad for n, p in m.named_parameters() if p.requires_grad}))
    torch.testing.assert_close(grads[0][0], grads[1][0])
    assert grads[0][1].keys() == grads[1][1].keys() and any("trainable_tokens" in n for n in grads[0][1])
    for n in grads[0][1]:
        torch.testing.assert_close(grads[0][1][n], grads[1][1][n], msg=n)
    with torch.no_grad():
        merged = [m.merge_and_unload()(input_ids=ids).logits for m in (apart, peft_own)]
    torch.testing.assert_close(merged[0], merged[1])
    torch.testing.assert_close(merged[0], grads[0][0])


def test_the_lm_head_sees_only_each_rows_labelled_positions(setup):
    # rows whose labels sit at different positions: the head gets exactly the labelled positions (not
    # their union over the batch), and the loss and gradients are those of the full logits
    from types import SimpleNamespace

    from toolcore.tokenize import IGNORE
    from train.data import Collator
    from train.run import add_lora
    from train.tokens import add_tool_tokens
    from train.trainer import ToolTrainer

    root, data, base = setup
    model, tok = load_model_and_tokenizer(str(base))
    new_ids = add_tool_tokens(model, tok, FMT, "mean")
    model = add_lora(config(root, data, base, "heads"), model, new_ids)
    rows = [{"input_ids": list(range(5, 17)), "labels": [IGNORE] * 3 + list(range(8, 12)) + [IGNORE] * 5},
            {"input_ids": list(range(20, 29)), "labels": [IGNORE] * 6 + list(range(26, 29))}]
    batch = Collator(tok.pad_token_id)(rows)
    seen = []
    model.get_output_embeddings().register_forward_hook(lambda mod, args, out: seen.append(args[0].shape))
    stub = SimpleNamespace(real_tokens=0, labeled_lm_head=True, unmasked_right_padding=True, decision_weight=1.0,
                           model=model)
    stub.attention_mask = partial(ToolTrainer.attention_mask, stub)
    stub.packed = ToolTrainer.packed
    losses, grads = [], []
    for labelled in (True, False):
        stub.labeled_lm_head = labelled
        model.zero_grad()
        loss = ToolTrainer.compute_loss(stub, model, batch)
        loss.backward()
        losses.append(loss.detach())
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad})
    # labelled targets: positions 2-5 of row one (predicting labels 3-6), 5-7 of row two
    assert seen[0][:2] == (1, 4 + 3) and seen[1][:2] == (2, 12)
    torch.testing.assert_close(losses[0], losses[1])
    for n in grads[0]:
        torch.testing.assert_close(grads[0][n], grads[1][n], msg=n)
