"""The per-host client actor: one async Ray actor per host runs every request of that host.

SPEC §8: per host a constant, small number of touchstone processes whatever the concurrency —
this actor (all the host's endpoints, one semaphore each) and the monitor actor. The actor is
pinned hard to the host's node, so ``base_url`` is resolved *there* (``localhost`` is the
serving machine). Keys arrive in memory from the driver and never reach a file or log.

Above :data:`STREAMS_PER_PROCESS` concurrent streams to one endpoint the host actor splits
that endpoint's streams over :class:`StreamWorker` processes on the same pinned node
(:mod:`touchstone_ray.fleet.stream_worker`, where the host has the cores for them). Until a
worker is up, its share runs in the host actor. The driver still sees one client per host: the
host actor keeps the semaphore, counts and records; a worker only runs ``Engine.chat`` and
returns the :class:`ChatResult` (records are identical in shape). So per host there are
``1 + min(ceil(c / STREAMS_PER_PROCESS), max_stream_workers(cores))`` client processes at most,
a constant that does not grow with the number of cells.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import psutil

from touchstone_ray.config import ModelSpec
from touchstone_ray.engines.base import ChatRequest, ChatResult, Engine
from touchstone_ray.engines.openai import ENGINE_FOR_SERVER
from touchstone_ray.engines.registry import engine_class
from touchstone_ray.fleet.cells import Cell
from touchstone_ray.fleet.host_facts import host_facts
from touchstone_ray.fleet.metrics import CellMetrics
from touchstone_ray.fleet.probe import WARMUP_MAX_TOKENS, WARMUP_PROMPT, probe_answer
from touchstone_ray.fleet.prompts import (
    PromptCount,
    cell_messages,
    context_need,
    estimate_prompt_tokens,
    input_truncated,
    nonce_line,
)
from touchstone_ray.fleet.stream_worker import (
    STREAMS_PER_PROCESS,
    StreamWorker,
    make_engine,
    max_stream_workers,
    restore_priority,
    split_streams,
)
from touchstone_ray.records import CellIdentity, CheckOutcome, EvalResponse

if TYPE_CHECKING:
    from touchstone_ray.fleet.agents import ClientSpec

CUT_PROMPT_NOT_MEASURED = "prompt cut by the server (input_truncated)"
"""The ``detail`` of every check of an answer to a prompt the server cut: the model answered a
shorter prompt, so its checks say nothing (as its verdict: SPEC §10, never a score)."""


class HostClient:
    """Async client for every endpoint of one host (use through ``ray.remote``).

    ``models`` maps model label → (:class:`ModelSpec` as a dict, API key or ``None``);
    ``scheduling`` carries ``cache_bust`` and ``prompt_cache`` (SchedulingSettings) and
    ``run_id`` the bundle's name (the cache-bust nonce's seed). ``streams_per_process``: above
    this concurrency a model's cells run in :class:`StreamWorker` processes (module docstring;
    default :data:`STREAMS_PER_PROCESS`), at most ``max_workers`` of them (default
    :func:`max_stream_workers` of the host's cores: none below 8 cores). ``simulated``
    endpoints are never split (the simulator lives in the engine's own process).
    ``language`` is the pack's (``de`` / ``en``), for each answer's ``wrong_language`` flag
    (``None``: not checked).
    """

    prestart_workers: ClassVar[bool] = True
    """:meth:`ready` starts every split model's :class:`StreamWorker` processes, so they come
    up beside the host's preflight; until a worker is up its share runs in this process. A
    subclass whose requests do not go through :meth:`run_cell` sets ``False`` (they would sit
    idle)."""

    def __init__(
        self,
        host: str,
        models: dict[str, tuple[dict[str, Any], str | None]],
        pack_id: str,
        pack_version: int,
        sampling: dict[str, Any],
        max_attempts: int,
        scheduling: dict[str, Any] | None = None,
        run_id: str = "",
        streams_per_process: int = STREAMS_PER_PROCESS,
        max_workers: int | None = None,
        language: str | None = None,
    ) -> None:
        import ray

        self.niceness = restore_priority()
        """The niceness this actor runs at (:func:`restore_priority`)."""
        self.host = host
        self.node_id: str = ray.get_runtime_context().get_node_id()
        self.specs = {label: ModelSpec.model_validate(spec) for label, (spec, _) in models.items()}
        self._keys = {label: key for label, (_, key) in models.items()}
        self.pack_id = pack_id
        self.pack_version = pack_version
        self.sampling = sampling
        self.max_attempts = max_attempts
        self._engines: dict[str, Engine] = {}
        self._sems: dict[str, asyncio.Semaphore] = {}
        self._in_flight: dict[str, int] = {}
        self._metrics = CellMetrics()
        scheduling = scheduling or {}
        self.cache_bust = bool(scheduling.get("cache_bust", False))
        self.prompt_cache = bool(scheduling.get("prompt_cache", True))
        down = scheduling.get("engine_down_timeout_s")
        self.engine_down_timeout_s = None if down is None else float(down)
        """How long (s) calls wait for an endpoint refusing connections (``None``: default)."""
        self.run_id = run_id
        self._limits: dict[str, int | None] = {}
        """Model label → the context a cell has (tokens), set by :meth:`count_prompts`."""
        self._counts: dict[str, dict[str, PromptCount]] = {}
        """Model label → ``variant|prompt_id`` → the prompt's tokens counted before the run."""
        self._before: dict[str, dict[str, Any] | None] = {}
        """Model label → the server-metrics snapshot taken before its cells."""
        self.streams_per_process = streams_per_process
        self.max_workers = max_workers or max_stream_workers(psutil.cpu_count())
        """The most :class:`StreamWorker` processes one model's split uses
        (:func:`max_stream_workers` of this host's cores unless given)."""
        self._workers: dict[str, list[Any]] = {}
        """Model label → its :class:`StreamWorker` actors (``[]``: cells run in this actor)."""
        self._worker_load: dict[str, list[int]] = {}
        """Model label → calls in flight per worker."""
        self._worker_up: dict[str, list[bool]] = {}
        """Model label → whether each worker has answered ``ready``."""
        self._shares: dict[str, list[int]] = {}
        """Model label → each worker's :func:`split_streams` share."""
        self._starting: set[asyncio.Task[None]] = set()
        self.language = language
        """The pack's language, for :func:`~touchstone_ray.answers.answer_flags`."""
        self._template_fixes: dict[str, str | None] = {}
        """Model label → the server flag its template check named (:meth:`preflight`)."""

    def _engine(self, label: str) -> Engine:
        if label not in self._engines:
            spec = self.specs[label]
            self._engines[label] = make_engine(
                spec,
                self._keys[label],
                max_attempts=self.max_attempts,
                prompt_cache=self.prompt_cache,
                engine_down_timeout_s=self.engine_down_timeout_s,
            )
            self._sems[label] = asyncio.Semaphore(spec.concurrency)
        return self._engines[label]

    def workers(self, label: str) -> list[Any]:
        """The model's :class:`StreamWorker` actors, started on first use (on this node, no
        CPU): one per :func:`split_streams` share when that is more than one, else ``[]``."""
        if label not in self._workers:
            from touchstone_ray.fleet.dispatch import spawn_pinned

            spec = self.specs[label]
            shares = split_streams(spec.concurrency, self.streams_per_process)
            if len(shares) > self.max_workers:  # fewer processes, each with more streams
                per = math.ceil(spec.concurrency / self.max_workers)
                shares = split_streams(spec.concurrency, per)
            model = (spec.model_dump(mode="json"), self._keys[label])
            self._workers[label] = (
                [
                    spawn_pinned(
                        StreamWorker,
                        self.node_id,
                        model,
                        self.max_attempts,
                        self.prompt_cache,
                        self.engine_down_timeout_s,
                        max_concurrency=1000,
                    )
                    for _ in shares
                ]
                if len(shares) > 1 and spec.engine != "simulated"
                else []
            )
            n = len(self._workers[label])
            self._worker_load[label] = [0] * n
            self._worker_up[label] = [False] * n
            self._shares[label] = shares if n else []
            for i, worker in enumerate(self._workers[label]):
                task = asyncio.ensure_future(self._worker_started(label, i, worker))
                self._starting.add(task)
                task.add_done_callback(self._starting.discard)
        return self._workers[label]

    async def _worker_started(self, label: str, i: int, worker: Any) -> None:
        with contextlib.suppress(Exception):  # a worker that never starts keeps its share here
            await worker.ready.remote()
            self._worker_up[label][i] = True

    async def split(self) -> dict[str, list[tuple[int, int]]]:
        """Model label → ``(pid, niceness)`` of each of its worker processes (``[]``: not
        split); starts them and waits until they are up."""
        out: dict[str, list[tuple[int, int]]] = {}
        for label in self.specs:
            out[label] = [tuple(await w.ready.remote()) for w in self.workers(label)]
            self._worker_up[label] = [True] * len(out[label])
        return out

    async def _chat(self, label: str, req: ChatRequest) -> ChatResult:
        """One chat call, in the least busy of the model's workers that are up and under their
        :func:`split_streams` share, else in this process (no split, or workers still
        starting: the first cells need not wait for their processes)."""
        workers = self.workers(label)
        load, up, shares = self._worker_load[label], self._worker_up[label], self._shares[label]
        free = [i for i in range(len(workers)) if up[i] and load[i] < shares[i]]
        if not free:
            return await self._engine(label).chat(req)
        i = min(free, key=load.__getitem__)
        load[i] += 1
        try:
            result: ChatResult = await workers[i].chat.remote(req)
        finally:
            load[i] -= 1
        return result

    async def ready(self) -> dict[str, Any]:
        """Facts about this host (node id, hostname, CPU, RAM, OS) and this actor's pid."""
        self.niceness = restore_priority()  # again: the loop's thread may be new
        if self.language is not None:
            from touchstone_ray.answers import preload

            preload()  # ~1 s in a thread, done before the first answer
        if self.prestart_workers:
            for label in self.specs:
                self.workers(label)
        return {**host_facts(self.node_id), "client_pid": os.getpid()}

    async def preflight(self) -> dict[str, dict[str, Any]]:
        """Per model label: endpoint reached from this host, served models, engine version,
        the engine recognised (``engine_kind``: a config ``engine:`` value or ``None``) and
        ``suggested_engine`` when that is more specific than the configured one, the server's
        ``server_facts``, its ``context_limit`` (tokens or ``None``), ``sends_context``
        (the protocol takes the context per request) and for those servers the model's own
        ``model_context_length`` (tokens or ``None``), and the ``template`` check
        (:func:`~touchstone_ray.fleet.template_check.check_template`, as a dict; absent where
        the server does not show its template)."""
        from touchstone_ray.fleet.template_check import check_template

        out: dict[str, dict[str, Any]] = {}
        for label, spec in self.specs.items():
            engine = self._engine(label)
            entry: dict[str, Any] = {"reachable": False, "error": None, "served": []}
            try:
                name, version = await engine.server_info()
                entry["engine_version"] = f"{name} {version}" if version else name
                entry["served"] = await engine.list_models()
                entry["reachable"] = True
                entry["model_served"] = spec.id in entry["served"] or spec.engine == "simulated"
            except Exception as exc:
                entry["error"] = f"{type(exc).__name__}: {exc}"
                out[label] = entry
                continue
            kind = ENGINE_FOR_SERVER.get(name)
            entry["engine_kind"] = kind
            if kind is not None and spec.engine == "openai":
                entry["suggested_engine"] = kind
            entry["sends_context"] = engine.sends_context
            try:
                entry["server_facts"] = await engine.server_facts(spec.id)
                entry["context_limit"] = await engine.context_limit(spec.id)
                if engine.sends_context:
                    entry["model_context_length"] = await engine.model_context_length(spec.id)
            except Exception as exc:
                entry["server_facts_error"] = f"{type(exc).__name__}: {exc}"
            template = await check_template(engine, spec.id)
            if template is not None:
                entry["template"] = template.to_dict()
                self._template_fixes[label] = template.fix
            out[label] = entry
        return out

    def _messages(self, cell: Cell) -> list[dict[str, str]]:
        nonce = nonce_line(self.run_id, cell.key) if self.cache_bust else None
        return cell_messages(cell.system_prompt, cell.prompt, nonce)

    async def count_prompts(
        self, label: str, cells: list[Cell], limit: int | None
    ) -> dict[str, tuple[int, str]]:
        """Count the prompt tokens of ``cells`` (one per ``variant|prompt_id``; with cache
        busting, the nonce of that cell) by the server's tokenizer, else the estimate of
        :mod:`touchstone_ray.fleet.prompts`; remember them and the context ``limit`` (tokens)
        for the records and, where the server takes it per request, for every request. A
        server that takes it per request and gets no ``limit`` is given what the prompts need
        (:func:`~touchstone_ray.fleet.prompts.context_need`), never its own default. Returns
        ``variant|prompt_id`` → ``(tokens, source)``."""
        engine = self._engine(label)
        model = self.specs[label].id
        counts: dict[str, PromptCount] = {}
        for cell in cells:
            messages = self._messages(cell)
            try:
                tokens = await engine.count_prompt_tokens(model, messages)
            except Exception:
                tokens = None
            count = (
                PromptCount(tokens, "server")
                if tokens is not None
                else estimate_prompt_tokens(messages)
            )
            counts[f"{cell.variant}|{cell.prompt_id}"] = count
        self._counts[label] = counts
        if limit is None and engine.sends_context:
            limit = context_need(
                (counts[f"{c.variant}|{c.prompt_id}"].tokens, c.max_tokens) for c in cells
            )
        self._limits[label] = limit
        return {key: (c.tokens, c.source) for key, c in counts.items()}

    async def server_metrics(self, label: str) -> dict[str, Any] | None:
        """The server's own metrics snapshot for the model (vLLM's TTFT histogram totals), or
        ``None``; never raises."""
        try:
            return await self._engine(label).server_metrics(self.specs[label].id)
        except Exception:
            return None

    async def mark_cells_start(self, label: str) -> None:
        """Take the "before" server-metrics snapshot of the model (after its warm-up)."""
        self._before[label] = await self.server_metrics(label)

    async def server_check(self, label: str) -> dict[str, Any]:
        """vLLM's own mean TTFT over the model's cells (:func:`~touchstone_ray.engines.vllm.
        ttft_check` of the snapshot taken by :meth:`mark_cells_start` and one now)."""
        from touchstone_ray.engines.vllm import ttft_check

        return ttft_check(self._before.get(label), await self.server_metrics(label))

    def _request(
        self, label: str, max_tokens: int | None, messages: list[dict[str, str]]
    ) -> ChatRequest:
        spec = self.specs[label]
        return ChatRequest(
            model=spec.id,
            messages=messages,
            temperature=self.sampling.get("temperature"),
            seed=self.sampling.get("seed"),
            max_tokens=max_tokens,
            extra_body=spec.extra_body,
            keep_alive=spec.keep_alive if engine_class(spec.engine).needs_unload else None,
            context_tokens=self._limits.get(label, spec.context_tokens),
        )

    async def warmup(self, label: str) -> dict[str, Any]:
        """One untimed request; returns ``{"ok", "error", "load_duration_s", "probe"}``, where
        ``probe`` is the answer's content probe
        (:func:`~touchstone_ray.fleet.probe.probe_answer`, as a dict, naming the template
        check's fix; ``None`` for a failed request). Then takes the model's "before"
        server-metrics snapshot (:meth:`mark_cells_start`)."""
        engine = self._engine(label)
        message = {"role": "user", "content": WARMUP_PROMPT}
        async with self._sems[label]:
            result = await engine.chat(self._request(label, WARMUP_MAX_TOKENS, [message]))
        await self.mark_cells_start(label)
        probe = None
        if result.ok:
            fix = self._template_fixes.get(label)
            found = probe_answer(
                result.response_text, result.reasoning_text, result.finish_reason, fix
            )
            probe = found.to_dict()
        return {
            "ok": result.ok,
            "error": result.error,
            "load_duration_s": result.load_duration_s,
            "probe": probe,
        }

    async def run_cell(self, cell: Cell, is_cold_start: bool) -> dict[str, Any]:
        """Run one cell and return its :class:`EvalResponse` as a dict (never raises for a
        failed request: the record carries ``ok=False`` and ``error_kind``)."""
        self._engine(cell.model)
        spec = self.specs[cell.model]
        messages = self._messages(cell)
        waited_from = time.time()
        async with self._sems[cell.model]:
            queue_wait = time.time() - waited_from
            self._in_flight[cell.model] = self._in_flight.get(cell.model, 0) + 1
            self._metrics.in_flight(cell.model, self._in_flight[cell.model])
            try:
                result = await self._chat(
                    cell.model, self._request(cell.model, cell.max_tokens, messages)
                )
            finally:
                self._in_flight[cell.model] -= 1
                self._metrics.in_flight(cell.model, self._in_flight[cell.model])
        # the freed slot's next cell sends its request before this record is built (answer
        # flags, the record's model: ~0.3 ms a cell, 20 ms when a wave of 64 streams ends)
        await asyncio.sleep(0)
        limit = self._limits.get(cell.model, spec.context_tokens)
        count = self._counts.get(cell.model, {}).get(f"{cell.variant}|{cell.prompt_id}")
        server_prompt = result.prompt_tokens if result.token_count_source == "server" else None
        cut = input_truncated(server_prompt, count, limit) if result.ok else None
        identity = CellIdentity(
            key=cell.key,
            pack_id=self.pack_id,
            pack_version=self.pack_version,
            model=cell.model,
            engine=spec.engine,
            host=self.host,
            node_id=self.node_id,
            variant=cell.variant,
            category=cell.category,
            prompt_id=cell.prompt_id,
            repeat=cell.repeat,
        )
        record = EvalResponse.from_chat(
            identity,
            result,
            queue_wait_s=queue_wait,
            is_cold_start=is_cold_start,
            context_tokens=limit,
            input_truncated=cut,
            answer_flags=await self._answer_flags(cell, result) if result.ok else [],
            max_tokens_sent=cell.max_tokens,
            checks=await self._answer_checks(cell, result, cut) if result.ok else [],
        )
        out = record.model_dump(mode="json")
        self._metrics.cell_done(out)
        return out

    async def _answer_flags(self, cell: Cell, result: ChatResult) -> list[str]:
        """The answer's :func:`~touchstone_ray.answers.answer_flags` but those its model's
        ``answer_flags_off`` names; waits (without blocking
        the loop) for the language model still loading, and leaves ``wrong_language`` out
        where it failed to load. The detectors (and numpy) load on first use: a client that
        runs no cell never imports them."""
        from touchstone_ray.answers import answer_flags

        language = self.language
        if language is not None and not await self._language_loaded():
            language = None
        flags = answer_flags(
            result.response_text,
            result.reasoning_text,
            result.finish_reason,
            cell.prompt,
            cell.system_prompt,
            language,
        )
        off = self.specs[cell.model].answer_flags_off
        return [f for f in flags if f not in off]

    async def _language_loaded(self) -> bool:
        """Whether the language detector is loaded; waits for it without blocking the loop
        (:func:`~touchstone_ray.answers.preload` starts it once per process)."""
        from touchstone_ray.answers import preload

        loading = preload()
        if not loading.done():
            with contextlib.suppress(Exception):
                await asyncio.wrap_future(loading)
        return loading.exception() is None

    async def _answer_checks(
        self, cell: Cell, result: ChatResult, cut: bool | None
    ) -> list[CheckOutcome]:
        """The prompt's judge-free checks on the answer
        (:func:`~touchstone_ray.answers.answer_checks`), all not measured for an answer to a
        prompt the server cut (``cut``: the model answered another prompt). Waits for the
        language detector first where a ``language`` check needs it (one that failed to load
        makes those checks not measured, with its error)."""
        if not cell.checks:
            return []
        from touchstone_ray.answers import answer_checks

        checks = [(c.id, c.type, c.value) for c in cell.checks]
        if not cut and any(c.type == "language" for c in cell.checks):
            await self._language_loaded()
        return answer_checks(
            checks,
            result.response_text,
            result.reasoning_text,
            not_measured=CUT_PROMPT_NOT_MEASURED if cut else "",
        )

    async def unload(self, label: str) -> str | None:
        """Unload the model (Ollama ``keep_alive: 0``); returns an error line or ``None``."""
        try:
            await self._engine(label).unload(self.specs[label].id)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    async def harness_pids(self) -> list[int]:
        """This actor's pid, then those of the :class:`StreamWorker` processes started so far:
        touchstone's own processes on the host, for its footprint (RSS, MB)."""
        workers = [w for ws in self._workers.values() for w in ws]
        return [os.getpid(), *[(await w.ready.remote())[0] for w in workers]]

    async def close(self) -> None:
        """Close every engine (and any simulator it started) and stop the worker processes."""
        import ray

        for workers in self._workers.values():
            for worker in workers:
                try:
                    await worker.close.remote()
                finally:
                    ray.kill(worker)
        self._workers.clear()
        for engine in self._engines.values():
            await engine.aclose()
        self._engines.clear()


def client_spec(
    host: str,
    node_id: str,
    models: Mapping[str, ModelSpec],
    *,
    name: str | None = None,
    pack_id: str = "",
    pack_version: int = 0,
    sampling: dict[str, Any] | None = None,
    max_attempts: int = 1,
    scheduling: dict[str, Any] | None = None,
    run_id: str = "",
    actor_cls: type[HostClient] | None = None,
    streams_per_process: int = STREAMS_PER_PROCESS,
    max_workers: int | None = None,
    language: str | None = None,
) -> ClientSpec:
    """How ``host``'s :class:`HostClient` (or the subclass ``actor_cls``) is built, for
    :func:`~touchstone_ray.fleet.agents.start_clients` (a leased host agent or an actor of its
    own): ``models`` maps label → spec, ``name`` names the actor, the rest as for
    :class:`HostClient`. API keys are read from their env vars here,
    on the driver, and travel only in memory."""
    from touchstone_ray.fleet.agents import ClientSpec

    specs = {
        label: (
            spec.model_dump(mode="json"),
            os.environ.get(spec.api_key_env) if spec.api_key_env else None,
        )
        for label, spec in models.items()
    }
    args = (host, specs, pack_id, pack_version, sampling or {}, max_attempts, scheduling, run_id)
    kwargs = {
        "streams_per_process": streams_per_process,
        "max_workers": max_workers,
        "language": language,
    }
    return ClientSpec(host, node_id, actor_cls or HostClient, args, kwargs, name)


def spawn_client(host: str, node_id: str, models: Mapping[str, ModelSpec], **options: Any) -> Any:
    """Start a :class:`HostClient` actor (or the subclass ``actor_cls``) pinned hard to
    ``node_id`` (SPEC §8), no CPU, never restarted elsewhere; ``models`` maps label → spec;
    ``options`` are :func:`client_spec`'s keywords (``scheduling``, ``run_id``,
    ``streams_per_process``, ``max_workers`` and ``language`` as for :class:`HostClient`).
    API keys are read from their env vars here, on the driver, and travel only in memory."""
    from touchstone_ray.fleet.agents import spawn_own

    return spawn_own(client_spec(host, node_id, models, **options))
