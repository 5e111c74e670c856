"""bf16 autocast only where the CPU computes bf16 natively (runtime/precision.py), on the path that decides."""

from __future__ import annotations

import runtime.precision as precision


def decide(monkeypatch, flags, timings=None):
    precision.cpu_bf16_native.cache_clear()
    monkeypatch.setattr(precision, "_cpuinfo_flags", lambda: flags)
    if timings is not None:
        monkeypatch.setattr(precision, "_timed_matmuls", lambda: timings)
    try:
        return precision.cpu_bf16_native()
    finally:
        precision.cpu_bf16_native.cache_clear()


def test_the_cpu_flags_decide_where_linux_lists_them(monkeypatch):
    assert decide(monkeypatch, {"avx2", "avx512f", "avx512_bf16"})[0]
    assert decide(monkeypatch, {"avx2", "amx_bf16", "amx_tile"})[0]
    native, why = decide(monkeypatch, {"avx2", "avx512f", "fma"})       # AVX-512 without BF16: emulated
    assert not native and "no avx512_bf16 or amx_bf16" in why


def test_elsewhere_one_matmul_is_timed_both_ways(monkeypatch):
    assert decide(monkeypatch, None, timings=(0.010, 0.006))[0]
    native, why = decide(monkeypatch, None, timings=(0.010, 0.55))
    assert not native and "55.0x" in why
    real = decide(monkeypatch, None)          # the real timing runs and gives an answer
    assert isinstance(real[0], bool)


def test_a_cpu_without_native_bf16_trains_in_fp32_and_says_so(monkeypatch, capsys):
    monkeypatch.setattr(precision, "cpu_bf16_native", lambda: (False, "AVX2, no avx512_bf16 or amx_bf16 in /proc/cpuinfo"))
    assert precision.bf16_autocast_allowed(True, "cpu", "training") is False
    assert "training: bf16 autocast off, fp32 instead (AVX2" in capsys.readouterr().err
    assert precision.bf16_autocast_allowed(True, "cuda", "training") is True        # GPUs: as asked
    assert precision.bf16_autocast_allowed(False, "cpu", "training") is False
    assert capsys.readouterr().err == ""           # nothing asked, nothing said
    monkeypatch.setattr(precision, "cpu_bf16_native", lambda: (True, "AVX512 with avx512_bf16"))
    assert precision.bf16_autocast_allowed(True, "cpu", "training") is True


def test_the_engine_prefills_in_fp32_on_such_a_cpu(monkeypatch):
    from runtime.engine import GenerationConfig, ToolLoopEngine
    from toolcore.formats import get_format

    from .tiny_models import tiny_llama, tiny_tokenizer

    fmt = get_format("generic")
    tok = tiny_tokenizer(["a b c"] * 5, extra_special=fmt.tool_tokens, vocab_size=300)
    monkeypatch.setattr(precision, "cpu_bf16_native", lambda: (False, "AVX2"))
    engine = ToolLoopEngine(tiny_llama(len(tok)), tok, fmt, GenerationConfig(autocast=True))
    assert engine.autocast is False
