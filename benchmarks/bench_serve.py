"""Load test of `python -m serve`: N concurrent clients (official `openai` client, one thread each) send a
fixed number of requests; then the same requests one at a time. Reports requests/s, p50/p95 latency and
errors for both.

    python benchmarks/bench_serve.py                                  # SmolLM2 (offline default), 8 clients
    python benchmarks/bench_serve.py --clients 16 --requests 64 --max-tokens 24
    python benchmarks/bench_serve.py --model symbolic                 # the server's own overhead
    python benchmarks/bench_serve.py --serve model.adapter=runs/demo/adapter --tools
    python benchmarks/bench_serve.py --model llamacpp --serve model.path=runs/demo/gguf/model-q8_0.gguf \
        --tools --clients 16 --seconds 120                             # 16 clients for 2 minutes

A request the server refuses (503 when its queue is full, 413) is counted as refused, apart from failures
(anything else: a 500, a dropped connection, a timeout); the clients do not retry.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.test_serve import TIMER, WEATHER, start_server, stop  # noqa: E402

PROMPTS = ["What's the weather in Paris?", "Set a timer for 10 minutes.", "Tell me a short fact about the sea.",
           "What is the weather like in Tokyo today?", "Remind me to call mum.", "How warm is it in Rome?"]


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] if s else float("nan")


def load(client, model: str, clients: int, requests: int, max_tokens: int, tools: bool,
         seconds: float | None = None) -> dict:
    """`requests` requests over `clients` threads, or, with `seconds`, as many as they send in that time."""
    import openai

    latencies: list[float] = []
    errors: list[str] = []
    refused: dict[int, int] = {}
    lock = threading.Lock()
    counter = iter(range(requests) if seconds is None else __import__("itertools").count())
    deadline = None if seconds is None else time.perf_counter() + seconds

    def worker():
        while deadline is None or time.perf_counter() < deadline:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            kw = {"tools": [WEATHER, TIMER]} if tools else {}
            t0 = time.perf_counter()
            try:
                client.chat.completions.create(model=model, max_tokens=max_tokens, temperature=0,
                                               messages=[{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}], **kw)
                with lock:
                    latencies.append(time.perf_counter() - t0)
            except openai.APIStatusError as e:
                with lock:
                    if e.status_code in (413, 503):
                        refused[e.status_code] = refused.get(e.status_code, 0) + 1
                    else:
                        errors.append(f"{e.status_code}: {e}")
            except Exception as e:   # noqa: BLE001 - every failure is counted and reported
                with lock:
                    errors.append(f"{type(e).__name__}: {e}")

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {"clients": clients, "requests": len(latencies) + len(errors) + sum(refused.values()),
            "answered": len(latencies), "refused": refused, "wall_s": round(wall, 2),
            "requests_per_s": round(len(latencies) / wall, 3),
            "p50_ms": round(percentile(latencies, 0.5) * 1000), "p95_ms": round(percentile(latencies, 0.95) * 1000),
            "errors": len(errors), "first_error": errors[0] if errors else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2", help="an eval model config (configs/model/*.yaml)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=32, help="requests in each phase")
    ap.add_argument("--seconds", type=float, default=None,
                    help="run the concurrent phase this long instead of a fixed number of requests")
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--tools", action="store_true", help="offer two tools in every request")
    ap.add_argument("--serve", nargs="*", default=[], help="more `python -m serve` overrides")
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    args = ap.parse_args()
    import openai

    overrides = [f"model={args.model}", *(["model.device=cpu"] if args.model not in ("symbolic", "router", "llamacpp") else []),
                 *args.serve]
    proc, url = start_server(*overrides, timeout=600)
    try:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=600)
        name = client.models.list().data[0].id
        load(client, name, 1, 2, args.max_tokens, args.tools)                       # warm-up (grammar compile...)
        concurrent = load(client, name, args.clients, args.requests, args.max_tokens, args.tools, args.seconds)
        with __import__("urllib.request").request.urlopen(url + "/health") as r:
            batches = json.loads(r.read())
        serial = load(client, name, 1, args.requests, args.max_tokens, args.tools)
    finally:
        stop(proc)
    result = {"model": args.model, "max_tokens": args.max_tokens, "tools": args.tools, "cpus": os.cpu_count(),
              "omp_threads": os.environ.get("OMP_NUM_THREADS"), "concurrent": concurrent, "one_at_a_time": serial,
              "largest_batch": batches["largest_batch"],
              "speedup": round(concurrent["requests_per_s"] / serial["requests_per_s"], 2) if serial["requests_per_s"] else None}
    print(json.dumps(result, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
