"""Where a one-loop client's timing error comes from: the clock start and the loop's wake-up.

Two suspects of a TTFT error that grows with the streams one asyncio loop serves, measured
apart on every request of :class:`~touchstone_ray.engines.openai.OpenAIEngine` against the
simulator in its own process (TTFT 100 ms, 100 tok/s, 50 tokens):

* ``clock_gap_ms``: the body write (``on_request_chunk_sent``, where the engine's clock now
  starts) minus aiohttp's ``on_request_headers_sent`` hook (where it started before). aiohttp
  serialises and buffers the headers there and writes them with the body from a task; on
  Python 3.11 that task ran one loop turn or more later, so a clock started at the headers
  counted the loop's queue as TTFT, until ``engines/_eager_send.py`` made the write happen in
  the same turn (this figure shows it: near 0 now);
* ``wake_lag_ms``: per chunk handed out by ``readany``, the stream loop's wake-up minus the
  return of the socket read of its first byte (``StampingHandler``): what a stamp taken after
  ``readany`` (before) adds to one taken at the read (now).

    python bench/bench_client_clock.py [--levels 1,4,16,64] [--n 2]

``--n``: requests per stream slot (a level of c streams sends max(16, c × n)). Prints one
JSON summary (p50 / p99 / max in ms per level, the load average before each level). About a
minute.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import SimProcess, dump, machine

from touchstone_ray.descriptive import percentile
from touchstone_ray.engines import ChatRequest, EngineSettings, _http, base
from touchstone_ray.engines.openai import OpenAIEngine

SENT: list[_http.SentAt] = []
WAKE: list[float] = []


class RecordedSentAt(_http.SentAt):
    """The engine's send clock, kept for the figures."""

    def __init__(self) -> None:
        super().__init__()
        SENT.append(self)


_split = _http.ReadStamps.split


def recorded_split(
    self: _http.ReadStamps, start: int, chunk: bytes, fallback: float
) -> list[tuple[float, bytes]]:
    pieces = _split(self, start, chunk, fallback)
    WAKE.append(fallback - pieces[0][0])
    return pieces


def ms(values: list[float]) -> dict[str, Any]:
    def r(v: float | None) -> float | None:
        return None if v is None else round(v * 1000, 3)

    return {
        "p50": r(percentile(values, 50)),
        "p99": r(percentile(values, 99)),
        "max": r(max(values) if values else None),
        "n": len(values),
    }


async def level(url: str, c: int, n: int) -> dict[str, Any]:
    engine = OpenAIEngine(EngineSettings(base_url=url + "/v1", max_attempts=1))
    sem = asyncio.Semaphore(c)

    async def one(i: int) -> bool:
        req = ChatRequest(model="m", messages=[{"role": "user", "content": f"c{c} {i}"}])
        async with sem:
            return (await engine.chat(req)).ok

    try:
        oks = await asyncio.gather(*(one(i) for i in range(max(16, c * n))))
    finally:
        await engine.aclose()
    gaps = [s.t - s.t_headers for s in SENT if s.t is not None and s.t_headers is not None]
    out = {"ok": sum(oks), "clock_gap_ms": ms(gaps), "wake_lag_ms": ms(list(WAKE))}
    SENT.clear()
    WAKE.clear()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1,4,16,64")
    ap.add_argument("--n", type=int, default=2)
    args = ap.parse_args()
    base.SentAt = RecordedSentAt  # type: ignore[misc]
    _http.ReadStamps.split = recorded_split  # type: ignore[method-assign]
    results: dict[str, Any] = {}
    with SimProcess(models=["m"], ttft_ms=100, tps=100, answer_tokens=50) as sim:
        for c in (int(x) for x in args.levels.split(",")):
            load = round(os.getloadavg()[0], 2)
            results[f"c={c}"] = {**asyncio.run(level(sim.url, c, args.n)), "loadavg_1m": load}
            print(c, results[f"c={c}"], file=sys.stderr)
    dump({"bench": "client_clock", "results": results, "machine": machine()})


if __name__ == "__main__":
    main()
