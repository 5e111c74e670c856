"""LFM2-Audio end to end on a tiny real model (liquid-audio's LFM2AudioModel from a config, a byte-level
BPE with LFM2's token layout, a random Mimi codec in safetensors) and real speech (espeak-ng):
the speech dataset schema -> liquid_audio chats -> LoRA training (loss goes down, adapter small,
resume gives the same weights) -> reload and generate -> the eval model's tool loop and spoken answer."""

from __future__ import annotations

import io
import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("liquid_audio")

from safetensors.torch import load_file  # noqa: E402
from transformers import TrainerCallback  # noqa: E402

from runtime.engine import default_context  # noqa: E402
from runtime.models.lfm2_audio import LFM2AudioModel, ToolLoop  # noqa: E402
from toolcore.audio import REPLY_RATE, USER_RATE, read_wav, resample, write_wav_atomic  # noqa: E402
from toolcore.conversation import Conversation, Message, Part  # noqa: E402
from toolcore.errors import ToolkitError  # noqa: E402
from toolcore.executors import ExecutionContext, execute  # noqa: E402
from toolcore.formats import get_format  # noqa: E402
from toolcore.registry import load_registry  # noqa: E402
from toolcore.schema import ToolCall  # noqa: E402
from toolcore.suites import cases_from_dataset  # noqa: E402
from train.config import DataConfig, FamilyConfig, LoraSettings, TrainConfig, TrainingConfig  # noqa: E402
from runtime.lfm2_audio import load_model, load_processor  # noqa: E402
from runtime.lfm2_audio.chat import to_chat  # noqa: E402
from train.lfm2_audio.data import row_conversation, speech_cases  # noqa: E402
from train.lfm2_audio.tiny import build_tiny_lfm2_audio  # noqa: E402
from train.run import train  # noqa: E402

from .tiny_models import assert_same_safetensors  # noqa: E402

FMT = get_format("lfm2")
TARGETS = (r"lfm\.layers\.\d+\.(self_attn\.(q_proj|k_proj|v_proj|out_proj)|conv\.(in_proj|out_proj)"
           r"|feed_forward\.(w1|w2|w3))")
# (spoken request, offered tools, calls, spoken answer?, answer)
UTTERANCES = [
    ("What is the weather in Paris?", ["get_weather", "set_timer"], [("get_weather", {"location": "Paris"})], True,
     "It is sunny in Paris."),
    ("Set an alarm for seven thirty.", ["set_alarm", "play_music"], [("set_alarm", {"hour": 7, "minute": 30})], True,
     "Your alarm is set."),
    ("What is twelve times eight?", ["calculate"], [("calculate", {"expression": "12 * 8"})], True, "That is 96."),
    ("Play some jazz.", ["play_music", "get_weather"], [("play_music", {"song": "jazz"})], False, "Playing jazz."),
    ("Hello, how are you?", ["get_time"], [], True, "I am well, thanks."),
    ("Start a timer for ten minutes.", ["set_timer"], [("set_timer", {"minutes": 10})], False, "Timer started."),
    ("Check the weather in Tokyo.", ["get_weather"], [("get_weather", {"location": "Tokyo"})], True, "Tokyo is rainy."),
    ("What time is it?", ["get_time", "calculate"], [("get_time", {})], True, "It is noon."),
]


def speak(text: str, rate: int):
    import soundfile as sf

    wav = subprocess.run(["espeak-ng", "--stdout", "-v", "en-us", text], capture_output=True, check=True).stdout
    x, sr = sf.read(io.BytesIO(wav), dtype="float32")
    return resample(x, sr, rate)


def make_speech_dataset(root: Path) -> Path:
    """The speech dataset contract (what data_gen writes to data/speech), from real espeak-ng speech."""
    from datasets import Dataset, DatasetDict

    registry = load_registry()
    ctx = ExecutionContext(rng=random.Random(0), vocab=default_context().vocab)
    rows = []
    for i, (spoken, tool_names, calls, spoken_reply, answer) in enumerate(UTTERANCES):
        tools = [registry[n] for n in tool_names]
        messages: list[dict] = [{"role": "user", "content": spoken}]
        if calls:
            messages.append({"role": "assistant", "content": "",
                             "tool_calls": [{"name": n, "arguments": a} for n, a in calls]})
            for n, a in calls:
                result = execute(registry[n], a, ctx)
                messages.append({"role": "tool", "name": n, "content": result.to_json()})
        messages.append({"role": "assistant", "content": answer})
        user = speak(spoken, USER_RATE)
        user_rel = f"audio/user_{i}.wav"
        row = {"id": f"s{i}", "category": "single" if calls else "chitchat", "user_text": spoken,
               "messages": json.dumps(messages), "tools": json.dumps([t.to_schema() for t in tools]),
               "expected_calls": json.dumps([{"name": n, "arguments": a} for n, a in calls]),
               "spoken_text": spoken, "user_audio": user_rel,
               "user_audio_sha256": write_wav_atomic(root / user_rel, user, USER_RATE),
               "user_seconds": len(user) / USER_RATE, "reply_text": "", "reply_audio": "", "reply_audio_sha256": "",
               "voice": "en-us", "asr_text": spoken.lower(), "wer": 0.0, "snr_db": float("nan")}
        if spoken_reply:
            reply_rel = f"audio/reply_{i}.wav"
            row |= {"reply_text": answer, "reply_audio": reply_rel,
                    "reply_audio_sha256": write_wav_atomic(root / reply_rel, speak(answer, REPLY_RATE), REPLY_RATE)}
        rows.append(row)
    split = lambda rs: Dataset.from_list(rs)  # noqa: E731
    splits = {"train": split(rows[:6]), "validation": split(rows[6:]), "test": split(rows[6:])}
    DatasetDict(splits).save_to_disk(str(root))
    (root / "manifest.json").write_text(json.dumps({"rows": len(rows), "source": "tests/test_lfm2_audio.py"}))
    return root


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny tensors gain nothing from a second thread, and one thread stays fast when the 2 cores are
    shared (measured: 30 training steps 2.4 s vs 25 s with two threads under a load of 4)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (apt-get install espeak-ng)")
    root = tmp_path_factory.mktemp("lfm2_audio")
    data = make_speech_dataset(root / "speech")
    from datasets import load_from_disk

    texts = [FMT.render_text(row_conversation(r, data)) for r in load_from_disk(str(data))["train"]]
    texts += ["Respond with interleaved text and audio.", "Respond with text."]
    base = build_tiny_lfm2_audio(root / "base", texts)
    return root, data, base


def config(root: Path, data: Path, base: Path, name: str) -> TrainConfig:
    return TrainConfig(
        family=FamilyConfig(name="tiny_audio", kind="lfm2_audio", path=str(base), format="lfm2", lora_targets=TARGETS),
        lora=LoraSettings(r=8, alpha=16), data=DataConfig(path=str(data), eval_cases=2, max_length=1024),
        training=TrainingConfig(max_steps=30, batch_size=2, learning_rate=1e-2, eval_every=10, logging_steps=1,
                                save_total_limit=3, eval_max_new_tokens=16, seed=0, warmup_ratio=0.0,
                                lr_scheduler="constant", audio_loss_weight=0.5),
        output_dir=str(root / name), wandb_mode="disabled")


@pytest.fixture(scope="module")
def straight(setup):
    root, data, base = setup
    return train(config(root, data, base, "straight")), root / "straight"


def test_chat_mapping_matches_the_text_format(setup):
    """Call turns, tool turns and the tool list are the lfm2 format's own text; the spoken answer is
    an interleaved segment; the user's request is audio, not text."""
    from liquid_audio.data.types import AudioSegment, InterleavedSegment

    _, data, _ = setup
    from datasets import load_from_disk

    row = load_from_disk(str(data))["train"][0]
    conv = row_conversation(row, data)
    chat = to_chat(conv, FMT)
    assert [m.role for m in chat] == ["system", "user", "assistant", "tool", "assistant"]
    assert "<|tool_list_start|>" in chat[0].content[0].text and "interleaved" in chat[0].content[0].text
    assert isinstance(chat[1].content[0], AudioSegment) and len(chat[1].content) == 1
    assert chat[2].content[0].text == '<|tool_call_start|>[get_weather(location="Paris")]<|tool_call_end|>'
    assert chat[3].content[0].text.startswith("<|tool_response_start|>{")
    assert isinstance(chat[4].content[0], InterleavedSegment) and chat[4].content[0].text == "It is sunny in Paris."


def test_loss_goes_down_and_outputs(straight, setup):
    metrics, out = straight
    losses = [h["loss"] for h in metrics["loss_history"]]
    assert len(losses) == 30
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < 0.85 * first, (first, last)
    assert all("text_loss" in h and "audio_loss" in h for h in metrics["loss_history"])
    assert metrics["spoken_train_examples"] == 4 and metrics["dropped_too_long"] == 0
    assert set(metrics["tool_token_rows"]) == set(FMT.tool_tokens)
    assert [h["step"] for h in metrics["f1_history"]] == [10, 20, 30]
    # the kept checkpoint is not scored twice: the final scores are the ones logged at its step
    kept = int(metrics["best_checkpoint"].rsplit("-", 1)[1])
    logged = next(h for h in metrics["f1_history"] if h["step"] == kept)
    assert all(metrics["final"][k] == v for k, v in logged.items() if k != "step")
    assert (out / "config.yaml").exists() and (out / "metrics.json").exists()
    # the adapter: LoRA on the backbone only, the tool-token rows, no embedding matrix
    weights = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    lora = [k for k in weights if "lora_" in k]
    assert lora and all(".lfm.layers." in k for k in lora)
    deltas = [v for k, v in weights.items() if "trainable_tokens" in k]
    assert len(deltas) == 1 and deltas[0].shape[0] == len(FMT.tool_tokens)
    full = (setup[2] / "model.safetensors").stat().st_size
    assert metrics["adapter_bytes"] < full / 10, (metrics["adapter_bytes"], full)


class Die(TrainerCallback):
    def on_save(self, args, state, control, **kw):
        if state.global_step >= 20:
            raise KeyboardInterrupt("killed after the checkpoint of step 20")


def test_resume_after_a_kill_gives_the_same_adapter(setup, straight):
    root, data, base = setup
    cfg = config(root, data, base, "resumed")
    # the mapper output is cached by content: reuse it (Mimi encoding is the slow part of preprocessing)
    shutil.copytree(root / "straight" / "preprocessed", root / "resumed" / "preprocessed")
    with pytest.raises(KeyboardInterrupt):
        train(cfg, extra_callbacks=[Die()])
    metrics = train(cfg)
    assert metrics["resumed_from"].endswith("checkpoint-20")
    assert_same_safetensors(root / "straight" / "checkpoints" / "checkpoint-30" / "adapter_model.safetensors",
                            root / "resumed" / "checkpoints" / "checkpoint-30" / "adapter_model.safetensors")


def test_reloaded_adapter_generates_the_same_merged_or_not(setup, straight):
    _, data, base = setup
    _, out = straight
    proc = load_processor(base)
    case = speech_cases(data, "validation")[0]
    runs = []
    for merge in (False, True):
        model = load_model(base, adapter=out / "adapter", merge=merge)
        o = ToolLoop(model, proc, FMT, speak=True, max_new_tokens=40).run(case.conversation)
        runs.append((o.text, o.calls, None if o.answer_codes is None else o.answer_codes.tolist()))
    assert runs[0] == runs[1]
    plain = ToolLoop(load_model(base), proc, FMT, speak=True, max_new_tokens=40).run(case.conversation)
    assert plain.text != runs[0][0]   # the adapter changes what the model says


def test_tool_loop_runs_tools_and_speaks(setup, straight, tmp_path):
    """A forced call turn goes through the real executor, its result is fed back as a tool turn, and
    the model generates the spoken answer after it."""
    _, data, base = setup
    _, out = straight
    model = LFM2AudioModel(str(base), adapter=str(out / "adapter"), device="cpu", max_new_tokens=48,
                           audio_dir=str(tmp_path / "answers"))
    case = speech_cases(data, "validation")[1]           # "What time is it?" with get_time and calculate
    # the registered tools (a dataset row carries bare schemas, which run simulated): calculate really runs
    registry = load_registry()
    conv = Conversation(case.conversation.messages, [registry["get_time"], registry["calculate"]])
    call = ToolCall("calculate", {"expression": "12 * 8"})
    o = model.loop.run(conv, prefix_turns=[FMT.render_calls([call])])
    assert o.calls[0] == call
    ev = o.tool_events[0]
    assert not ev.simulated and ev.error is None and ev.result == {"success": True, "result": 96}
    assert '<|tool_response_start|>{"success": true, "result": 96}<|tool_response_end|>' in o.text
    assert o.stop_reason in ("end_of_turn", "max_new_tokens", "max_tool_calls") and o.new_tokens > 0

    # the tuned tiny model opens every turn with a call marker (text only); the untuned one speaks
    base_model = LFM2AudioModel(str(base), device="cpu", max_new_tokens=48, audio_dir=str(tmp_path / "answers"),
                                audio_root=str(data))
    cases = cases_from_dataset(data, "test")      # the eval runner's cases (the written request may ride along)
    for c in cases:   # the model hears the clip, never reads the request
        (heard,) = base_model.conversation(c).messages[-1].parts
        assert heard.type == "audio" and Path(heard.ref).name == Path(c.raw["user_audio"]).name
    preds = base_model.predict(cases)
    assert len(preds) == 2
    for p in preds:
        assert isinstance(p.calls, list) and p.latency_ms > 0
        assert {"answer_text", "answer_audio", "tool_events", "stop_reason"} <= set(p.details)
        if p.details["answer_audio"]:
            wave, rate = read_wav(p.details["answer_audio"])
            assert rate == REPLY_RATE and len(wave) >= 1920 * p.details["answer_audio_frames"]
    assert any(p.details["answer_audio"] for p in preds)


def test_bad_inputs_are_clear_errors(setup, tmp_path):
    root, data, base = setup
    with pytest.raises(ToolkitError, match="does not exist"):
        load_model(tmp_path / "nope")
    with pytest.raises(ToolkitError, match="no config.json"):
        load_processor(tmp_path)
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"RIFF\x00\x00")
    conv = Conversation([Message("user", [Part("audio", ref=str(bad))])], [])
    with pytest.raises(ToolkitError, match="cannot decode audio"):
        to_chat(conv, FMT)
    from datasets import load_from_disk

    row = dict(load_from_disk(str(data))["train"][0])
    with pytest.raises(ToolkitError, match="user_audio_sha256"):
        row_conversation(row | {"user_audio_sha256": "0" * 64}, data)
    with pytest.raises(ToolkitError, match="family.kind"):
        TrainConfig(family=FamilyConfig(kind="speech"))
    with pytest.raises(ToolkitError, match="not both 0"):
        TrainConfig(training=TrainingConfig(text_loss_weight=0.0, audio_loss_weight=0.0))


def test_lfm25_detokenizer_decodes_off_gpu(tmp_path):
    """LFM2.5-Audio decodes with an LFM-based detokenizer that liquid_audio moves to `.cuda()`; the
    shared decoder builds it on the processor's device instead: 1920 samples (80 ms at 24 kHz) a frame."""
    from runtime.lfm2_audio import audio_decoder

    folder = build_tiny_lfm2_audio(tmp_path / "lfm25", mimi=False, detokenizer=True)
    proc = load_processor(folder)
    with torch.inference_mode():
        wave = audio_decoder(proc)(torch.randint(0, 2048, (1, 8, 5)))
    assert wave.shape == (1, 5 * 1920) and torch.isfinite(wave).all()
