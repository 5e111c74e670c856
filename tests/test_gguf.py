"""Export to GGUF and back through llama.cpp, on a tiny llama trained here by the real trainer with SmolLM2's
real tokenizer (the converter recognises its pre-tokenizer): `train.export` merges the adapter, runs
llama.cpp's own converter and quantizer; the llama.cpp engine then gives the calls the transformers engine
gives for the same adapter, under the same grammar."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (the [llamacpp] extra)")

from data_gen.config import DataGenConfig  # noqa: E402
from data_gen.generate import generate  # noqa: E402
from toolcore.hub import load_tokenizer  # noqa: E402
from toolcore.suites import load_suite  # noqa: E402
from train.config import DataConfig, FamilyConfig, LoraSettings, TrainConfig, TrainingConfig  # noqa: E402
from train.run import train  # noqa: E402

from .tiny_models import tiny_llama  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("gguf")
    data = root / "data"
    generate(DataGenConfig(output_dir=str(data), num_conversations=300, shard_size=300), progress=False)
    tok = load_tokenizer("smollm2")
    base = root / "base"
    tiny_llama(len(tok), hidden=64, layers=2).save_pretrained(base)
    tok.save_pretrained(base)
    cfg = TrainConfig(family=FamilyConfig(name="tiny", path=str(base), format="generic", lora_targets="all-linear"),
                      lora=LoraSettings(r=8, alpha=16),
                      data=DataConfig(path=str(data), train_examples=160, eval_cases=0, max_length=768),
                      training=TrainingConfig(max_steps=40, batch_size=4, learning_rate=5e-3, eval_every=0, seed=0),
                      output_dir=str(root / "run"), wandb_mode="disabled")
    train(cfg)
    return root / "run"


@pytest.fixture(scope="module")
def exported(run_folder):
    r = subprocess.run([sys.executable, "-m", "train.export", str(run_folder), "--types", "f16", "q8_0"],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return run_folder / "gguf"


def test_export_writes_gguf_files_with_the_tool_tokens_and_the_chat_template(exported):
    from gguf import GGUFReader

    record = json.loads((exported / "export.json").read_text())
    assert record["format"] == "generic" and set(record["files"]) == {"f16", "q8_0"}
    assert record["bytes"]["q8_0"] < record["bytes"]["f16"]
    reader = GGUFReader(str(exported / "model-f16.gguf"))
    fields = reader.fields
    template = bytes(fields["tokenizer.chat_template"].parts[-1]).decode()
    assert "<|tool_call_start|>" in template                   # the generic format's template, embedded
    tokens = fields["tokenizer.ggml.tokens"]
    vocab = [bytes(tokens.parts[i]).decode(errors="replace") for i in tokens.data]
    assert {"<|tool_call_start|>", "<|tool_call_end|>", "<|tool_response_start|>", "<|tool_response_end|>"} <= set(vocab)
    assert "FROM ./model-q8_0.gguf" in (exported / "Modelfile").read_text()
    assert (exported / "tokenizer" / "tokenizer.json").exists()


def test_llama_cpp_gives_the_transformers_engines_calls_under_the_same_grammar(run_folder, exported):
    from runtime.models.hf import HFModel
    from runtime.models.llamacpp import LlamaCppModel

    cases = load_suite("hackathon30")[:12]
    gen = {"max_new_tokens": 40}
    reference = HFModel(path=str(run_folder.parent / "base"), format="generic", adapter=str(run_folder / "adapter"),
                        generation=gen).predict(cases)
    on_llama = LlamaCppModel(str(exported / "model-f16.gguf"), generation=gen, threads=2).predict(cases)
    same_calls = sum(a.calls == b.calls for a, b in zip(reference, on_llama))
    same_text = sum(a.raw_text == b.raw_text for a, b in zip(reference, on_llama))
    assert any(p.calls for p in reference)                    # the adapter opens calls: there is something to compare
    assert same_calls == len(cases), [(a.raw_text, b.raw_text) for a, b in zip(reference, on_llama) if a.calls != b.calls]
    assert same_text >= len(cases) - 1
    for case, p in zip(cases, on_llama):                      # every call it returns is valid for the offered tools
        offered = {t.name: t for t in case.conversation.tools}
        for call in p.calls:
            assert call.name in offered and offered[call.name].validation_errors(call.arguments) == []


def test_eval_runs_a_gguf_through_the_command_line(exported, tmp_path):
    out = tmp_path / "eval"
    r = subprocess.run([sys.executable, "-m", "eval", "suite=hackathon30", "limit=6", "model=llamacpp",
                        f"model.path={exported / 'model-q8_0.gguf'}", "model.generation.max_new_tokens=32",
                        "latency_cases=3", "report=false", f"output_dir={out}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"] == 6 and summary["model"] == "model-q8_0" and summary["invalid_calls"]["total"] == 0


def test_export_refuses_a_folder_that_is_not_a_run(tmp_path):
    r = subprocess.run([sys.executable, "-m", "train.export", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "not a training run" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_sequences_decoded_together_give_the_calls_of_one_at_a_time(exported):
    """Several conversations share one llama_decode a step (each its own sequence of the context): the
    calls and text of each are those it gets alone."""
    from runtime.models.llamacpp import LlamaCppModel

    cases = load_suite("hackathon30")[:12]
    gen = {"max_new_tokens": 40}
    together = LlamaCppModel(str(exported / "model-q8_0.gguf"), generation=gen, parallel=4, threads=2)
    alone = LlamaCppModel(str(exported / "model-q8_0.gguf"), generation=gen, parallel=1, threads=2)
    a, b = together.predict(cases), alone.predict(cases)
    assert [p.calls for p in a] == [p.calls for p in b]
    assert sum(x.raw_text == y.raw_text for x, y in zip(a, b)) >= len(cases) - 1
    assert together.engine.timing.steps < alone.engine.timing.steps    # fewer llama_decode calls for the same ids


def test_a_prompt_that_starts_like_the_last_one_computes_only_the_rest(exported):
    from runtime.models.llamacpp import LlamaCppModel
    from toolcore.conversation import Conversation, Message
    from toolcore.tokenize import encode_prompt

    case = load_suite("hackathon30")[0]
    model = LlamaCppModel(str(exported / "model-q8_0.gguf"), generation={"max_new_tokens": 24}, parallel=2, threads=2)
    engine = model.engine
    first = engine.run([case.conversation])[0]
    assert engine.reused_tokens == 0
    # the same system prompt and tools, another request: their ids come from the cache
    other = Conversation([Message.text("user", "What's the weather like in Lisbon?")], case.conversation.tools)
    again = engine.run([other])[0]
    shared = encode_prompt(engine.tok, engine.fmt, case.conversation)
    mine = encode_prompt(engine.tok, engine.fmt, other)
    prefix = next(k for k, (x, y) in enumerate(zip(shared, mine)) if x != y)
    assert engine.reused_tokens == prefix > 50
    fresh = LlamaCppModel(str(exported / "model-q8_0.gguf"), generation={"max_new_tokens": 24}, parallel=1, threads=2)
    assert fresh.engine.run([other])[0].output_ids == again.output_ids     # reusing changes nothing
    assert first.prompt_tokens == len(shared)


@pytest.mark.parametrize("kind, lookup", [("f16", False), ("q8_0", True)])
def test_drafted_decoding_writes_what_plain_decoding_writes(exported, kind, lookup):
    """Drafts (the grammar's forced ids, ids looked up in the request) are checked in the pass of the id
    before them and kept only where the model chooses them itself: the same calls and text in fewer passes."""
    from runtime.models.llamacpp import LlamaCppModel

    cases = load_suite("hackathon30")[:12] + load_suite("handwritten")[:6]
    gen = {"max_new_tokens": 48}
    plain = LlamaCppModel(str(exported / f"model-{kind}.gguf"), generation=gen, threads=2, draft_tokens=0)
    drafted = LlamaCppModel(str(exported / f"model-{kind}.gguf"), generation=gen, threads=2, draft_tokens=8,
                            draft_lookup=lookup)
    a, b = plain.predict(cases), drafted.predict(cases)
    assert any(p.calls for p in a)
    assert [p.calls for p in a] == [p.calls for p in b]
    # a pass over several ids may round a near-tie of the free text the other way
    assert sum(x.raw_text == y.raw_text for x, y in zip(a, b)) >= len(cases) - 1
    counts = drafted.timing
    assert counts["draft_grammar_accepted"] > 0 and plain.timing["draft_grammar_proposed"] == 0
    assert (counts["draft_lookup_proposed"] > 0) == lookup
    assert drafted.engine.timing.steps < plain.engine.timing.steps


def test_the_tools_prefix_held_for_a_tool_set_is_not_computed_again(exported):
    from runtime.models.llamacpp import LlamaCppModel
    from toolcore.conversation import Conversation, Message
    from toolcore.tokenize import encode_prompt_parts

    engine = LlamaCppModel(str(exported / "model-q8_0.gguf"), generation={"max_new_tokens": 16}, parallel=2,
                           threads=2).engine
    first, second = load_suite("hackathon30")[0].conversation, load_suite("hackathon30")[5].conversation
    _, head = encode_prompt_parts(engine.tok, engine.fmt, first)
    assert engine.hold_prefix(first) == head and engine.hold_prefix(first) == 0
    engine.hold_prefix(second)                   # a second tool set takes the other sequence
    engine.run([Conversation([Message.text("user", "Anything for Oslo?")], first.tools)])
    assert engine.reused_tokens >= head          # the first tool set's prefix was still held
