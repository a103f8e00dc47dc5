"""The per-host monitor actor: a daemon thread sampling into a bounded buffer.

One :class:`HostMonitor` per host (SPEC §8), created by the driver (see
:func:`touchstone_ray.fleet.dispatch.spawn_pinned`) with ``num_cpus=0``, hard node
affinity, the name ``monitor:<host>`` and ``max_restarts=0``: a monitor that dies is never
restarted elsewhere, where it would measure the wrong machine.

Every tick also sets Ray gauges (exported with Ray's ``ray_`` prefix on the node's metrics
port): ``touchstone_host_sys_used_mb{host}``, ``touchstone_host_mem_pressure{host}``
(0 normal, 1 warn, 2 critical), ``touchstone_gpu_mem_used_mb{host,gpu}`` and
``touchstone_gpu_util_pct{host,gpu}``. Metrics never break sampling.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

import psutil
import ray

from touchstone_ray.records import HostSample
from touchstone_ray.telemetry.engines import EngineTarget, HarnessPids
from touchstone_ray.telemetry.linux import MB, PRESSURE_RANK, SysRoot
from touchstone_ray.telemetry.nvml import GpuMode
from touchstone_ray.telemetry.sampler import HostSampler

DEFAULT_BUFFER = 7200
"""Samples kept between drains (1 h at 0.5 s); older ones are dropped and counted."""


class _Gauges:
    """The four per-host gauges; every failure is swallowed."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.ok = False
        try:
            from ray.util.metrics import Gauge

            self.sys_used = Gauge(
                "touchstone_host_sys_used_mb", "Host memory in use (MB)", ("host",)
            )
            self.pressure = Gauge(
                "touchstone_host_mem_pressure", "0 normal, 1 warn, 2 critical", ("host",)
            )
            self.gpu_mem = Gauge(
                "touchstone_gpu_mem_used_mb", "GPU memory in use (MB)", ("host", "gpu")
            )
            self.gpu_util = Gauge("touchstone_gpu_util_pct", "GPU utilisation (%)", ("host", "gpu"))
            self.ok = True
        except Exception:
            pass

    def export(self, s: HostSample) -> None:
        if not self.ok:
            return
        try:
            tags = {"host": self.host}
            if s.sys_used_mb is not None:
                self.sys_used.set(s.sys_used_mb, tags=tags)
            if s.mem_pressure is not None:
                self.pressure.set(PRESSURE_RANK[s.mem_pressure], tags=tags)
            for g in s.gpus or []:
                gtags = {"host": self.host, "gpu": str(g.index)}
                if g.mem_used_mb is not None:
                    self.gpu_mem.set(g.mem_used_mb, tags=gtags)
                if g.util_pct is not None:
                    self.gpu_util.set(g.util_pct, tags=gtags)
        except Exception:
            pass


def _raylet() -> int | None:
    """This worker's raylet (its parent process), or ``None`` when the parent is not one."""
    parent = os.getppid()
    try:
        name = os.path.basename(psutil.Process(parent).exe())
    except (psutil.Error, OSError):
        return None
    return parent if name == "raylet" else None


@ray.remote(num_cpus=0, max_restarts=0)
class HostMonitor:
    """Samples its node every ``interval_s`` s; the driver drains the buffer.

    Samples travel as ``HostSample.model_dump(mode="json")`` dicts. Every method returns
    quickly and none raises because of a sensor.
    """

    def __init__(
        self,
        host: str,
        node_id: str | None,
        interval_s: float = 0.5,
        gpu_mode: GpuMode = "auto",
        buffer_size: int = DEFAULT_BUFFER,
        root: SysRoot | None = None,
        engines: Iterable[EngineTarget] = (),
        pids: Iterable[int] = (),
    ) -> None:
        self._setup(host, node_id, interval_s, gpu_mode, buffer_size, root, engines, pids)

    def _setup(
        self,
        host: str,
        node_id: str | None,
        interval_s: float,
        gpu_mode: GpuMode,
        buffer_size: int,
        root: SysRoot | None,
        engines: Iterable[EngineTarget],
        pids: Iterable[int],
    ) -> None:
        self.host = host
        self.interval_s = max(0.05, interval_s)  # a 0 or negative interval must not spin
        self._pids: frozenset[int] = frozenset(int(p) for p in pids)
        """Touchstone's other processes here (:meth:`register_pids`); ``pids`` are known
        before the first sample (the driver's, where it shares the host)."""
        self._sampler = HostSampler(
            host,
            node_id,
            interval_s,
            gpu_mode,
            root or SysRoot(),
            engines=engines,
            own_pids=HarnessPids(lambda: self._pids, raylet=_raylet()),
        )
        self._buf: deque[dict[str, Any]] = deque(maxlen=max(1, buffer_size))
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._gauges = _Gauges(host)
        self.ticks = 0
        self.dropped = 0
        self.last_error: str | None = None

    def start(self) -> dict[str, Any]:
        """Probe (once) and start the sampling thread (idempotent); returns capabilities."""
        caps = self._sampler.probe()
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="touchstone-monitor", daemon=True
            )
            self._thread.start()
        return caps

    def _run(self) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            self._tick()
            next_t += self.interval_s
            delay = next_t - time.monotonic()
            if delay < 0:  # fell behind (a slow reader): skip ticks rather than burst
                next_t, delay = time.monotonic(), 0.0
            self._stop.wait(delay)

    def _tick(self, baseline: bool = False, model: str | None = None) -> dict[str, Any]:
        try:
            sample = self._sampler.sample(baseline=baseline, model=model)
        except Exception as exc:  # the sampler does not raise; this is a last guard
            self.last_error = f"{type(exc).__name__}: {exc}"
            sample = HostSample(ts=time.time(), host=self.host, baseline=baseline, model=model)
        record = sample.model_dump(mode="json")
        with self._lock:
            if len(self._buf) == self._buf.maxlen:
                self.dropped += 1
            self._buf.append(record)
            self.ticks += 1
        self._gauges.export(sample)
        return record

    def drain(self) -> list[dict[str, Any]]:
        """Samples since the last drain, oldest first."""
        with self._lock:
            out = list(self._buf)
            self._buf.clear()
        return out

    def baseline(self, model: str) -> dict[str, Any]:
        """An immediate tick with ``baseline=True`` and ``model``; also put in the buffer."""
        return self._tick(baseline=True, model=model)

    def capabilities(self) -> dict[str, Any]:
        """``{field: {"supported", "reason", "source"}}`` as probed at start."""
        return self._sampler.probe()

    def register_pids(self, pids: Iterable[int]) -> None:
        """Count these pids (touchstone's other processes on this node) in :meth:`footprint`
        and leave them out of the foreign CPU (with every Ray and touchstone process here,
        :class:`~touchstone_ray.telemetry.engines.HarnessPids`)."""
        self._pids = self._pids | {int(p) for p in pids}  # one reference swap: thread-safe

    def engines(self) -> dict[str, dict[str, Any]]:
        """Per endpoint of this host: ``{"pid", "found_by", "reason"}`` of its engine process
        (:meth:`~touchstone_ray.telemetry.engines.EngineTracker.status`)."""
        return self._sampler.engine_status()

    def footprint(self) -> dict[str, Any]:
        """RSS (MB) of touchstone's own processes here (this monitor plus registered pids),
        and the harness's CPU over the ticks so far (:class:`~touchstone_ray.bundle.Footprint`).

        ``{"host", "node_id" (where this actor really runs), "monitor_pid",
        "rss_mb": {pid: MB or None if gone}, "total_rss_mb", "cpu_s": {pid: s or None},
        "ray_cpu_s": {pid: s} (the other harness pids: Ray's), "total_cpu_s", "span_s",
        "cpu_pct_mean" (% of one core)}``.
        """
        me = os.getpid()
        own = sorted({me, *self._pids})
        per: dict[str, float | None] = {}
        for pid in own:
            try:
                per[str(pid)] = psutil.Process(pid).memory_info().rss / MB
            except (psutil.Error, OSError):
                per[str(pid)] = None
        total = sum(v for v in per.values() if v is not None)
        cpu, span = self._sampler.harness_cpu()
        total_cpu = sum(cpu.values()) if span is not None else None
        try:
            node_id: str | None = ray.get_runtime_context().get_node_id()
        except Exception:
            node_id = None
        return {
            "host": self.host,
            "node_id": node_id,
            "monitor_pid": me,
            "rss_mb": per,
            "total_rss_mb": total,
            "cpu_s": {str(pid): cpu.get(pid) for pid in own} if span is not None else None,
            "ray_cpu_s": {str(p): s for p, s in sorted(cpu.items()) if p not in set(own)}
            if span is not None
            else None,
            "total_cpu_s": total_cpu,
            "span_s": span,
            "cpu_pct_mean": total_cpu / span * 100.0 if total_cpu is not None and span else None,
        }

    def stats(self) -> dict[str, Any]:
        """Ticks taken, samples dropped from a full buffer, the last internal error."""
        running = self._thread is not None and self._thread.is_alive()
        with self._lock:
            return {
                "running": running,
                "ticks": self.ticks,
                "buffered": len(self._buf),
                "dropped": self.dropped,
                "last_error": self.last_error,
            }

    def reset(
        self,
        host: str,
        node_id: str | None,
        interval_s: float = 0.5,
        gpu_mode: GpuMode = "auto",
        buffer_size: int = DEFAULT_BUFFER,
        engines: Iterable[EngineTarget] = (),
        pids: Iterable[int] = (),
    ) -> None:
        """Start over as a new monitor (arguments as for the constructor): stop sampling if it
        runs, drop what is buffered, forget the counts; :meth:`start` then starts sampling
        again. A host agent's monitor, reused by the next run, is reset by that run."""
        self.stop()
        self._setup(host, node_id, interval_s, gpu_mode, buffer_size, None, engines, pids)

    def stop(self) -> list[dict[str, Any]]:
        """Stop sampling, release NVML, and return the final drain."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(5.0, 2 * self.interval_s))
        self._sampler.close()
        return self.drain()
