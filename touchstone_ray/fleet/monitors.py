"""Driver side of the monitors: start one per host, drain them, notice when one is lost.

``MonitorSet`` writes every drained sample to ``<bundle>/hosts/<slug(host)>.jsonl`` through
:class:`~touchstone_ray.storage.JsonlWriter` (the driver is the only writer, SPEC §7). Every
Ray call waits at most ``call_timeout_s``. A monitor whose call fails with ``RayActorError``
(``ActorDiedError``: its node or process died) or times out is *lost*: its host gets
``monitoring_lost_at`` (epoch s of detection) in :attr:`MonitorSet.lost`, the samples already
written stay, the actor is killed if still reachable, and it is never restarted: a new one
elsewhere would measure the wrong machine. Thread-safe; ``autodrain_s`` starts a background
thread that drains on that period. A write that fails there (a disk gone read-only or full)
ends that thread and is raised by :meth:`MonitorSet.stop`, on the caller's thread.

Two ways to start: :meth:`MonitorSet.start` waits for every monitor; :meth:`MonitorSet.launch`
only creates them and queues their ``start`` (eval: a host's client actor and preflight do not
wait for telemetry). After a launch, :meth:`MonitorSet.poll` (called often, from one thread)
takes in the starts and engine lookups that have landed. A model's baseline tick asked for
while its monitor is still starting (:meth:`MonitorSet.baseline_method`) runs right after the
monitor's ``start`` (calls of one monitor run in order); eval's driver waits for it before the
model's first request.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import ray
from ray.exceptions import RayActorError

from touchstone_ray.bundle import Layout
from touchstone_ray.fleet.dispatch import spawn_pinned
from touchstone_ray.storage import JsonlWriter, repair_torn_tail
from touchstone_ray.telemetry.engines import EngineTarget
from touchstone_ray.telemetry.monitor import DEFAULT_BUFFER, HostMonitor
from touchstone_ray.telemetry.nvml import GpuMode


def monitor_name(host: str) -> str:
    """Ray actor name of a host's monitor: ``monitor:<host>``."""
    return f"monitor:{host}"


class MonitorSet:
    """All host monitors of one eval run."""

    def __init__(
        self,
        bundle_dir: Path,
        interval_s: float = 0.5,
        gpu_mode: GpuMode = "auto",
        call_timeout_s: float = 10.0,
        start_timeout_s: float = 60.0,
        buffer_size: int = DEFAULT_BUFFER,
        autodrain_s: float | None = None,
        agents: Mapping[str, Any] | None = None,
    ) -> None:
        self.bundle_dir = Path(bundle_dir)
        self.agents = dict(agents or {})
        """Host → its leased host agent (:class:`~touchstone_ray.fleet.agents.AgentClient`):
        that host's monitor is the agent's, reset for this run and never killed at the end."""
        self.interval_s = interval_s
        self.gpu_mode: GpuMode = gpu_mode
        self.call_timeout_s = call_timeout_s
        self.start_timeout_s = start_timeout_s
        self.buffer_size = buffer_size
        self.autodrain_s = autodrain_s
        self.lost: dict[str, float] = {}
        """host → ``monitoring_lost_at`` (epoch s when the loss was detected)."""
        self.lost_reason: dict[str, str] = {}
        self.capabilities: dict[str, dict[str, Any]] = {}
        """host → capabilities reported at start."""
        self._actors: dict[str, Any] = {}
        self._writers: dict[str, JsonlWriter] = {}
        self._written_baselines: dict[str, set[float]] = {}
        """host → ``ts`` of the baseline ticks written (each is also in the drained buffer)."""
        self._starting: dict[str, tuple[Any, Any, float]] = {}
        """host → (actor, its ``start`` ref, monotonic s of the launch), until it lands."""
        self._engine_refs: dict[str, Any] = {}
        """host → the ``engines`` ref asked right after its start landed."""
        self._pending: dict[Any, str] = {}
        """:meth:`register_pids_soon` ref → host, until it landed."""
        self._lock = threading.RLock()
        self._pending_lock = threading.Lock()
        """Guards :attr:`_pending` alone, so telling pids never waits for a drain."""
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self.write_error: OSError | None = None
        """The first failed write of the background drain; :meth:`stop` raises it."""

    def path_for(self, host: str) -> Path:
        """``<bundle>/hosts/<slug(host)>.jsonl``."""
        return Layout(self.bundle_dir).host(host)

    @property
    def live_hosts(self) -> list[str]:
        with self._lock:
            return sorted(self._actors)

    # -- lifecycle -------------------------------------------------------------------------
    def start(
        self,
        hosts: Mapping[str, str],
        engines: Mapping[str, Sequence[EngineTarget]] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """Start (and probe) one monitor per ``{host: node_id}``; returns capabilities per host.

        ``engines``: per host the endpoints served from it, whose processes it samples.
        A monitor that cannot start within ``start_timeout_s`` is recorded in :attr:`lost`.
        """
        pending: dict[str, Any] = {}
        with self._lock:
            for host, node_id in hosts.items():
                if host in self._actors or host in self.lost:
                    continue
                actor = self._spawn(host, node_id, (engines or {}).get(host, ()), ())
                if actor is None:
                    continue
                self._actors[host] = actor
                pending[host] = actor.start.remote()
        for host, result in self._gather(pending, self.start_timeout_s).items():
            self.capabilities[host] = result
        self._start_drain()
        return dict(self.capabilities)

    def _spawn(
        self, host: str, node_id: str, engines: Sequence[EngineTarget], pids: Sequence[int]
    ) -> Any:
        """A new monitor actor on ``node_id``, pinned hard, no CPU, never restarted (SPEC §8),
        or the host agent's, reset for this run (:attr:`agents`); ``None`` (and ``host``
        lost) if it cannot be created, e.g. its name is taken."""
        try:
            agent = self.agents.get(host)
            if agent is not None:
                ref = agent.monitor(
                    host,
                    self.interval_s,
                    self.gpu_mode,
                    self.buffer_size,
                    list(engines),
                    list(pids),
                )
                return ray.get(ref, timeout=self.start_timeout_s)
            return spawn_pinned(
                HostMonitor,
                node_id,
                host,
                node_id,
                self.interval_s,
                self.gpu_mode,
                self.buffer_size,
                name=monitor_name(host),
                engines=list(engines),
                pids=list(pids),
            )
        except Exception as exc:
            self._mark_lost(host, f"cannot create monitor: {exc}")
            return None

    def _start_drain(self) -> None:
        if self.autodrain_s and self._thread is None:
            self._thread = threading.Thread(
                target=self._autodrain, daemon=True, name="touchstone-monitor-drain"
            )
            self._thread.start()

    def launch(
        self,
        hosts: Mapping[str, str],
        engines: Mapping[str, Sequence[EngineTarget]] | None = None,
        pids: Mapping[str, Sequence[int]] | None = None,
    ) -> None:
        """Create one monitor per ``{host: node_id}`` and queue its ``start`` without waiting
        (:meth:`poll` takes the answers in; one not started within ``start_timeout_s`` is
        lost). ``engines`` as for :meth:`start`; ``pids``: host → touchstone pids there known
        now (counted as harness from the first sample on, unlike a later
        :meth:`register_pids_soon`)."""
        with self._lock:
            for host, node_id in hosts.items():
                if host in self._actors or host in self._starting or host in self.lost:
                    continue
                targets, known = (engines or {}).get(host, ()), (pids or {}).get(host, ())
                actor = self._spawn(host, node_id, targets, known)
                if actor is None:
                    continue
                self._starting[host] = (actor, actor.start.remote(), time.monotonic())
        self._start_drain()

    def poll(self) -> dict[str, dict[str, Any]]:
        """Take in what landed since the last call, never waiting: monitors started by
        :meth:`launch` (their capabilities; then their engine lookup is asked) and the
        answers of :meth:`register_pids_soon`. Returns nothing new while another call holds
        the monitors (the next call takes it in). Returns ``host → {"capabilities", "engines"}``
        for each host whose engine lookup landed in this call (once per host)."""
        out: dict[str, dict[str, Any]] = {}
        if not self._lock.acquire(blocking=False):  # a drain is waiting on its monitors
            return out
        try:
            for host, (actor, ref, since) in list(self._starting.items()):
                ready, _ = ray.wait([ref], timeout=0)
                if not ready:
                    if time.monotonic() - since > self.start_timeout_s:
                        self._mark_lost(host, f"not started within {self.start_timeout_s:g} s")
                    continue
                self._actors[host] = actor  # before it leaves _starting: always findable
                del self._starting[host]
                try:
                    self.capabilities[host] = ray.get(ref, timeout=0)
                except Exception as exc:
                    self._mark_lost(host, f"monitor failed to start: {type(exc).__name__}: {exc}")
                    continue
                self._engine_refs[host] = actor.engines.remote()
            for host, ref in list(self._engine_refs.items()):
                got = self._ready({host: ref})
                if got is None:
                    continue
                del self._engine_refs[host]
                if host in got:
                    caps = self.capabilities.get(host, {})
                    out[host] = {"capabilities": caps, "engines": got[host]}
            with self._pending_lock:
                pending = dict(self._pending)
            if pending:
                ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0)
                with self._pending_lock:
                    for ref in ready:  # a failure shows in the host's next drain
                        self._pending.pop(ref, None)
        finally:
            self._lock.release()
        return out

    def _ready(self, refs: Mapping[str, Any]) -> dict[str, Any] | None:
        """:meth:`_gather` with no wait, or ``None`` when one of ``refs`` is still pending."""
        ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=0)
        return self._gather(refs, 0) if len(ready) == len(refs) else None

    def _autodrain(self) -> None:
        assert self.autodrain_s is not None
        while not self._halt.wait(self.autodrain_s):
            try:
                self.drain()
            except OSError as exc:
                self.write_error = exc
                return

    def stop(self) -> None:
        """Stop every live monitor, write its final samples, kill it, close the files.

        Raises the first ``OSError`` of a write (the background drain's, or one here) after
        every monitor is killed and every file closed.
        """
        self._halt.set()
        if self._thread is not None:
            self._thread.join(timeout=self.call_timeout_s + 5)
        failed = self.write_error
        with self._lock:
            self.poll()
            for host, (actor, _, _) in list(self._starting.items()):
                self._actors[host] = actor  # still starting: its stop runs after its start
            self._starting.clear()
            refs = {h: a.stop.remote() for h, a in self._actors.items()}
            for host, samples in self._gather(refs, self.call_timeout_s).items():
                try:
                    self._write(host, samples)
                except OSError as exc:
                    failed = failed or exc
            for host, actor in self._actors.items():
                if host not in self.agents:  # an agent's monitor stays for the next run
                    with contextlib.suppress(Exception):
                        ray.kill(actor, no_restart=True)
            self._actors.clear()
            for writer in self._writers.values():
                try:
                    writer.close()
                except OSError as exc:
                    failed = failed or exc
            self._writers.clear()
        if failed is not None:
            raise failed

    # -- calls -----------------------------------------------------------------------------
    def drain(self, timeout_s: float | None = None) -> dict[str, int]:
        """Drain every live monitor into its host file; returns samples written per host."""
        with self._lock:
            refs = {h: a.drain.remote() for h, a in self._actors.items()}
        got = self._gather(refs, timeout_s or self.call_timeout_s)  # not holding the lock
        with self._lock:
            return {host: self._write(host, samples) for host, samples in got.items()}

    def baseline(self, host: str, model: str) -> dict[str, Any] | None:
        """Take ``model``'s baseline tick on ``host`` now and write it at once.

        Returns the sample dict, or ``None`` when the host's monitor is lost.
        """
        with self._lock:
            actor = self._actors.get(host)
            if actor is None:
                return None
            got = self._gather({host: actor.baseline.remote(model)}, self.call_timeout_s)
            sample = got.get(host)
            if sample is not None:
                self._write(host, [sample])
            return sample

    def baseline_method(self, host: str) -> Any:
        """``host``'s monitor's ``baseline`` method (also while the monitor is still starting:
        the call runs right after its ``start``), or ``None`` when it has none or was lost.
        The caller submits it and hands the sample to :meth:`write_baseline`."""
        actor = self._actor_or_starting(host)
        return actor.baseline if actor is not None else None

    def write_baseline(self, host: str, sample: dict[str, Any]) -> None:
        """Write a baseline ``sample`` got through :meth:`baseline_method` (once: the drain
        that returns it again skips it)."""
        with self._lock:
            self._write(host, [sample])

    def register_pids_soon(self, host: str, pids: Iterable[int]) -> None:
        """:meth:`register_pids` without waiting for the answer."""
        actor = self._actor_or_starting(host)
        if actor is not None:
            ref = actor.register_pids.remote(list(pids))
            with self._pending_lock:
                self._pending[ref] = host

    def _actor_or_starting(self, host: str) -> Any:
        starting = self._starting.get(host)  # one dict read each: no lock needed
        return starting[0] if starting is not None else self._actors.get(host)

    def register_pids(self, host: str, pids: Iterable[int]) -> None:
        """Tell ``host``'s monitor about touchstone pids there (for :meth:`footprint`)."""
        with self._lock:
            actor = self._actors.get(host)
            if actor is not None:
                self._gather({host: actor.register_pids.remote(list(pids))}, self.call_timeout_s)

    def engines(self) -> dict[str, dict[str, dict[str, Any]]]:
        """host → endpoint → ``{"pid", "found_by", "reason"}`` of its engine process."""
        with self._lock:
            refs = {h: a.engines.remote() for h, a in self._actors.items()}
            return self._gather(refs, self.call_timeout_s)

    def footprint(self) -> dict[str, dict[str, Any]]:
        """host → the monitor's :meth:`HostMonitor.footprint` (RSS of touchstone's processes)."""
        with self._lock:
            refs = {h: a.footprint.remote() for h, a in self._actors.items()}
            return self._gather(refs, self.call_timeout_s)

    # -- internals -------------------------------------------------------------------------
    def _gather(self, refs: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
        """``ray.wait`` on one call per host; failures and timeouts mark the host lost."""
        if not refs:
            return {}
        by_ref = {ref: host for host, ref in refs.items()}
        ready, not_ready = ray.wait(list(by_ref), num_returns=len(by_ref), timeout=timeout_s)
        out: dict[str, Any] = {}
        for ref in ready:
            host = by_ref[ref]
            try:
                out[host] = ray.get(ref, timeout=0)
            except RayActorError as exc:
                self._mark_lost(host, f"monitor died: {type(exc).__name__}")
            except Exception as exc:
                self._mark_lost(host, f"monitor call failed: {type(exc).__name__}: {exc}")
        for ref in not_ready:
            self._mark_lost(by_ref[ref], f"no answer within {timeout_s:g} s")
        return out

    def _mark_lost(self, host: str, reason: str) -> None:
        with self._lock:
            self.lost.setdefault(host, time.time())
            self.lost_reason.setdefault(host, reason)
            actor = self._actors.pop(host, None)
            starting = self._starting.pop(host, None)
            if actor is None and starting is not None:
                actor = starting[0]
            self._engine_refs.pop(host, None)
        if actor is not None:
            with contextlib.suppress(Exception):  # unreachable or hung: never comes back
                ray.kill(actor, no_restart=True)

    def _write(self, host: str, samples: list[dict[str, Any]]) -> int:
        if not samples:
            return 0
        seen = self._written_baselines.setdefault(host, set())
        writer = self._writers.get(host)
        if writer is None:
            path = self.path_for(host)
            repair_torn_tail(path)
            writer = self._writers[host] = JsonlWriter(path)
        n = 0
        for sample in samples:
            if sample.get("baseline"):
                if sample.get("ts") in seen:  # written once already (a baseline call or a drain)
                    continue
                seen.add(sample["ts"])
            writer.write(sample)
            n += 1
        return n
