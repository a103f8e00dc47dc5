"""The per-host perf client: the eval :class:`HostClient` plus prompt fitting and the
schedule of one point.

A point runs inside the actor (the host's node), so the loop's clock is the serving side's:
``concurrency`` streams each send their next request the moment their previous one ended
(closed loop), or rounds of ``concurrency`` requests go out together (``--lockstep``), until
``runs`` requests are done, after one discarded warm-up round (:mod:`.schedule`). Every
request has its own nonce line (cache-busted, a cold TTFT) except in the cached variant,
which sends one priming request and then the same prompt every run. An open-loop point
(``rate``) sends each request when its schedule says, whatever is in flight
(:meth:`PerfClient._open_loop`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from touchstone_ray.engines.base import ChatRequest, ChatResult
from touchstone_ray.fleet import (
    HostClient,
    PromptCount,
    client_spec,
    input_truncated,
    nonce_line,
)
from touchstone_ray.perf.plan import Point
from touchstone_ray.perf.records import PerfResponse
from touchstone_ray.perf.schedule import (
    SATURATION_SAMPLE_S,
    SaturationWatch,
    collector_paused,
    lockstep_rounds,
    send_lateness_s,
    warm_saturation_test,
)
from touchstone_ray.perf.workload import (
    FittedPrompt,
    cold_body,
    fit_prompt,
    forced_output,
    prompt_messages,
)

if TYPE_CHECKING:
    from touchstone_ray.fleet.agents import ClientSpec

OPEN_LOOP_LEAD_S = 0.02
"""An open-loop point's first request is due this long (s) after its requests are built, so
the first send is not late by the set-up itself."""
OPEN_LOOP_SPIN_S = 0.0012
"""The last stretch (s) before a request is due is spent in ``sleep(0)`` turns of the loop
(which serve the other streams meanwhile), not in a sleep: asyncio's sleep ends on an epoll
wait whose timeout is whole milliseconds rounded up, so it wakes up to 1 ms late. Measured at
200 requests/s (``bench/bench_open_loop.py``): send lateness p50 0.70 → 0.24 ms, p99 1.5 →
0.5–0.7 ms, for about this long of busy loop per request (a quarter of a core at 200/s)."""


class PerfClient(HostClient):
    """Async perf client for every endpoint of one host (use through ``ray.remote``).

    A point's streams all run on this actor's loop (its schedule is one loop's clock), so the
    eval client's :class:`~touchstone_ray.fleet.stream_worker.StreamWorker` split is not used."""

    prestart_workers = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fits: dict[tuple[str, int], FittedPrompt] = {}

    async def fit(
        self, label: str, contexts: list[int], limit: int | None = None
    ) -> dict[int, dict[str, Any]]:
        """Fit a prompt to each context (tokens) for ``label`` and remember the context
        ``limit`` (tokens, for ``input_truncated``); returns context → ``{n_words, tokens,
        source}``."""
        self._limits[label] = limit if limit is not None else self.specs[label].context_tokens
        engine = self._engine(label)
        model = self.specs[label].id

        async def count(messages: list[dict[str, str]]) -> int | None:
            try:
                return await engine.count_prompt_tokens(model, messages)
            except Exception:
                return None

        out: dict[int, dict[str, Any]] = {}
        for ctx in contexts:
            nonce = nonce_line(self.run_id, f"{label}|fit|{ctx}")
            fitted = await fit_prompt(count, ctx, nonce)
            self._fits[(label, ctx)] = fitted
            out[ctx] = {"n_words": fitted.n_words, "tokens": fitted.tokens, "source": fitted.source}
        return out

    async def run_point(
        self,
        point: dict[str, Any],
        output_tokens: int,
        first_run: int = 1,
        lockstep: bool = False,
    ) -> list[dict[str, Any]]:
        """Run one point (a :class:`Point` as a dict) and return its records as dicts, in the
        order they were sent; requests ``first_run .. point.runs``. ``lockstep``: rounds of
        ``concurrency`` requests sent together instead of a closed loop (:mod:`.schedule`).
        First a discarded warm-up round of ``concurrency`` requests sent together (GuideLLM
        drops its first ``concurrency`` requests the same way): in the closed loop each
        stream's warm-up is its first request, so its first measured one is due when that
        ended, on a server in its steady state and a connection the pool already holds.

        Every request is built before the first is sent, and the records after the last has
        ended, so nothing but the send itself lies between a request's ``scheduled_at`` and
        its ``sent_at``; the cyclic garbage collector is paused meanwhile
        (:func:`~.schedule.collector_paused`)."""
        p = Point(**point)
        spec = self.specs[p.model]
        engine = self._engine(p.model)
        fitted = self._fits[(p.model, p.context)]
        extra, forced = forced_output(spec.engine, output_tokens)
        limit = self._limits.get(p.model, spec.context_tokens)
        if not p.cached:
            extra = {**extra, **cold_body(spec.engine)}

        def request(tag: str) -> ChatRequest:
            msgs = prompt_messages(nonce_line(self.run_id, tag), fitted.n_words, fitted.offset)
            req = self._request(p.model, output_tokens, msgs)
            return req.model_copy(update={"extra_body": {**req.extra_body, **extra}})

        if p.rate is not None:
            records = await self._open_loop(p, engine, request, first_run)
            return [
                self._record(p, run, result, sched, fitted, output_tokens, forced, limit, more)
                for run, result, sched, more in records
            ]
        cached = request(f"{p.prefix}|cached") if p.cached else None
        warmups = [cached or request(f"{p.prefix}|warmup|{i}") for i in range(p.concurrency)]
        todo = {run: cached or request(p.key(run)) for run in range(first_run, p.runs + 1)}
        sent: list[tuple[int, ChatResult, float]] = []

        async def one(run: int, scheduled: float) -> float:
            result = await engine.chat(todo[run])
            ended = time.time()
            sent.append((run, result, scheduled))
            return ended

        with collector_paused():
            if lockstep:
                await asyncio.gather(*(engine.chat(req) for req in warmups))
                start = time.time()
                for batch in lockstep_rounds(first_run, p.runs, p.concurrency):
                    await asyncio.gather(*(one(run, start) for run in batch))
                    start = time.time()
            else:
                runs = iter(todo)

                async def stream(warmup: ChatRequest) -> None:
                    await engine.chat(warmup)
                    scheduled = time.time()
                    for run in runs:
                        scheduled = await one(run, scheduled)

                await asyncio.gather(*(stream(req) for req in warmups))
        sent.sort(key=lambda item: item[1].t_start or item[2])
        return [
            self._record(p, run, result, scheduled, fitted, output_tokens, forced, limit)
            for run, result, scheduled in sent
        ]

    async def _open_loop(
        self, p: Point, engine: Any, request: Any, first_run: int
    ) -> list[tuple[int, ChatResult, float, dict[str, Any]]]:
        """The open loop of point ``p`` (:mod:`.schedule`): after one discarded warm-up
        request, request ``run`` is due at the point's start + ``p.offsets()[run − 1]`` and is
        sent then whatever is in flight; one due while ``p.max_in_flight`` are out is recorded
        ``dropped`` and ends the sending. A sampler gives the in-flight count every
        :data:`~.schedule.SATURATION_SAMPLE_S` s to a :class:`~.schedule.SaturationWatch`;
        once it finds the point saturated, no more requests are sent. Requests already out
        are awaited (their figures are kept and the point is labelled ``saturated`` with the
        reason). Returns ``(run, result, scheduled_at, open-loop fields)`` in the order
        sent."""
        offsets = p.offsets()
        warm_saturation_test()
        todo = {run: request(p.key(run)) for run in range(first_run, p.runs + 1)}
        await engine.chat(request(f"{p.prefix}|warmup|0"))
        loop = asyncio.get_running_loop()
        out: list[tuple[int, ChatResult, float, dict[str, Any]]] = []
        in_flight = 0
        reason: str | None = None
        tasks: set[asyncio.Task[None]] = set()
        sending = True

        async def one(run: int, scheduled: float, n_at_send: int) -> None:
            nonlocal in_flight
            try:
                result = await engine.chat(todo[run])
            finally:
                in_flight -= 1
            out.append((run, result, scheduled, {"in_flight_at_send": n_at_send}))

        async def sampler(start_mono: float) -> None:
            nonlocal reason
            watch = SaturationWatch()
            while sending and reason is None:
                reason = watch.sample(loop.time() - start_mono, in_flight)
                await asyncio.sleep(SATURATION_SAMPLE_S)

        with collector_paused():
            wall0, mono0 = time.time(), loop.time()
            start_wall, start_mono = wall0 + OPEN_LOOP_LEAD_S, mono0 + OPEN_LOOP_LEAD_S
            watch = asyncio.create_task(sampler(start_mono))
            for run in todo:
                offset = offsets[run - 1]
                scheduled = start_wall + offset  # on the clock of sent_at (time.time())
                if scheduled - time.time() > OPEN_LOOP_SPIN_S:
                    await asyncio.sleep(scheduled - time.time() - OPEN_LOOP_SPIN_S)
                while time.time() < scheduled:  # loop turns that serve the other streams
                    await asyncio.sleep(0)
                if reason is not None:
                    break
                if in_flight >= p.max_in_flight:
                    reason = f"{in_flight} requests out at once reached --max-in-flight"
                    dropped = ChatResult(
                        ok=False, error=f"dropped: {in_flight} requests in flight", t_start=None
                    )
                    out.append((run, dropped, scheduled, {"dropped": True}))
                    break
                in_flight += 1
                task = asyncio.create_task(one(run, scheduled, in_flight))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            sending = False
            if tasks:
                await asyncio.gather(*tasks)
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch
        out.sort(key=lambda item: item[2])
        marks = {"saturated": reason is not None, "saturation_reason": reason}
        return [(run, res, sched, {**more, **marks}) for run, res, sched, more in out]

    async def run_embed(
        self, label: str, n_chunks: int, chunk_tokens: int, batch: int
    ) -> list[dict[str, Any]]:
        """The ``--embed`` run of ``label``: ``n_chunks`` corpus chunks of about
        ``chunk_tokens`` tokens, ``batch`` per request, one request in flight; one record per
        batch (:mod:`.embed`)."""
        from touchstone_ray.perf.embed import chunks, embed_batch

        engine = self._engine(label)
        spec = self.specs[label]
        texts = chunks(n_chunks, chunk_tokens)
        out = []
        for i in range(0, len(texts), batch):
            rec = await embed_batch(engine, spec.id, texts[i : i + batch])
            out.append(
                {
                    "key": f"{label}|{self.host}|embed|{batch}|{i // batch + 1}",
                    "model": label,
                    "host": self.host,
                    "node_id": self.node_id,
                    "chunk_tokens": chunk_tokens,
                    **rec,
                }
            )
        return out

    def _record(
        self,
        p: Point,
        run: int,
        result: ChatResult,
        scheduled: float,
        fitted: FittedPrompt,
        output_tokens: int,
        forced: bool,
        limit: int | None,
        open_loop: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        fields = result.model_dump()
        engine_version = fields.pop("engine_version")
        sent = result.t_start
        server_prompt = result.prompt_tokens if result.token_count_source == "server" else None
        record = PerfResponse(
            key=p.key(run),
            pack_id="perf",
            pack_version=0,
            model=p.model,
            engine=self.specs[p.model].engine,
            engine_version=engine_version,
            host=self.host,
            node_id=self.node_id,
            variant="perf",
            category="perf",
            prompt_id=f"{p.context_label}|{p.concurrency}",
            repeat=run,
            is_cold_start=False,
            context_tokens=limit,
            input_truncated=(
                input_truncated(server_prompt, PromptCount(fitted.tokens, fitted.source), limit)
                if result.ok
                else None
            ),
            context=p.context_label,
            context_target_tokens=p.context,
            concurrency=p.concurrency,
            run=run,
            prompt_tokens_counted=fitted.tokens,
            prompt_count_source=fitted.source,
            output_tokens_target=output_tokens,
            output_forced=forced,
            scheduled_at=scheduled,
            sent_at=sent,
            send_lateness_s=send_lateness_s(scheduled, sent),
            **fields,
            **(
                {"offered_rate": p.rate, "arrival": p.arrival, **open_loop}
                if open_loop is not None
                else {}
            ),
        )
        return record.model_dump(mode="json")


def perf_client_spec(
    host: str,
    node_id: str,
    models: dict[str, Any],
    *,
    name: str,
    scheduling: dict[str, Any],
    max_attempts: int,
    run_id: str,
    temperature: float | None = 0.0,
) -> ClientSpec:
    """How ``host``'s :class:`PerfClient` is built (pinned hard to ``node_id``), for
    :func:`~touchstone_ray.fleet.agents.start_clients`: a leased host agent or an actor of its
    own; ``models`` maps label → spec."""
    return client_spec(
        host,
        node_id,
        models,
        name=name,
        pack_id="perf",
        sampling={"temperature": temperature},
        max_attempts=max_attempts,
        scheduling=scheduling,
        run_id=run_id,
        actor_cls=PerfClient,
    )
