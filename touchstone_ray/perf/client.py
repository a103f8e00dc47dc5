"""The per-host perf client: the eval :class:`HostClient` plus prompt fitting and the
schedule of one point.

A point runs inside the actor (the host's node), so the loop's clock is the serving side's:
``concurrency`` streams each send their next request the moment their previous one ended
(closed loop), or rounds of ``concurrency`` requests go out together (``--lockstep``), until
``runs`` requests are done, after one discarded warm-up round (:mod:`.schedule`). Every
request has its own nonce line (cache-busted, a cold TTFT) except in the cached variant,
which sends one priming request and then the same prompt every run.
"""

from __future__ import annotations

import asyncio
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
from touchstone_ray.perf.schedule import collector_paused, lockstep_rounds, send_lateness_s
from touchstone_ray.perf.workload import (
    FittedPrompt,
    cold_body,
    fit_prompt,
    forced_output,
    prompt_messages,
)

if TYPE_CHECKING:
    from touchstone_ray.fleet.agents import ClientSpec


class PerfClient(HostClient):
    """Async perf client for every endpoint of one host (use through ``ray.remote``).

    A point's streams all run on this actor's loop (its schedule is one loop's clock), so the
    eval client's :class:`~touchstone_ray.fleet.client_actor.StreamWorker` split is not used."""

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
