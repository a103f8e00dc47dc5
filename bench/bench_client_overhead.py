"""Client overhead in TTFT and ITL: what the client measures minus when the server really sent.

Runs the simulator in a *separate process* (so server and client do not share a GIL) on a
fixed schedule (TTFT 100 ms, 100 tok/s, 200 tokens, OpenAI SSE), streams 1, 8 and 64
concurrent chats through a client, and compares every token chunk's arrival time (taken by the
engine at chunk arrival, before parsing) with the server's ground-truth send time from
``/sim/trace``. Per concurrency level it reports, in milliseconds:

* ``ttft_err_ms``: measured TTFT minus the true first-token send time (median, p99);
* ``itl_err_ms``: |measured inter-token gap minus the true gap| (median, p99);
* ``latency_ms``: arrival minus send over all chunks (median, p99), and client CPU seconds.

Clients: ``aiohttp`` is the real :class:`OpenAIEngine` in one process (one asyncio loop);
``split`` is the same engine split as the client actor splits an endpoint above
:data:`~touchstone_ray.fleet.stream_worker.STREAMS_PER_PROCESS` streams
(:func:`~touchstone_ray.fleet.stream_worker.split_streams`: that many processes, each with its
share of the streams on its own loop); ``plain`` is the plain loop of
``bench_compare_dispatch.py`` (one thread per stream, one shared ``httpx.Client``, the same
SSE parser, a chunk stamped when ``iter_raw`` hands it over); ``httpx`` is the engine's
request, SSE parser and normalizer over ``httpx.AsyncClient`` (one shared client, unlimited
pool).

    python bench/bench_client_overhead.py [--clients aiohttp,split,plain,httpx] [--levels 1,8,64]

Per level the clients run one batch each in turn (the order rotated every round), so they
share the machine's load alike; each level's ``loadavg_1m`` lists the load before each batch.
``client_cpu_s`` is this process's CPU (for ``split`` the parent only). Prints one JSON
summary on stdout. Not a test; takes about two minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from typing import Any

import httpx

from touchstone_ray.descriptive import percentile
from touchstone_ray.engines import ChatRequest, EngineSettings, StreamNormalizer
from touchstone_ray.engines.openai import OpenAIEngine, OpenAIStreamParser
from touchstone_ray.fleet import split_streams

SCHEDULE = {"ttft_ms": 100, "tps": 100, "answer_tokens": 200, "seed": 1}
SERVER = """
import sys
from touchstone_ray.sim import SimConfig, serve_forever
serve_forever(SimConfig(**{cfg}), port=0, on_ready=lambda url: print(url, flush=True))
"""

Captured = list[tuple[float, float, list[float]]]
"""(epoch t_start, perf_counter t0, perf_counter token times) per finished stream."""


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
        norm = engine.normalizers[req.messages[0]["content"]]
        out.append((res.t_start, norm.t0, norm.token_times))
    return out


def _split_share(job: tuple[str, list[ChatRequest]]) -> Captured:
    base, reqs = job
    return asyncio.run(run_aiohttp(base, reqs))


_POOLS: dict[int, Any] = {}


def _pid(_: int) -> int:
    return os.getpid()


def _pool(n: int) -> Any:
    """``n`` started worker processes (spawned once per size and kept: start-up is not part of
    a stream's timing, and every process is up before the first request)."""
    if n not in _POOLS:
        _POOLS[n] = multiprocessing.get_context("spawn").Pool(n)
        _POOLS[n].map(_pid, range(n), chunksize=1)
    return _POOLS[n]


async def run_split(base: str, reqs: list[ChatRequest]) -> Captured:
    shares = split_streams(len(reqs))
    if len(shares) == 1:
        return await run_aiohttp(base, reqs)
    jobs, at = [], 0
    for share in shares:
        jobs.append((base, reqs[at : at + share]))
        at += share
    pool = _pool(len(shares))
    parts = await asyncio.to_thread(pool.map, _split_share, jobs, 1)
    return [item for part in parts for item in part]


async def run_plain(base: str, reqs: list[ChatRequest]) -> Captured:
    engine = OpenAIEngine(EngineSettings(base_url=base + "/v1"))
    out: list[tuple[float, float, list[float]] | None] = [None] * len(reqs)
    url = base + "/v1/chat/completions"
    headers = {"Content-Type": "application/json"}
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    with httpx.Client(limits=limits, timeout=600) as client:

        def one(i: int, req: ChatRequest) -> None:
            payload = json.dumps(engine.build_body(req)[0]).encode()
            t_start, t0 = time.time(), time.perf_counter()
            norm = StreamNormalizer(t0)
            parser = OpenAIStreamParser(norm)
            with client.stream("POST", url, content=payload, headers=headers) as resp:
                for chunk in resp.iter_raw():
                    parser.feed(time.perf_counter(), chunk)
            assert parser.done
            out[i] = (t_start, t0, norm.token_times)

        threads = [threading.Thread(target=one, args=(i, r)) for i, r in enumerate(reqs)]
        for thread in threads:
            thread.start()
        await asyncio.to_thread(lambda: [t.join() for t in threads])
    return [item for item in out if item is not None]


async def run_httpx(base: str, reqs: list[ChatRequest]) -> Captured:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(limits=limits, timeout=600) as client:
        engine = OpenAIEngine(EngineSettings(base_url=base + "/v1"))

        async def one(req: ChatRequest) -> tuple[float, float, list[float]]:
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
            return t_start, norm.t0, norm.token_times

        return list(await asyncio.gather(*(one(r) for r in reqs)))


CLIENTS = {"aiohttp": run_aiohttp, "split": run_split, "plain": run_plain, "httpx": run_httpx}


def stats(values: list[float]) -> dict[str, float | None]:
    def ms(v: float | None) -> float | None:
        return None if v is None else round(v * 1000, 3)

    return {"median": ms(percentile(values, 50)), "p99": ms(percentile(values, 99))}


def compare(captured: Captured, traces: dict[str, dict[str, Any]], keys: list[str]) -> Any:
    ttft_err: list[float] = []
    itl_err: list[float] = []
    latency: list[float] = []
    for (t_start, t0, token_times), key in zip(captured, keys, strict=True):
        sent = [t for t, ch in traces[key]["chunks"] if ch in ("content", "reasoning")]
        got = [t_start + (t - t0) for t in token_times]
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


def batch_of(n: int, tag: str) -> list[ChatRequest]:
    return [
        ChatRequest(
            model="bench",
            messages=[{"role": "user", "content": f"{tag} {i}"}],
            temperature=0.0,
            seed=1,
        )
        for i in range(n)
    ]


async def timed(client: str, base: str, reqs: list[ChatRequest]) -> tuple[Captured, float]:
    """One batch through ``client``; returns its captures and this process's CPU seconds."""
    cpu = time.process_time()
    captured = await CLIENTS[client](base, reqs)
    return captured, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", default="aiohttp,split,plain,httpx")
    ap.add_argument("--levels", default="1,8,64")
    ap.add_argument("--rounds", type=int, default=3, help="batches per level (1 stream: x3)")
    args = ap.parse_args()
    from touchstone_ray.sim._text import request_key

    clients = args.clients.split(",")
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER.format(cfg=repr(SCHEDULE))],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip()
        summary: dict[str, Any] = {"schedule": SCHEDULE, "results": {}}
        for n in (int(x) for x in args.levels.split(",")):
            rounds = args.rounds * 3 if n == 1 else args.rounds
            got: dict[str, dict[str, Any]] = {
                c: {"reqs": [], "captured": [], "cpu": 0.0, "load": []} for c in clients
            }
            for r in range(rounds):  # clients interleaved, order rotated: same load for all
                k = r % len(clients)
                for client in clients[k:] + clients[:k]:
                    entry = got[client]
                    entry["load"].append(round(os.getloadavg()[0], 2))
                    reqs = batch_of(n, f"{client}-{n}-{r}")
                    captured, cpu = asyncio.run(timed(client, base, reqs))
                    entry["reqs"] += reqs
                    entry["captured"] += captured
                    entry["cpu"] += cpu
            traces = asyncio.run(fetch_traces(base))
            for client, entry in got.items():
                keys = [request_key(q.model, [dict(m) for m in q.messages]) for q in entry["reqs"]]
                res = {
                    "streams": len(entry["reqs"]),
                    "client_cpu_s": round(entry["cpu"], 2),
                    **compare(entry["captured"], traces, keys),
                    "loadavg_1m": entry["load"],
                }
                summary["results"].setdefault(client, {})[str(n)] = res
                print(f"{client:8s} x{n:<3d} {json.dumps(res)}", file=sys.stderr)
        print(json.dumps(summary, indent=2))
    finally:
        for pool in _POOLS.values():
            pool.terminate()
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
