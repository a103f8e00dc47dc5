"""The extra client processes of a host: above :data:`STREAMS_PER_PROCESS` concurrent streams
to one endpoint, one asyncio loop stamps chunks late (it cannot read every socket as the bytes
arrive), so the host's client actor
(:class:`~touchstone_ray.fleet.client_actor.HostClient`) splits that endpoint's streams over
:func:`split_streams` ``(concurrency)`` :class:`StreamWorker` actors on the same pinned node,
each with its own loop and connection pool, where the host has the cores for them
(:data:`CORES_PER_WORKER`). Also what every client process of a host does alike: build an
endpoint's engine (:func:`make_engine`) and run at normal priority (:func:`restore_priority`).
"""

from __future__ import annotations

import contextlib
import math
import os
from typing import Any

from touchstone_ray.config import ModelSpec
from touchstone_ray.engines.base import ChatRequest, ChatResult, Engine
from touchstone_ray.engines.registry import create_engine

__all__ = [
    "CLIENT_NICENESS",
    "CORES_PER_WORKER",
    "STREAMS_PER_PROCESS",
    "StreamWorker",
    "make_engine",
    "max_stream_workers",
    "restore_priority",
    "split_streams",
]

STREAMS_PER_PROCESS = 16
"""The most concurrent streams to one endpoint that one client process (one asyncio loop)
runs; above it the endpoint is split over worker processes (:func:`split_streams`).

Why 16, measured with ``bench/bench_client_overhead.py`` (simulator in its own process, TTFT
100 ms, 100 tok/s, 200 tokens: 100 chunks/s a stream; two runs on the shared 2-core machine
at load average 8 and 22, docs/benchmarks.md): up to 16 streams (1,600 chunks/s) one loop's
TTFT error median stayed within 0.2-3 ms of the plain loop's (a thread per stream); at 64
streams one loop's median was 9.7-10.6 ms, 4 processes of 16 streams 3.2-3.3 ms, the plain
loop 0.4-2.7 ms. A smaller share would add processes (about 100 MB of memory each, a Ray
worker) on hosts that have few cores to give them; the p99 on this loaded machine was too
noisy (41-290 ms one loop, 47-170 ms split, 60-104 ms plain) to choose by."""


def split_streams(concurrency: int, per_process: int = STREAMS_PER_PROCESS) -> list[int]:
    """How ``concurrency`` streams to one endpoint are spread over client processes: one share
    per process, ``ceil(concurrency / per_process)`` processes, shares as even as possible
    (the first ones take the remainder), each ≤ ``per_process``. ``[concurrency]`` (no split)
    up to ``per_process``. E.g. ``split_streams(64, 16) == [16, 16, 16, 16]``,
    ``split_streams(40, 16) == [14, 13, 13]``. Raises ValueError for ``concurrency < 1`` or
    ``per_process < 1``."""
    if concurrency < 1 or per_process < 1:
        raise ValueError(f"concurrency {concurrency} and per_process {per_process} must be ≥ 1")
    n = math.ceil(concurrency / per_process)
    base, extra = divmod(concurrency, n)
    return [base + 1 if i < extra else base for i in range(n)]


CORES_PER_WORKER = 4
"""Host CPU cores per :class:`StreamWorker` process a split may use: at most
``cores // CORES_PER_WORKER`` worker processes (:func:`max_stream_workers`), none on a host
with fewer than 8 cores. Each worker is a busy process: where the engine computes on the same
CPU, worker processes take its cores and the figures measure a slower server. Measured with
``bench/bench_compare_dispatch.py --levels 64:256`` on this project's 2-core machine
(simulator on the same cores, load average 1.1–3.2, 2 repetitions each): the cells of 256
requests at 64 streams took 1.128 × the ideal split over 4 workers against 1.061 × in one
process (whole run 1.277 against 1.180 ×)."""


def max_stream_workers(cores: int | None) -> int:
    """How many :class:`StreamWorker` processes a split may use on a host with ``cores`` CPU
    cores (``None``: unknown, as 1): ``max(1, cores // CORES_PER_WORKER)``; 1 means no split."""
    return max(1, (cores or 1) // CORES_PER_WORKER)


CLIENT_NICENESS = 0
"""The scheduling priority (``nice``) a client process asks for. Ray starts every worker
process at niceness 15 (its ``worker_niceness`` setting, so workers do not starve the raylet);
seen on this project's machines (``ps -o ni`` of ``ray::HostClient``: 15). A process that
stamps chunk arrivals then runs after every normal process on a busy machine, so its stamps
come late by whatever else is runnable."""


def restore_priority() -> int:
    """Set every thread of this process to niceness :data:`CLIENT_NICENESS` where allowed
    (lowering it needs root or ``CAP_SYS_NICE``). On Linux niceness belongs to each thread, and
    a Ray actor runs its event loop on another thread than its constructor, so all threads in
    ``/proc/self/task`` are set (threads started later inherit their creator's). Returns the
    highest niceness left among them; never raises."""
    try:
        tids = [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:  # no procfs: this thread only
        tids = [0]
    worst = CLIENT_NICENESS
    for tid in tids:
        with contextlib.suppress(OSError, AttributeError):  # not permitted, not POSIX, gone
            os.setpriority(os.PRIO_PROCESS, tid, CLIENT_NICENESS)
        with contextlib.suppress(OSError, AttributeError):
            worst = max(worst, os.getpriority(os.PRIO_PROCESS, tid))
    return worst


def make_engine(
    spec: ModelSpec,
    api_key: str | None,
    *,
    max_attempts: int,
    prompt_cache: bool,
    engine_down_timeout_s: float | None = None,
) -> Engine:
    """The engine of one model's endpoint, as every client process builds it
    (``engine_down_timeout_s`` in s; ``None``: the engines' default)."""
    settings = spec.engine_settings(
        api_key,
        max_attempts=max_attempts,
        prompt_cache=prompt_cache,
        engine_down_timeout_s=engine_down_timeout_s,
    )
    return create_engine(spec.engine, settings, spec.sim)


class StreamWorker:
    """One extra client process of a host (use through ``ray.remote``, pinned to the host's
    node): runs :meth:`chat` for one model's endpoint on its own asyncio loop and connection
    pool. ``model`` is ``(ModelSpec as a dict, API key or None)``; the host actor bounds how
    many calls it has in flight (its share of :func:`split_streams`)."""

    def __init__(
        self,
        model: tuple[dict[str, Any], str | None],
        max_attempts: int,
        prompt_cache: bool,
        engine_down_timeout_s: float | None = None,
    ) -> None:
        self.niceness = restore_priority()
        """The niceness this worker runs at (:func:`restore_priority`)."""
        spec, key = model
        self.engine = make_engine(
            ModelSpec.model_validate(spec),
            key,
            max_attempts=max_attempts,
            prompt_cache=prompt_cache,
            engine_down_timeout_s=engine_down_timeout_s,
        )

    async def ready(self) -> tuple[int, int]:
        """This worker's pid and niceness (set again: the loop's thread may be new)."""
        self.niceness = restore_priority()
        return os.getpid(), self.niceness

    async def chat(self, req: ChatRequest) -> ChatResult:
        """:meth:`Engine.chat` of the endpoint (never raises for a failed request)."""
        return await self.engine.chat(req)

    async def close(self) -> None:
        """Close the engine's HTTP session."""
        await self.engine.aclose()
