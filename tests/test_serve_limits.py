"""What a server refuses, and how: a missing or wrong API key (401), a body past `max_body_mb` (413, also when
it arrives in chunks without a length), more requests than `max_waiting` (503 with Retry-After, at once
rather than holding the socket). Real uvicorn servers and the official `openai` client."""

from __future__ import annotations

import http.client
import json
import threading
import urllib.request
from urllib.parse import urlparse

import pytest

openai = pytest.importorskip("openai")

from .test_serve import TIMER, start_server, stop  # noqa: E402

ASK = {"model": "symbolic", "messages": [{"role": "user", "content": "Set a timer for 5 minutes"}], "tools": [TIMER]}


@pytest.fixture(scope="module")
def guarded():
    proc, url = start_server("model=symbolic", "api_key=sekret-123", "max_body_mb=0.01")
    yield url
    stop(proc)


def test_an_api_key_is_checked_when_the_server_has_one(guarded):
    with pytest.raises(openai.AuthenticationError) as info:
        openai.OpenAI(base_url=guarded + "/v1", api_key="wrong", max_retries=0).chat.completions.create(**ASK)
    assert info.value.status_code == 401 and info.value.body["code"] == "invalid_api_key"
    r = openai.OpenAI(base_url=guarded + "/v1", api_key="sekret-123", max_retries=0).chat.completions.create(**ASK)
    assert r.choices[0].message.tool_calls[0].function.name == "set_timer"
    with urllib.request.urlopen(guarded + "/health") as h:        # the health check stays open
        assert h.status == 200


def test_a_body_past_the_limit_is_refused_with_413(guarded):
    client = openai.OpenAI(base_url=guarded + "/v1", api_key="sekret-123", max_retries=0)
    big = {**ASK, "messages": [{"role": "user", "content": "timer " * 4000}]}       # 24 kB against 10 kB
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(**big)
    assert info.value.status_code == 413 and "max_body_mb" in info.value.body["message"]
    # the same body in chunks, with no Content-Length: counted as it arrives
    u = urlparse(guarded)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    body = json.dumps(big).encode()
    conn.request("POST", "/v1/chat/completions", body=(body[i:i + 4096] for i in range(0, len(body), 4096)),
                 headers={"Authorization": "Bearer sekret-123", "Content-Type": "application/json"},
                 encode_chunked=True)
    resp = conn.getresponse()
    assert resp.status == 413 and json.loads(resp.read())["error"]["code"] == "request_too_large"


def test_a_full_queue_answers_503_with_retry_after_and_every_request_gets_an_answer():
    proc, url = start_server("model=symbolic", "model._target_=tests.slow_model.SlowSymbolicModel",
                             "+model.delay_s=0.4", "max_batch=1", "max_waiting=2", "batch_window_ms=0")
    try:
        statuses, retry_after = [], []

        def one() -> None:
            req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(ASK).encode(),
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    statuses.append(r.status)
            except urllib.error.HTTPError as e:
                statuses.append(e.code)
                retry_after.append(e.headers.get("Retry-After"))

        threads = [threading.Thread(target=one) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(statuses) == 8 and set(statuses) <= {200, 503}
        assert statuses.count(200) >= 3 and statuses.count(503) >= 1
        assert all(v is not None and int(v) >= 1 for v in retry_after)
    finally:
        stop(proc)
