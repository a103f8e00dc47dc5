"""Failure injection, loading, stats and traces of the simulated engine (real HTTP)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from touchstone_ray.sim import SimConfig, SimModelKnobs, SimServer

TOKENS = 20
MSGS = [{"role": "user", "content": "Was mache ich zuerst?"}]
PATHS = {"ollama": "/api/chat", "openai": "/v1/chat/completions"}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    config = SimConfig(
        ttft_ms=5,
        tps=2000,
        answer_tokens=TOKENS,
        model_overrides={
            "flaky": SimModelKnobs(fail_first_n=2),
            "down": SimModelKnobs(fail_rate=1.0),
            "err": SimModelKnobs(error_event_rate=1.0),
            "cut": SimModelKnobs(disconnect_rate=1.0),
            "stall": SimModelKnobs(stall_rate=1.0),
            "garbage": SimModelKnobs(garbage_rate=1.0),
            "busy": SimModelKnobs(ttft_ms=200, answer_tokens=5),
        },
    )
    with SimServer(config) as sim:
        assert sim.url is not None
        yield sim.url


def post(url: str, api: str, model: str, **body: Any) -> httpx.Response:
    payload = {"model": model, "messages": MSGS, "stream": False, **body}
    return httpx.post(url + PATHS[api], json=payload, timeout=10)


def lines_of(url: str, api: str, model: str, timeout: httpx.Timeout | None = None) -> list[str]:
    payload = {"model": model, "messages": MSGS, "stream": True}
    with httpx.stream("POST", url + PATHS[api], json=payload, timeout=timeout or 10) as r:
        assert r.status_code == 200
        return [line for line in r.iter_lines() if line]


def token_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if '"content":"' in line and '"content":""' not in line]


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_503_while_loading_then_200(api: str) -> None:
    model = f"loading-{api}"
    with SimServer(SimConfig(load_s=0.4, answer_tokens=3, tps=1000)) as sim:
        assert sim.url is not None
        first = post(sim.url, api, model)
        assert first.status_code == 503
        assert "model is loading" in first.text
        assert int(first.headers["Retry-After"]) >= 1
        time.sleep(0.45)
        ok = post(sim.url, api, model)
        assert ok.status_code == 200
        if api == "ollama":
            assert ok.json()["load_duration"] == 400_000_000  # reported once, after the load
            assert post(sim.url, api, model).json()["load_duration"] == 0


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_fail_first_n(url: str, api: str) -> None:
    httpx.post(f"{url}/sim/reset")
    statuses = [post(url, api, "flaky").status_code for _ in range(3)]
    assert statuses == [500, 500, 200]
    assert post(url, api, "down").status_code == 500


def test_fail_rate_is_deterministic() -> None:
    def run() -> list[int]:
        with SimServer(SimConfig(fail_rate=0.5, answer_tokens=2, tps=1000, seed=7)) as sim:
            assert sim.url is not None
            return [post(sim.url, "openai", "m").status_code for _ in range(12)]

    first = run()
    assert first == run()
    assert {500, 200} == set(first)  # a retry of the same request draws anew


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_error_event_inside_200(url: str, api: str) -> None:
    lines = lines_of(url, api, "err")
    errors = [line for line in lines if '"error"' in line]
    assert len(errors) == 1
    payload = json.loads(errors[0].removeprefix("data: "))
    assert payload["error"]
    assert 1 <= len(token_lines(lines)) < TOKENS
    assert not any('"done":true' in line or '"finish_reason":"stop"' in line for line in lines)


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_disconnect_mid_stream(url: str, api: str) -> None:
    got: list[str] = []
    payload = {"model": "cut", "messages": MSGS, "stream": True}
    with (
        pytest.raises(httpx.RemoteProtocolError),
        httpx.stream("POST", url + PATHS[api], json=payload) as r,
    ):
        got.extend(line for line in r.iter_lines() if line)
    assert 1 <= len(token_lines(got)) < TOKENS


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_stall_hangs_until_client_gives_up(url: str, api: str) -> None:
    got: list[str] = []
    payload = {"model": "stall", "messages": MSGS, "stream": True}
    t0 = time.perf_counter()
    with (
        pytest.raises(httpx.ReadTimeout),
        httpx.stream(
            "POST", url + PATHS[api], json=payload, timeout=httpx.Timeout(5, read=0.3)
        ) as r,
    ):
        got.extend(line for line in r.iter_lines() if line)
    assert time.perf_counter() - t0 >= 0.3
    assert 1 <= len(token_lines(got)) < TOKENS
    deadline = time.monotonic() + 2
    while httpx.get(f"{url}/sim/stats").json()["in_flight"].get("stall", 0):
        assert time.monotonic() < deadline, "stalled handler never noticed the client left"
        time.sleep(0.05)


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_garbage_line_then_stream_goes_on(url: str, api: str) -> None:
    lines = lines_of(url, api, "garbage")
    bad = []
    for line in lines:
        data = line.removeprefix("data: ")
        if data == "[DONE]":
            continue
        try:
            json.loads(data)
        except ValueError:
            bad.append(line)
    assert len(bad) == 1
    assert len(token_lines(lines)) == TOKENS


def test_stop_cuts_a_stalled_stream() -> None:
    sim = SimServer(SimConfig(stall_rate=1.0, answer_tokens=5, tps=1000))
    url = sim.start()
    payload = {"model": "m", "messages": MSGS, "stream": True}
    with httpx.stream("POST", url + PATHS["ollama"], json=payload, timeout=10) as r:
        it = r.iter_lines()
        next(it)
        t0 = time.perf_counter()
        sim.stop()
        with pytest.raises(httpx.HTTPError):
            list(it)
    assert time.perf_counter() - t0 < 3


def test_stats_max_in_flight_and_trace(url: str) -> None:
    httpx.post(f"{url}/sim/reset")

    async def burst() -> list[int]:
        async with httpx.AsyncClient(timeout=10) as client:
            tasks = [
                client.post(
                    url + PATHS["openai"],
                    json={"model": "busy", "messages": [{"role": "user", "content": str(i)}]},
                )
                for i in range(4)
            ]
            return [r.status_code for r in await asyncio.gather(*tasks)]

    assert asyncio.run(burst()) == [200] * 4
    stats = httpx.get(f"{url}/sim/stats").json()
    assert stats["requests"]["busy"] == 4
    assert stats["max_in_flight"]["busy"] == 4
    assert stats["in_flight"]["busy"] == 0
    assert len(stats["requests_by_key"]) == 4
    lines_of(url, "openai", "busy")
    lines_of(url, "openai", "busy")
    stats = httpx.get(f"{url}/sim/stats").json()
    assert sorted(stats["requests_by_key"].values()) == [1, 1, 1, 1, 2]

    traces = httpx.get(f"{url}/sim/trace", params={"limit": 1}).json()["traces"]
    assert len(traces) == 1
    (trace,) = traces
    assert trace["model"] == "busy" and trace["stream"] and trace["status"] == 200
    times = [t for t, _ in trace["chunks"]]
    channels = [c for _, c in trace["chunks"]]
    assert channels[0] == "role" and channels.count("content") == 5
    assert channels[-2:] == ["final", "done"]
    assert trace["t_received"] <= trace["t_headers"] <= times[0]
    assert times == sorted(times)
    first_token = times[channels.index("content")]
    assert first_token - trace["t_received"] == pytest.approx(0.2, abs=0.03)

    httpx.post(f"{url}/sim/reset")
    assert httpx.get(f"{url}/sim/stats").json()["requests"] == {}
    assert httpx.get(f"{url}/sim/trace").json()["traces"] == []


def test_trace_memory_is_bounded() -> None:
    with SimServer(SimConfig(trace_limit=3, answer_tokens=2, tps=1000, ttft_ms=0)) as sim:
        for _ in range(5):
            post(str(sim.url), "ollama", "m")
        traces = httpx.get(f"{sim.url}/sim/trace?limit=100").json()["traces"]
        assert [t["id"] for t in traces] == [3, 4, 5]
