"""This machine's own limit, shared by the benchmarks that report a fraction of it."""

from __future__ import annotations

import time


def matmul_flops(dtype: str = "float32", m: int = 1024, k: int = 576, n: int = 1536, reps: int = 40) -> float:
    """Measured FLOP/s of one (m x k) @ (k x n) matmul in `dtype`, SmolLM2-135M's MLP shape by default."""
    import torch

    a, b = torch.randn(m, k, dtype=getattr(torch, dtype)), torch.randn(k, n, dtype=getattr(torch, dtype))
    for _ in range(3):
        a @ b
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * m * k * n * reps / (time.perf_counter() - t0)
