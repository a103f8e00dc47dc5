"""An endpoint that answered and then refuses connections (an engine restarting) is waited for,
without spending attempts, up to ``engine_down_timeout_s`` from its first refusal; one that
never answered fails as before. Real simulator servers on loopback, stopped and started on the
same port."""

from __future__ import annotations

import asyncio
import threading
import time
from urllib.parse import urlsplit

from engine_helpers import REQ, run, settings

from touchstone_ray.engines import ChatResult
from touchstone_ray.engines.openai import OpenAIEngine
from touchstone_ray.sim import SimConfig, SimServer

FAST = SimConfig(ttft_ms=5, tps=2000, answer_tokens=4)


def _engine(url: str, **kw: float) -> OpenAIEngine:
    return OpenAIEngine(settings(url + "/v1", down_probe_s=0.1, **kw))


def test_a_restarting_engine_is_waited_for_without_spending_attempts() -> None:
    sim = SimServer(FAST)
    url = sim.start()
    engine = _engine(url, engine_down_timeout_s=30.0, max_attempts=1)
    back_after_s = 1.0

    def restart() -> None:
        time.sleep(back_after_s)
        again.start()

    async def go() -> tuple[ChatResult, ChatResult, ChatResult]:
        try:
            before = await engine.chat(REQ)
            sim.stop()
            threading.Thread(target=restart, daemon=True).start()
            during = await engine.chat(REQ)
            after = await engine.chat(REQ)
            return before, during, after
        finally:
            await engine.aclose()

    again = SimServer(FAST, port=urlsplit(url).port or 0)
    try:
        before, during, after = run(go())
    finally:
        again.stop()
    assert (before.ok, before.engine_down_s) == (True, None)
    assert during.ok and during.attempt == 1  # max_attempts 1: the refusals were not attempts
    assert during.engine_down_s is not None
    assert back_after_s - 0.2 < during.engine_down_s < back_after_s + 2.0
    assert (after.ok, after.engine_down_s, engine.outage.since) == (True, None, None)


def test_calls_share_the_outage_and_give_up_together_at_its_timeout() -> None:
    sim = SimServer(FAST)
    url = sim.start()
    engine = _engine(url, engine_down_timeout_s=1.0)

    async def go() -> tuple[list[ChatResult], ChatResult, float]:
        try:
            assert (await engine.chat(REQ)).ok
            sim.stop()
            first = asyncio.ensure_future(engine.chat(REQ))
            await asyncio.sleep(0.5)  # a call sent half-way into the outage …
            late = await asyncio.gather(first, engine.chat(REQ))
            began = time.monotonic()
            after = await engine.chat(REQ)  # … and one sent after it timed out
            return late, after, time.monotonic() - began
        finally:
            await engine.aclose()

    late, after, after_s = run(go())
    for result in late:
        assert (result.ok, result.error_kind, result.attempt) == (False, "connect", 1)
        assert result.error is not None
        assert result.error.startswith(
            f"{url}/v1 still refused connections after engine_down_timeout_s = 1 s: cannot reach"
        )
    waited = [r.engine_down_s for r in late]
    assert waited[0] is not None and 0.9 < waited[0] < 2.0
    assert waited[1] is not None and 0.4 < waited[1] < 1.5  # not a second of its own
    assert (after.ok, after.error_kind, after.attempt) == (False, "connect", 1)
    assert after_s < 0.5  # the outage is past its timeout: no new wait


def test_an_endpoint_that_never_answered_is_not_waited_for() -> None:
    sim = SimServer(FAST)
    url = sim.start()
    sim.stop()
    began = time.monotonic()
    engine = _engine(url, engine_down_timeout_s=30.0, max_attempts=2)

    async def go() -> ChatResult:
        try:
            return await engine.chat(REQ)
        finally:
            await engine.aclose()

    result = run(go())
    assert (result.ok, result.error_kind, result.attempt, result.engine_down_s) == (
        False,
        "connect",
        2,
        None,
    )
    assert result.error is not None and result.error.startswith(f"cannot reach {url}/v1/chat")
    assert time.monotonic() - began < 5
