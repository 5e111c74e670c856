"""data.pack_requests: a conversation of independent requests over one tool list trains as one row, the tools
once, each request seeing them and itself. The loss and gradients equal those of the separate rows
[tools + request] on a tiny llama and a tiny Qwen2; on a tiny LFM2 they do not (its convolutions read the
tokens before a position whatever the mask says), and packing is refused there."""

import pytest
import torch
import yaml

from data_gen.config import DataGenConfig
from data_gen.generate import generate
from toolcore.conversation import Conversation
from toolcore.errors import ToolkitError
from toolcore.formats import get_format
from toolcore.suites import ConversationReader
from toolcore.tokenize import IGNORE, encode_conversation, encode_packed
from train.config import DataConfig, FamilyConfig, LoraSettings, TrainConfig, TrainingConfig
from train.data import Collator
from train.run import train

from .tiny_models import tiny_llama, tiny_tokenizer

FMT = get_format("generic")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("packing")
    data = root / "data"
    generate(DataGenConfig(output_dir=str(data), num_conversations=160, shard_size=160,
                           requests_per_conversation={3: 1.0}), progress=False)
    from datasets import load_from_disk

    rows = list(load_from_disk(str(data))["train"])
    read = ConversationReader()
    tok = tiny_tokenizer([FMT.render_text(read(r)) for r in rows], extra_special=FMT.tool_tokens, vocab_size=500)
    return root, data, rows, read, tok


def separate(conv: Conversation, starts: list[int]) -> list[Conversation]:
    bounds = list(starts) + [len(conv.messages)]
    return [Conversation(conv.messages[a:b], conv.tools) for a, b in zip(bounds, bounds[1:])]


def token_losses(model, batch, packed: bool):
    extra = {"position_ids": batch["position_ids"]} if packed else {}
    mask = batch["packed_mask"] if packed else None
    logits = model(input_ids=batch["input_ids"], attention_mask=mask, **extra).logits[:, :-1]
    target = batch["labels"][:, 1:]
    keep = target != IGNORE
    return torch.nn.functional.cross_entropy(logits[keep].float(), target[keep], reduction="none")


def test_a_packed_row_holds_the_tools_once_and_each_request_after_them(setup):
    _, _, rows, read, tok = setup
    row = next(r for r in rows if len(r["request_starts"]) == 3)
    conv = read(row)
    packed = encode_packed(tok, FMT, conv, row["request_starts"])
    singles = [encode_conversation(tok, FMT, c)[0] for c in separate(conv, row["request_starts"])]
    shared = sum(b == 0 for b in packed["branch"])
    assert all(s[:shared] == packed["input_ids"][:shared] for s in singles)
    assert len(packed["input_ids"]) == sum(len(s) for s in singles) - 2 * shared
    for k, single in enumerate(singles, start=1):
        at = [i for i, b in enumerate(packed["branch"]) if b == k]
        assert [packed["input_ids"][i] for i in at] == single[shared:]
        assert [packed["position_ids"][i] for i in at] == list(range(shared, len(single)))
    # the whole conversation as one request is the unpacked row
    whole = encode_packed(tok, FMT, conv, [0])
    assert whole["input_ids"] == encode_conversation(tok, FMT, conv)[0] and set(whole["branch"]) == {0, 1}


@pytest.mark.parametrize("family", ["llama", "qwen2"])
def test_packed_loss_and_gradients_equal_separate_rows(setup, family):
    _, _, rows, read, tok = setup
    torch.manual_seed(0)
    if family == "llama":
        model = tiny_llama(len(tok), hidden=64, layers=2)
    else:
        from transformers import Qwen2Config, Qwen2ForCausalLM

        model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128,
                                             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2))
    model = model.float()
    chosen = [r for r in rows if len(r["request_starts"]) == 3][:3]
    collate = Collator(tok.pad_token_id or 0)
    packed_rows = [encode_packed(tok, FMT, read(r), r["request_starts"]) for r in chosen]
    single_rows = []
    for r in chosen:
        for c in separate(read(r), r["request_starts"]):
            ids, labels = encode_conversation(tok, FMT, c)
            single_rows.append({"input_ids": ids, "labels": labels})
    packed_loss = token_losses(model, collate(packed_rows), packed=True)
    single_loss = token_losses(model, collate(single_rows), packed=False)
    assert len(packed_loss) == len(single_loss) > 50
    assert torch.allclose(packed_loss.sum(), single_loss.sum(), rtol=1e-5)
    assert (packed_loss.sort().values - single_loss.sort().values).abs().max() < 1e-5
    grads = []
    for loss in (packed_loss, single_loss):
        model.zero_grad()
        loss.mean().backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
    assert torch.allclose(grads[0], grads[1], rtol=1e-4, atol=1e-6)
    # and without the mask, the branches would read each other: the test can fail
    batch = collate(packed_rows)
    leaky = token_losses(model, {**batch, "packed_mask": None}, packed=True)
    assert (leaky - packed_loss).abs().max() > 1e-3


def test_lfm2_packed_rows_would_differ_and_packing_is_refused(setup):
    from transformers import Lfm2Config, Lfm2ForCausalLM

    _, _, rows, read, tok = setup
    torch.manual_seed(0)
    # a convolution between two attention layers: the first layer alone would read the same ids ("<|im_end|>\n"
    # ends the shared part and every request), and one after the last attention reaches no labelled token
    model = Lfm2ForCausalLM(Lfm2Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=3,
                                       num_attention_heads=4, num_key_value_heads=2,
                                       layer_types=["full_attention", "conv", "full_attention"],
                                       block_auto_adjust_ff_dim=False)).float()
    for m in model.modules():       # weights of a trained size: at the init's 0.02 the leak is below float noise
        if isinstance(m, torch.nn.Conv1d):
            torch.nn.init.normal_(m.weight, std=3.0)
    r = next(r for r in rows if len(r["request_starts"]) == 3)
    collate = Collator(tok.pad_token_id or 0)
    packed = token_losses(model, collate([encode_packed(tok, FMT, read(r), r["request_starts"])]), packed=True)
    singles = [dict(zip(("input_ids", "labels"), encode_conversation(tok, FMT, c)))
               for c in separate(read(r), r["request_starts"])]
    single = token_losses(model, collate(singles), packed=False)
    assert (packed.sort().values - single.sort().values).abs().max() > 1e-4     # exact rows: < 1e-5 (above)
    with pytest.raises(ToolkitError, match="data.pack_requests"):
        TrainConfig(family=FamilyConfig(name="lfm2", path="x", format="lfm2"), data=DataConfig(pack_requests=True))


def test_training_with_packed_requests_takes_fewer_tokens(setup):
    root, data, _, _, tok = setup
    base = root / "base"
    tiny_llama(len(tok), hidden=64, layers=2).save_pretrained(base)
    tok.save_pretrained(base)
    runs = {}
    for pack in (False, True):
        cfg = TrainConfig(family=FamilyConfig(name="tiny", path=str(base), format="generic"), lora=LoraSettings(r=8, alpha=16),
                          data=DataConfig(path=str(data), eval_cases=0, max_length=4096, pack_requests=pack),
                          training=TrainingConfig(max_steps=3, batch_size=4, learning_rate=3e-3, eval_every=0,
                                                  logging_steps=1, seed=0),
                          output_dir=str(root / f"run-{pack}"), wandb_mode="disabled")
        runs[pack] = train(cfg)
    for m in runs.values():
        assert len(m["loss_history"]) == 3 and m["dropped_too_long"] == 0
    assert yaml.safe_load((root / "run-True" / "config.yaml").read_text())["data"]["pack_requests"] is True
