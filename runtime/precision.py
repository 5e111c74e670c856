"""Whether this machine computes bf16 natively, so bf16 autocast is a speed-up and not a 50x slow-down.

On CPUs with AVX512_BF16 or AMX a bf16-autocast matmul runs about 2x faster than fp32; on CPUs without
them (AVX2-only laptops, desktops and many cloud CPUs) torch emulates bf16 and the same matmul is 50x
slower. torch's `get_cpu_capability()` says "AVX512" on both kinds of AVX-512 CPU, so it cannot decide:
Linux lists the instructions in /proc/cpuinfo; elsewhere one small matmul is timed both ways.
"""

from __future__ import annotations

import sys
import time
from functools import lru_cache
from pathlib import Path

NATIVE_FLAGS = ("avx512_bf16", "amx_bf16")


def _cpuinfo_flags() -> set[str] | None:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            flags.update(line.split(":", 1)[1].split())
    return flags or None


def _timed_matmuls() -> tuple[float, float]:
    """Seconds of one 256x256 matmul in fp32 and under bf16 autocast (best of 3, after a warm-up)."""
    import torch

    a, b = torch.randn(256, 256), torch.randn(256, 256)

    def best(autocast: bool) -> float:
        times = []
        for _ in range(4):
            t0 = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                a @ b
            times.append(time.perf_counter() - t0)
        return min(times[1:])
    return best(False), best(True)


@lru_cache(maxsize=1)
def cpu_bf16_native() -> tuple[bool, str]:
    """(native, why): whether bf16 matmuls are native on this CPU, and what said so, in words."""
    import torch

    capability = torch.backends.cpu.get_cpu_capability()
    flags = _cpuinfo_flags()
    if flags is not None:
        found = [f for f in NATIVE_FLAGS if f in flags]
        if found:
            return True, f"{capability} with {', '.join(found)}"
        return False, f"{capability}, no {' or '.join(NATIVE_FLAGS)} in /proc/cpuinfo"
    fp32, bf16 = _timed_matmuls()
    return bf16 <= 1.5 * fp32, f"{capability}: a bf16 matmul took {bf16 / fp32:.1f}x the fp32 one"


def bf16_autocast_allowed(wanted: bool, device_type: str, what: str) -> bool:
    """`wanted`, except on a CPU without native bf16, where it is turned off; says which in one line
    (on stderr) whenever a CPU run asked for it."""
    if not wanted or device_type != "cpu":
        return wanted
    native, why = cpu_bf16_native()
    print(f"{what}: bf16 autocast {'on' if native else 'off, fp32 instead'} ({why})", file=sys.stderr, flush=True)
    return native
