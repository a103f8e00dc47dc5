"""Client overhead in TTFT and ITL: what the client measures minus when the server really sent.

Runs the simulator in a *separate process* (so server and client do not share a GIL) on a
fixed schedule (TTFT 100 ms, 100 tok/s, 200 tokens, OpenAI SSE), streams 1, 8 and 64
concurrent chats through a client, and compares every token chunk's arrival time (taken by the
engine at chunk arrival, before parsing) with the server's ground-truth send time from
``/sim/trace``. Per concurrency level it reports, in milliseconds:

* ``ttft_err_ms``: measured TTFT minus the true first-token send time (median, p99);
* ``itl_err_ms``: |measured inter-token gap minus the true gap| (median, p99);
* ``latency_ms``: arrival minus send over all chunks (median, p99), and client CPU seconds.

Clients: ``aiohttp`` is the real :class:`OpenAIEngine`; ``httpx`` is the same request, SSE
parser and normalizer over ``httpx.AsyncClient`` (one shared client, unlimited pool).

    python bench/bench_client_overhead.py [--clients aiohttp,httpx] [--levels 1,8,64]

Prints one JSON summary on stdout. Not a test; takes about a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import subprocess
import sys
import time
from typing import Any

import httpx

from touchstone_ray.engines import ChatRequest, EngineSettings, StreamNormalizer
from touchstone_ray.engines.normalize import percentile
from touchstone_ray.engines.openai import OpenAIEngine, OpenAIStreamParser

SCHEDULE = {"ttft_ms": 100, "tps": 100, "answer_tokens": 200, "seed": 1}
SERVER = """
import sys
from touchstone_ray.sim import SimConfig, serve_forever
serve_forever(SimConfig(**{cfg}), port=0, on_ready=lambda url: print(url, flush=True))
"""

Captured = list[tuple[float, StreamNormalizer]]
"""(epoch t_start, normalizer) per finished stream."""


class CapturingEngine(OpenAIEngine):
    """The real engine, keeping each attempt's normalizer for the per-chunk comparison."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.normalizers: dict[str, StreamNormalizer] = {}

    def new_normalizer(self, t0: float, req: ChatRequest) -> StreamNormalizer:
        norm = super().new_normalizer(t0, req)
        self.normalizers[req.messages[0]["content"]] = norm
        return norm


async def run_aiohttp(base: str, reqs: list[ChatRequest]) -> Captured:
    engine = CapturingEngine(EngineSettings(base_url=base + "/v1", max_attempts=1))
    try:
        await engine.server_info()
        results = await asyncio.gather(*(engine.chat(r) for r in reqs))
    finally:
        await engine.aclose()
    out: Captured = []
    for req, res in zip(reqs, results, strict=True):
        assert res.ok and res.t_start is not None, res.error
        out.append((res.t_start, engine.normalizers[req.messages[0]["content"]]))
    return out


async def run_httpx(base: str, reqs: list[ChatRequest]) -> Captured:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(limits=limits, timeout=600) as client:
        engine = OpenAIEngine(EngineSettings(base_url=base + "/v1"))

        async def one(req: ChatRequest) -> tuple[float, StreamNormalizer]:
            body, _ = engine.build_body(req)
            payload = json.dumps(body).encode()
            t_start, t0 = time.time(), time.perf_counter()
            norm = StreamNormalizer(t0)
            parser = OpenAIStreamParser(norm)
            headers = {"Content-Type": "application/json"}
            url = base + "/v1/chat/completions"
            async with client.stream("POST", url, content=payload, headers=headers) as resp:
                async for chunk in resp.aiter_raw():
                    parser.feed(time.perf_counter(), chunk)
            assert parser.done
            return t_start, norm

        return list(await asyncio.gather(*(one(r) for r in reqs)))


CLIENTS = {"aiohttp": run_aiohttp, "httpx": run_httpx}


def stats(values: list[float]) -> dict[str, float | None]:
    def ms(v: float | None) -> float | None:
        return None if v is None else round(v * 1000, 3)

    return {"median": ms(percentile(values, 50)), "p99": ms(percentile(values, 99))}


def compare(captured: Captured, traces: dict[str, dict[str, Any]], keys: list[str]) -> Any:
    ttft_err: list[float] = []
    itl_err: list[float] = []
    latency: list[float] = []
    for (t_start, norm), key in zip(captured, keys, strict=True):
        sent = [t for t, ch in traces[key]["chunks"] if ch in ("content", "reasoning")]
        got = [t_start + (t - norm.t0) for t in norm.token_times]
        assert len(sent) == len(got) == SCHEDULE["answer_tokens"], (len(sent), len(got))
        lat = [g - s for g, s in zip(got, sent, strict=True)]
        ttft_err.append(lat[0])
        itl_err.extend(abs(b - a) for a, b in itertools.pairwise(lat))
        latency.extend(lat)
    return {
        "ttft_err_ms": stats(ttft_err),
        "itl_err_ms": stats(itl_err),
        "latency_ms": stats(latency),
    }


async def fetch_traces(base: str) -> dict[str, dict[str, Any]]:
    async with httpx.AsyncClient() as client:
        resp = await client.get(base + "/sim/trace", params={"limit": 10_000})
        return {t["key"]: t for t in resp.json()["traces"]}


async def level(base: str, client: str, n: int, rounds: int, tag: str) -> dict[str, Any]:
    from touchstone_ray.sim._text import request_key

    reqs: list[ChatRequest] = []
    captured: Captured = []
    cpu = time.process_time()
    for r in range(rounds):
        batch = [
            ChatRequest(
                model="bench",
                messages=[{"role": "user", "content": f"{tag} {r} {i}"}],
                temperature=0.0,
                seed=1,
            )
            for i in range(n)
        ]
        captured.extend(await CLIENTS[client](base, batch))
        reqs.extend(batch)
    cpu = time.process_time() - cpu
    keys = [request_key(q.model, [dict(m) for m in q.messages]) for q in reqs]
    out = compare(captured, await fetch_traces(base), keys)
    return {"streams": len(reqs), "client_cpu_s": round(cpu, 2), **out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", default="aiohttp,httpx")
    ap.add_argument("--levels", default="1,8,64")
    ap.add_argument("--rounds", type=int, default=3, help="batches per level (1 stream: x3)")
    args = ap.parse_args()
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER.format(cfg=repr(SCHEDULE))],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip()
        summary: dict[str, Any] = {"schedule": SCHEDULE, "results": {}}
        for client in args.clients.split(","):
            for n in (int(x) for x in args.levels.split(",")):
                rounds = args.rounds * 3 if n == 1 else args.rounds
                res = asyncio.run(level(base, client, n, rounds, f"{client}-{n}"))
                summary["results"].setdefault(client, {})[str(n)] = res
                print(f"{client:8s} x{n:<3d} {json.dumps(res)}", file=sys.stderr)
        print(json.dumps(summary, indent=2))
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
