"""The simulator queues: at most ``slots`` requests of a model generate at once, the rest
wait (inside their TTFT), and decoding slows with the batch (``batch_slowdown``).

Real HTTP on loopback through the project's OpenAI engine (its own TTFT/TPOT clock)."""

from __future__ import annotations

import asyncio

import pytest

from touchstone_ray.engines.base import ChatRequest, ChatResult, EngineSettings
from touchstone_ray.engines.openai import OpenAIEngine
from touchstone_ray.sim import SimConfig, SimServer

TTFT_S = 0.05
TPS = 100.0
SLOWDOWN = 0.5
TOKENS = 11


async def burst(url: str, n: int) -> list[ChatResult]:
    engine = OpenAIEngine(EngineSettings(base_url=url + "/v1", max_attempts=1))
    try:
        req = ChatRequest(model="m", messages=[{"role": "user", "content": "x"}], max_tokens=TOKENS)
        return list(await asyncio.gather(*(engine.chat(req) for _ in range(n))))
    finally:
        await engine.aclose()


def run(n: int, slots: int | None, slowdown: float) -> list[ChatResult]:
    config = SimConfig(
        ttft_ms=TTFT_S * 1000, tps=TPS, answer_tokens=400, slots=slots, batch_slowdown=slowdown
    )
    with SimServer(config) as sim:
        assert sim.url is not None
        return asyncio.run(burst(sim.url, n))


def test_batch_slows_decoding_per_request() -> None:
    results = run(3, slots=None, slowdown=SLOWDOWN)
    assert all(r.ok and r.completion_tokens == TOKENS for r in results)
    expected_tpot = (1 + SLOWDOWN * (3 - 1)) / TPS  # 0.02 s with 3 generating
    for r in results:
        assert r.tpot_s == pytest.approx(expected_tpot, rel=0.15)
        assert r.ttft_s == pytest.approx(TTFT_S, abs=0.03)


def test_requests_beyond_the_slots_wait_inside_ttft() -> None:
    results = sorted(run(4, slots=2, slowdown=0.0), key=lambda r: r.ttft_s or 0)
    assert all(r.ok for r in results)
    service_s = TTFT_S + (TOKENS - 1) / TPS  # one request holds its slot this long
    first, waited = results[:2], results[2:]
    for r in first:
        assert r.ttft_s == pytest.approx(TTFT_S, abs=0.03)
        assert r.tpot_s == pytest.approx(1 / TPS, rel=0.15)  # no slowdown configured
    for r in waited:
        assert r.ttft_s == pytest.approx(service_s + TTFT_S, abs=0.05)


def test_slots_default_is_no_limit() -> None:
    results = run(4, slots=None, slowdown=0.0)
    assert max(r.ttft_s or 0 for r in results) < TTFT_S + 0.04
