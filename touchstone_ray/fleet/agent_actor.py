"""The host agent actor: one detached, named actor per node of a standing cluster that keeps
a host's client process warm between runs (issue 30, SPEC §6 ``agents``), and what identifies
it: its name (:func:`agent_name`), the code version (:func:`code_version`) and settings
(:func:`settings_hash`) it was started with.

The driver's side (leasing an agent for a run, starting and replacing agents, the run's handle
on it) is :mod:`touchstone_ray.fleet.agents`; its docstring tells the whole design.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import os
import platform
import time
import uuid
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from touchstone_ray.version import __version__

__all__ = [
    "AGENT_PREFIX",
    "NAMESPACE",
    "HostAgent",
    "StaleLease",
    "agent_name",
    "code_version",
    "settings_hash",
]

NAMESPACE = "touchstone"
"""The Ray namespace of every agent and of the ``agents up`` marker
(:data:`~touchstone_ray.fleet.agents.ON_KEY`)."""
AGENT_PREFIX = "agent:"
"""Name prefix of an agent actor: ``agent:<node id>``."""
WARM_MODULES = ("touchstone_ray.engines.registry", "touchstone_ray.fleet.client_actor")
"""What :meth:`HostAgent.warm` imports: the modules a run's client needs."""
SETTINGS_ENV_PREFIX = "TOUCHSTONE_"
"""Environment variables with this prefix are part of :func:`agent_settings`."""


class StaleLease(RuntimeError):
    """A call reached an agent under a lease that is not (or no longer) the agent's: its run
    was released, or another run took the agent over after its driver died."""


def agent_name(node_id: str) -> str:
    """The Ray actor name of ``node_id``'s agent: ``agent:<node id>`` (hex, in full)."""
    return f"{AGENT_PREFIX}{node_id}"


@cache
def code_version() -> str:
    """This package's code version: ``<version>+<12 hex>``, the hex a sha256 over every
    ``.py`` file of the package (path and bytes, sorted by path), so an edited tree differs
    from the one an agent was started with even at the same version number."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return f"{__version__}+{digest.hexdigest()[:12]}"


def agent_settings() -> dict[str, Any]:
    """What an agent process was started with that changes how it measures: Python's and
    Ray's version and the driver's ``TOUCHSTONE_*`` environment variables (the agent's
    process gets them from the job that starts it)."""
    import ray

    env = {k: v for k, v in sorted(os.environ.items()) if k.startswith(SETTINGS_ENV_PREFIX)}
    return {"python": platform.python_version(), "ray": ray.__version__, "env": env}


def settings_hash(settings: Mapping[str, Any] | None = None) -> str:
    """16 hex digits of sha256 over ``settings`` (default :func:`agent_settings`) as sorted
    JSON."""
    import json

    data = agent_settings() if settings is None else settings
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _job_alive(job_id: str) -> bool:
    """Whether the Ray job ``job_id`` (hex) still has a live driver (GCS job table); true
    when that cannot be read (never drop a lease on a guess)."""
    try:
        from ray._private import state

        for job in state.state.job_table():
            if job["JobID"] == job_id:
                return not job["IsDead"]
    except Exception:
        return True
    return False


class HostAgent:
    """The agent actor of one node (use through :func:`start_agent`, ``ray.remote``; see the
    module docstring). ``host`` is the name it was started for (shown by ``status``; each run
    names its own host), ``version`` and ``settings`` what it answers ``attach`` with
    (:func:`code_version` and :func:`settings_hash` of the starting driver).

    It holds one client per lease: at most one of a measuring run (eval, perf), besides any
    number of runs that measure no speed (a judge)."""

    def __init__(self, host: str, version: str, settings: str) -> None:
        import ray

        self.host = host
        self.version = version
        self.settings = settings
        self.node_id: str = ray.get_runtime_context().get_node_id()
        self.started_at = time.time()
        self._clients: dict[str, Any] = {}
        """Lease token → the client object of its run."""
        self._runs: dict[str, dict[str, Any]] = {}
        """Lease token → its run: ``{run_id, job_id, host, measuring, since}``."""
        self._lock = asyncio.Lock()
        self._monitor: Any = None
        """The host monitor actor it keeps for its measuring runs (started on first use)."""

    def _measuring(self) -> dict[str, Any] | None:
        return next((dict(r) for r in self._runs.values() if r["measuring"]), None)

    def _facts(self) -> dict[str, Any]:
        return {
            "name": agent_name(self.node_id),
            "host": self.host,
            "node_id": self.node_id,
            "pid": os.getpid(),
            "version": self.version,
            "settings_hash": self.settings,
            "started_at": self.started_at,
            "uptime_s": time.time() - self.started_at,
            "run": self._measuring(),
            "runs": [dict(r) for r in self._runs.values()],
        }

    async def _drop_dead_holders(self) -> list[str]:
        """Release every lease whose driver's job is dead; returns those runs' ids."""
        dropped = []
        for lease, run in list(self._runs.items()):
            job = str(run.get("job_id") or "")
            if job and not await asyncio.to_thread(_job_alive, job):
                dropped.append(str(run["run_id"]))
                await self._release(lease)
        return dropped

    async def info(self) -> dict[str, Any]:
        """Its facts: name, host, node id, pid, version, settings hash, ``started_at`` (epoch
        s), ``uptime_s`` (s), ``run`` (the measuring run it serves, ``None``: none) and
        ``runs`` (every run it serves); runs whose driver died are dropped first."""
        async with self._lock:
            await self._drop_dead_holders()
            return self._facts()

    async def attach(
        self,
        run_id: str,
        job_id: str,
        host: str,
        version: str,
        settings: str,
        measuring: bool,
        cls: type,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> dict[str, Any]:
        """Serve run ``run_id`` (of the driver's Ray job ``job_id``) as host ``host``: build
        ``cls(*args, **kwargs)`` as its client here. Answers ``{"stale": facts}`` when
        ``version`` or ``settings`` differ from the agent's (nothing changed), ``{"busy":
        run id}`` when ``measuring`` and another measuring run with a live driver holds it,
        else ``{"lease": token, "taken_from": run id of a dead driver or None, **facts}``."""
        async with self._lock:
            if version != self.version or settings != self.settings:
                return {"stale": self._facts()}
            dropped = await self._drop_dead_holders()
            holder = self._measuring()
            if measuring and holder is not None:
                if holder["run_id"] != run_id:
                    return {"busy": holder["run_id"], **self._facts()}
                for lease, run in list(self._runs.items()):  # the same run attaching again
                    if run["measuring"]:
                        await self._release(lease)
            client = cls(*args, **kwargs)
            lease = uuid.uuid4().hex
            self._clients[lease] = client
            self._runs[lease] = {
                "run_id": run_id,
                "job_id": job_id,
                "host": host,
                "measuring": measuring,
                "since": time.time(),
            }
            taken_from = dropped[0] if dropped else None
            return {"lease": lease, "taken_from": taken_from, **self._facts()}

    async def call(self, lease: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """``method(*args, **kwargs)`` of the lease's client (awaited when it is a coroutine).
        Raises :class:`StaleLease` when ``lease`` is not held here now, and whatever the
        method raises."""
        client = self._clients.get(lease)
        if client is None:
            raise StaleLease(f"agent {agent_name(self.node_id)}: lease {lease[:8]} is not held")
        result = getattr(client, method)(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    def _new_monitor(self, *args: Any, **kwargs: Any) -> Any:
        from touchstone_ray.fleet.dispatch import spawn_pinned
        from touchstone_ray.telemetry.monitor import HostMonitor

        return spawn_pinned(HostMonitor, self.node_id, *args, **kwargs)

    async def monitor(
        self,
        lease: str,
        host: str,
        interval_s: float,
        gpu_mode: str,
        buffer_size: int,
        engines: list[Any],
        pids: list[int],
    ) -> Any:
        """The host monitor actor (:class:`~touchstone_ray.telemetry.monitor.HostMonitor`)
        for the measuring run of ``lease``, set up afresh for it (``reset``; arguments as for
        its constructor): the one kept here, else a new one on this node (it lives as long as
        the agent). Raises :class:`StaleLease` when ``lease`` is not a measuring run's held
        here."""
        run = self._runs.get(lease)
        if run is None or not run["measuring"]:
            raise StaleLease(f"agent {agent_name(self.node_id)}: lease {lease[:8]} has no monitor")
        args = (host, self.node_id, interval_s, gpu_mode, buffer_size)
        if self._monitor is not None:
            try:
                await self._monitor.reset.remote(*args, engines=engines, pids=pids)
                return self._monitor
            except Exception:  # it died: a new one
                self._monitor = None
        self._monitor = self._new_monitor(*args, engines=engines, pids=pids)
        return self._monitor

    async def warm(self) -> None:
        """Load what a run's client imports, and start the monitor actor (idle until a run
        uses it), so that the first run after ``agents up`` starts as fast as the next."""
        import importlib

        for module in WARM_MODULES:  # by name: the client's module imports this one
            importlib.import_module(module)

        if self._monitor is None:
            self._monitor = self._new_monitor(self.host, self.node_id)
        await self._monitor.stats.remote()

    async def _release(self, lease: str) -> None:
        client = self._clients.pop(lease, None)
        self._runs.pop(lease, None)
        if client is not None and hasattr(client, "close"):
            with contextlib.suppress(Exception):
                closing = client.close()
                if inspect.isawaitable(closing):
                    await closing

    async def release(self, lease: str) -> bool:
        """End the run of ``lease``: close its client (engines, stream workers). Whether
        ``lease`` was held here (``False``: nothing done)."""
        async with self._lock:
            if lease not in self._clients:
                return False
            await self._release(lease)
            return True

    async def shutdown(self) -> None:
        """Close the client of every run it serves (``agents down`` then kills it)."""
        async with self._lock:
            for lease in list(self._clients):
                await self._release(lease)
