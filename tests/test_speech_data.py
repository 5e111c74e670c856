"""Spoken data: real TTS (espeak-ng, piper), real augmentation, real Whisper verification, the
generated folder (checksums, resume after SIGKILL), the preview page in headless Chromium, and the
spoken evaluation suites through the cascaded baseline."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from data_gen.speech.augment import AugmentConfig, add_noise, augment, change_speed, reverb
from data_gen.speech.config import SpeechConfig
from data_gen.speech.tts import Voice, get_engine, sample_voice
from toolcore.audio import USER_RATE, read_wav, resample, sha256_file, write_wav_atomic
from toolcore.errors import ToolkitError

ROOT = Path(__file__).resolve().parents[1]
ESPEAK = shutil.which("espeak-ng")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(ESPEAK is None, reason="espeak-ng is installed by `make test` (apt)")


def speak(text: str, voice: str = "en-us", rate: float = 1.0) -> np.ndarray:
    x, sr = get_engine("espeak").synthesize(text, Voice("espeak", voice, rate, 50))
    return resample(x, sr, USER_RATE)


# ----- engines ------------------------------------------------------------------------------------

def test_espeak_and_piper_produce_speech_of_plausible_length():
    for engine, voice in (("espeak", "en-gb+Alicia"), ("piper", "en_US-joe-medium")):
        x, sr = get_engine(engine).synthesize("set an alarm for seven thirty a m", Voice(engine, voice))
        seconds = len(x) / sr
        assert 1.0 < seconds < 5.0, (engine, seconds)
        assert np.abs(x).max() > 0.05 and np.isfinite(x).all()


def test_synthesis_is_deterministic():
    for engine, voice in (("espeak", "en-us+f2"), ("piper", "en_US-joe-medium")):
        v = Voice(engine, voice, 1.1, 60)
        a, b = get_engine(engine).synthesize("play some jazz", v)[0], get_engine(engine).synthesize("play some jazz", v)[0]
        assert np.array_equal(a, b), engine


def test_rate_changes_duration_and_text_is_never_an_option():
    slow, fast = speak("the quick brown fox jumps", rate=0.8), speak("the quick brown fox jumps", rate=1.25)
    assert len(slow) > 1.3 * len(fast)
    x = speak("--help me set a timer")      # on stdin: spoken, not parsed as a flag
    assert len(x) / USER_RATE > 0.8


def test_voice_draws_are_seeded_and_skip_held_out_voices():
    engines = {"espeak": 0.7, "piper": 0.3}
    a = [sample_voice(random.Random(i), engines, exclude=["quincy"]) for i in range(200)]
    b = [sample_voice(random.Random(i), engines, exclude=["quincy"]) for i in range(200)]
    assert a == b
    assert not any(v.name.endswith("+quincy") for v in a)
    assert {v.engine for v in a} == {"espeak", "piper"} and len({v.name for v in a}) > 50


def test_unavailable_engines_fail_clearly():
    with pytest.raises(ToolkitError, match="unknown TTS engine"):
        get_engine("festival")
    try:
        import TTS  # noqa: F401
    except ImportError:
        with pytest.raises(ToolkitError, match="coqui-tts is not installed"):
            get_engine("coqui")


# ----- augmentation and audio files ------------------------------------------------------------------

def test_noise_hits_the_target_snr_and_effects_keep_shape():
    rng = np.random.default_rng(0)
    x = speak("what is the weather in boston")
    for snr in (5.0, 20.0):
        y = add_noise(x, snr, rng, "pink")
        measured = 10 * np.log10(np.mean(x.astype(np.float64) ** 2) / np.mean((y - x).astype(np.float64) ** 2))
        assert abs(measured - snr) < 0.1
    assert len(reverb(x, USER_RATE, 0.4, rng)) == len(x)
    assert abs(len(change_speed(x, 1.1)) - len(x) / 1.1) <= 1
    cfg = AugmentConfig(noise_p=1, reverb_p=1, speed_p=1, resample_p=1)
    y1, d1 = augment(x, USER_RATE, cfg, random.Random(3))
    y2, d2 = augment(x, USER_RATE, cfg, random.Random(3))
    assert d1 == d2 and np.array_equal(y1, y2) and set(d1) == {"speed", "rt60", "band_hz", "snr_db", "noise"}
    assert np.abs(y1).max() <= 0.99 + 1e-6


def test_audio_files_round_trip_and_corrupt_files_are_named(tmp_path):
    x = speak("hello there")
    digest = write_wav_atomic(tmp_path / "a.wav", x, USER_RATE)
    assert digest == sha256_file(tmp_path / "a.wav")
    y, sr = read_wav(tmp_path / "a.wav")
    assert sr == USER_RATE and len(y) == len(x) and np.abs(y - x).max() < 1e-3
    bad = tmp_path / "half.wav"
    bad.write_bytes((tmp_path / "a.wav").read_bytes()[:30])
    with pytest.raises(ToolkitError, match="half.wav.*cannot decode audio"):
        read_wav(bad)
    with pytest.raises(ToolkitError, match="not found"):
        read_wav(tmp_path / "missing.wav")


def test_config_rejects_bad_combinations():
    with pytest.raises(ToolkitError, match="max_wer"):
        SpeechConfig(max_wer=0)
    with pytest.raises(ToolkitError, match="unknown TTS engine"):
        SpeechConfig(engines={"festival": 1.0})
    with pytest.raises(ToolkitError, match="snr_db range is reversed"):
        SpeechConfig(augment={"snr_db": (30.0, 5.0)})


# ----- verification --------------------------------------------------------------------------------

def test_alignment_charges_each_clip_its_own_errors():
    from data_gen.speech.asr_check import attribute
    from toolcore.asr import Window

    # clip 1's first word is heard late (timestamp inside clip 0's span): alignment still gives it to clip 1
    w = Window(spans=[(0, 1.0, 3.0), (1, 4.0, 6.0)],
               words=[(" set", 1.1, 1.3), (" a", 1.4, 1.5), (" timer", 1.6, 2.0), (" play", 2.9, 3.2),
                      (" jazz", 4.5, 4.9), (" music", 5.0, 5.4), (" please", 5.5, 5.8)])
    out = attribute(w, {0: "set a timer", 1: "play jazz music"})
    assert out[0].wer == 0 and out[1].asr_text == "play jazz music please"
    assert out[1].wer == pytest.approx(1 / 3, abs=1e-3)


@pytest.fixture(scope="module")
def asr():
    from toolcore.asr import WhisperASR

    return WhisperASR(threads=2)


def test_whisper_hears_clear_espeak_speech(asr):
    from data_gen.speech.asr_check import check_clips

    texts = ["set an alarm for seven thirty", "what is the weather in boston", "play some jazz music",
             "start a timer for fifteen minutes"]
    checks = check_clips(asr, [speak(t) for t in texts], texts)
    assert np.mean([c.wer for c in checks]) < 0.2, checks
    noisy = check_clips(asr, [add_noise(speak(texts[0]), -15, np.random.default_rng(0), "white")], texts[:1])
    assert noisy[0].wer > 0.5      # speech buried under noise is caught


# ----- the generated folder -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def text_data(tmp_path_factory):
    from data_gen.config import DataGenConfig
    from data_gen.generate import generate

    out = tmp_path_factory.mktemp("text") / "default"
    generate(DataGenConfig(num_conversations=400, output_dir=str(out), export=[], shard_size=400), progress=False)
    return out


# what a resumed run must reproduce exactly, row by row
RESUME_COLUMNS = ["id", "voice", "user_audio_sha256", "wer", "asr_text", "reply_audio_sha256", "attempts"]


def small_cfg(text_data: Path, out: Path, **kw) -> SpeechConfig:
    return SpeechConfig(source=str(text_data), output_dir=str(out), workers=2, shard_size=3,
                        conversations={"train": 6, "validation": 2, "test": 2}, preview_examples=6, **kw)


@pytest.fixture(scope="module")
def speech_data(text_data, tmp_path_factory):
    from data_gen.speech.generate import generate

    out = tmp_path_factory.mktemp("speech") / "speech"
    manifest = generate(small_cfg(text_data, out, engines={"espeak": 0.8, "piper": 0.2}), progress=False)
    return out, manifest


def test_spoken_dataset_is_complete_and_checksummed(speech_data):
    from datasets import load_from_disk

    out, manifest = speech_data
    dd = load_from_disk(str(out))
    assert {s: len(d) for s, d in dd.items()} == {"train": 6, "validation": 2, "test": 2} == manifest["splits"]
    for row in dd["train"]:
        assert sha256_file(out / row["user_audio"]) == row["user_audio_sha256"]
        x, sr = read_wav(out / row["user_audio"])
        assert sr == USER_RATE and 0.5 <= len(x) / sr <= 20 and row["wer"] <= 0.3
        if row["reply_text"]:
            assert sha256_file(out / row["reply_audio"]) == row["reply_audio_sha256"]
            assert read_wav(out / row["reply_audio"])[1] == 24_000
        assert not re.search(r"\d", row["spoken_text"])           # numbers are spoken as words
        assert json.loads(row["expected_calls"]) is not None
    kept = {row["user_audio"] for d in dd.values() for row in d} | {row["reply_audio"] for d in dd.values() for row in d}
    on_disk = {p.relative_to(out).as_posix() for p in (out / "audio").rglob("*.wav")}
    assert on_disk == kept - {""}                                    # no orphan or rejected takes left behind
    assert sum(manifest["attempts"].values()) == 10 and manifest["wer"]["max"] <= 0.3
    assert (out / "preview.html").exists() and not out.with_name("speech.partial").exists()


def test_generation_resumes_after_sigkill_with_the_same_result(text_data, speech_data, tmp_path):
    from datasets import load_from_disk

    out = tmp_path / "speech"
    cfg = small_cfg(text_data, out, engines={"espeak": 0.8, "piper": 0.2})
    fields = json.dumps({k: v for k, v in cfg.as_dict().items() if k != "augment"})
    script = ("import json, sys; from data_gen.speech.generate import generate; "
              "from data_gen.speech.config import SpeechConfig; "
              "generate(SpeechConfig(**json.loads(sys.argv[1])), progress=False)")
    proc = subprocess.Popen([sys.executable, "-c", script, fields], cwd=ROOT, start_new_session=True)
    shards = out.with_name("speech.partial") / "shards"
    deadline = time.time() + 240
    while time.time() < deadline and not (shards.exists() and any(shards.glob("*.json"))):
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (out / "manifest.json").exists()
    done_before = {p.name for p in shards.glob("*.json")}
    assert done_before
    from data_gen.speech.generate import generate

    generate(cfg, progress=False)
    ref = load_from_disk(str(speech_data[0]))
    got = load_from_disk(str(out))
    for split in ref:
        assert got[split].select_columns(RESUME_COLUMNS).to_list() == ref[split].select_columns(RESUME_COLUMNS).to_list()


def test_a_run_killed_after_a_later_shard_redoes_the_earlier_one(text_data, speech_data, tmp_path):
    """Workers hand shards back in any order, so a killed run can leave shard 1 finished and shard 0 not.
    The resumed run must fill the gap: the dataset is the first kept rows in candidate order."""
    from datasets import load_from_disk

    from data_gen.speech.generate import fingerprint, generate

    ref_dir, _ = speech_data
    out = tmp_path / "speech"
    cfg = small_cfg(text_data, out, engines={"espeak": 0.8, "piper": 0.2})
    work = out.with_name("speech.partial")
    (work / "shards").mkdir(parents=True)
    (work / "fingerprint.json").write_text(json.dumps({"fp": fingerprint(cfg)}))
    later = json.loads((ref_dir / "shards" / "train-00001.json").read_text())
    assert later["rows"], "the reference run kept nothing in train shard 1: pick another shard"
    for row in later["rows"]:
        for rel in (row["user_audio"], row["reply_audio"]):
            if rel:
                (work / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(ref_dir / rel, work / rel)
    (work / "shards" / "train-00001.json").write_text(json.dumps(later))

    generate(cfg, progress=False)
    ref, got = load_from_disk(str(ref_dir)), load_from_disk(str(out))
    for split in ref:
        assert got[split].select_columns(RESUME_COLUMNS).to_list() == ref[split].select_columns(RESUME_COLUMNS).to_list()
    assert all(sha256_file(out / r["user_audio"]) == r["user_audio_sha256"] for r in got["train"])


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is installed by `make test` (apt)")
def test_preview_page_plays_every_clip_in_headless_chromium(speech_data, tmp_path):
    out, _ = speech_data
    page = out / "preview.html"
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--autoplay-policy=no-user-gesture-required",
                          f"--user-data-dir={tmp_path / 'p'}", "--allow-file-access-from-files",
                          "--virtual-time-budget=8000", "--dump-dom", page.resolve().as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    total = int(re.search(r'data-audio-total="(\d+)"', dom).group(1))
    loaded = re.search(r'data-audio-loaded="(\d+)"', dom)
    assert total >= 6 and loaded and int(loaded.group(1)) == total
    assert "heard:" in dom and "WER" in dom


# ----- spoken suites and the cascaded baseline -------------------------------------------------------

def test_spoken_suite_through_the_cascade(tmp_path, asr):
    from data_gen.speech.suites import build_spoken_suite
    from runtime.models import SymbolicModel
    from runtime.models.cascade import CascadeModel
    from eval.report import write_report
    from eval.runner import evaluate
    from toolcore.suites import load_suite

    src = tmp_path / "three.jsonl"
    src.write_text("".join(ln + "\n" for ln in (ROOT / "toolcore/suites/hackathon30.jsonl").read_text().splitlines()[:3]))
    clean = build_spoken_suite(str(src), tmp_path / "clean")
    noisy = build_spoken_suite(str(src), tmp_path / "noisy", snrs=(20.0, 0.0))
    cases = load_suite(noisy)
    assert len(cases) == 6 and cases[0].user_text == "" and cases[0].transcript
    assert Path(cases[0].user_audio.ref).is_absolute() and Path(cases[0].user_audio.ref).exists()
    # a text model on an audio-only suite sees no text: it cannot read the transcript
    blind = evaluate(SymbolicModel(), str(clean), tmp_path / "blind")
    assert blind["f1"] < 0.5
    model = CascadeModel(SymbolicModel())
    model.asr = asr
    s_clean = evaluate(model, str(clean), tmp_path / "cascade_clean")
    s_noisy = evaluate(model, str(noisy), tmp_path / "cascade_noisy")
    assert s_clean["f1"] >= 0.6
    rows = [json.loads(l) for l in (tmp_path / "cascade_noisy/predictions.jsonl").read_text().splitlines()]
    assert {r["snr_db"] for r in rows} == {20.0, 0.0} and all("asr_wer" in r and "asr_text" in r for r in rows)
    page = write_report([tmp_path / "cascade_clean", tmp_path / "cascade_noisy"], tmp_path / "report.html")
    html = page.read_text()
    assert "Speech in" in html and "F1 20 dB" in html and "F1 clean" in html and "data:audio/wav;base64," in html
    assert s_noisy["cases"] == 6
