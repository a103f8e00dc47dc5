"""The serving process of each endpoint on this host, and the CPU nobody in the run uses.

Finding the engine (no configuration needed)
    An endpoint's ``base_url`` is resolved *on its host* (the monitor runs there): when its
    hostname is this machine (loopback, or an address of a local interface), the process
    listening on its TCP port (``psutil.net_connections``) is the engine's root. With
    ``engine_process: <substring>`` on the model entry (a server behind a proxy, where the
    port belongs to the proxy) the root is instead the one process whose name or command line
    contains the substring (touchstone's own processes never match). Each tick samples the
    root and all its children (Ollama's runners, vLLM's workers), listed anew every tick, so a
    runner started by a model load is counted at once. The root is looked up again when it
    exits and every ``resolve_every`` ticks (a restarted server gets a new pid); an endpoint
    that was not found is retried on the same period.

    It is not found (its figures stay ``None``, the reason is in :meth:`EngineTracker.status`
    and from there in ``bundle.json``) when the hostname is another machine, nothing listens
    on the port here (another container or network namespace), the listener belongs to a user
    whose sockets we may not read, or ``engine_process`` matches no or several processes.
    ``engine: simulated`` endpoints are served by touchstone's own client actor: there is no
    separate engine process, so their figures are ``None`` with the reason ``simulated``.

Units (per endpoint, :class:`~touchstone_ray.records.EngineProcessSample`)
    ``rss_mb``      Σ RSS of the tree (MB = 2**20 bytes; RSS, so pages shared between a
                    parent and its forked workers count once per process)
    ``cpu_pct``     Σ Δ(user + system CPU s) of the tree / Δ wall s × 100: % of *one* core,
                    so a server busy on 4 cores reads 400 (psutil's ``Process.cpu_percent``
                    convention); ``None`` on the first tick (no previous reading)
    ``gpu_mem_mb``  Σ NVML ``usedGpuMemory`` of the tree's pids over all GPUs
                    (:meth:`~touchstone_ray.telemetry.nvml.NvmlReader.process_memory`)

Foreign CPU (``HostSample.foreign_cpu_pct``, % of one core, since the previous tick)
    host busy CPU (``psutil.cpu_times()`` summed over CPUs: everything but idle and iowait)
    − the engines' ``cpu_pct`` (each process once, also when two endpoints share a server)
    − the harness on this host (:class:`HarnessPids`: this monitor and the pids registered
    with it, every Ray daemon and worker process on the machine — raylet, GCS, dashboard,
    agents, ``ray::`` workers of any node started here — and a ``touchstone-ray`` driver),
    floored at 0. Short-lived processes and kernel time are included, since it is measured
    from the host total rather than summed per process. So the other simulated hosts of a
    one-machine demo cluster are harness, not contention; a second, unrelated Ray session on
    the same machine would count as harness too.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import psutil

from touchstone_ray.records import EngineProcessSample
from touchstone_ray.telemetry.linux import MB

RESOLVE_EVERY = 20
"""Ticks between lookups of an endpoint's root process (10 s at the default 0.5 s)."""

SIMULATED_REASON = "simulated: served inside touchstone's client actor, no separate process"


def endpoint_of(label: str, base_url: str | None) -> str:
    """The endpoint name of model ``label`` served at ``base_url``: the URL, or
    ``simulated:<label>`` when a simulated model has none (the name
    :class:`EngineProcessSample` ``endpoint`` carries, and the keys of ``bundle.json``
    ``hosts.<h>.engines``)."""
    return str(base_url) if base_url else f"simulated:{label}"


@dataclass(frozen=True)
class EngineTarget:
    """One endpoint to find on this host: ``endpoint`` (its base URL as configured),
    ``process`` (the ``engine_process`` name substring, or ``None``), ``simulated``."""

    endpoint: str
    process: str | None = None
    simulated: bool = False

    @classmethod
    def from_spec(cls, label: str, spec: Mapping[str, Any]) -> EngineTarget:
        """From a model entry (``ModelSpec.model_dump()`` or the manifest's model dict)."""
        return cls(
            endpoint=endpoint_of(label, spec.get("base_url")),
            process=spec.get("engine_process"),
            simulated=spec.get("engine") == "simulated",
        )


@dataclass
class _State:
    target: EngineTarget
    pid: int | None = None
    found_by: str | None = None
    reason: str | None = None
    proc: psutil.Process | None = None
    ticks_since_resolve: int = 0


def _local_addresses() -> set[str]:
    out = {"0.0.0.0", "::"}
    with contextlib.suppress(Exception):
        for addrs in psutil.net_if_addrs().values():
            out.update(a.address.split("%")[0] for a in addrs)
    return out


def _is_local(hostname: str) -> bool:
    try:
        infos = socket.getaddrinfo(hostname, None)
    except OSError:
        return False
    local = _local_addresses()
    for info in infos:
        addr = str(info[4][0]).split("%")[0]
        with contextlib.suppress(ValueError):
            if ipaddress.ip_address(addr).is_loopback or addr in local:
                return True
    return False


def listener_pid(port: int) -> tuple[int | None, str | None]:
    """``(pid, None)`` of the process listening on TCP ``port`` here, or ``(None, reason)``."""
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, PermissionError) as exc:
        return None, f"cannot list sockets here ({type(exc).__name__})"
    listening = [
        c for c in conns if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
    ]
    if not listening:
        return None, f"nothing listens on port {port} on this host (another container or host?)"
    pids = sorted({c.pid for c in listening if c.pid is not None})
    if not pids:
        return None, f"port {port} is held by a process of another user (no permission)"
    return pids[0], None


def resolve_port(endpoint: str) -> tuple[int | None, str | None]:
    """The listener behind ``endpoint``'s host:port when that host is this machine."""
    parsed = urlparse(endpoint)
    hostname = parsed.hostname
    if hostname is None:
        return None, f"no host in {endpoint!r}"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    if not _is_local(hostname):
        return None, f"{hostname} is not this host"
    return listener_pid(port)


def _cmdline(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except (psutil.Error, OSError):
        return ""


def resolve_name(needle: str, exclude: set[int]) -> tuple[int | None, str | None]:
    """The one root process whose name or command line contains ``needle``.

    Children of a match are part of its tree, not further matches. No match or several roots
    → ``(None, reason)``."""
    matches: dict[int, int] = {}
    for p in psutil.process_iter(["pid", "ppid", "name"]):
        if p.pid in exclude:
            continue
        name = p.info.get("name") or ""
        if needle in name or needle in _cmdline(p):
            matches[p.pid] = p.info.get("ppid") or 0
    roots = sorted(pid for pid, ppid in matches.items() if ppid not in matches)
    if not roots:
        return None, f"no process matches engine_process {needle!r}"
    if len(roots) > 1:
        shown = ", ".join(map(str, roots[:5]))
        return None, f"engine_process {needle!r} matches {len(roots)} processes ({shown})"
    return roots[0], None


HARNESS_REFRESH_S = 5.0
"""How long one scan of the process table for harness pids is reused (s)."""

_RAY_DAEMONS = frozenset({"raylet", "gcs_server"})
_RAY_MODULE_DIRS = ("/ray/dashboard/", "/ray/_private/", "/ray/autoscaler/")


def is_harness(argv: list[str]) -> bool:
    """Whether a command line is Ray's or touchstone's own: a ``ray::`` worker title, the
    raylet or GCS binary, a Python daemon from Ray's package (dashboard, agents, log monitor,
    idle workers), or the ``touchstone-ray`` console script."""
    if not argv:
        return False
    if argv[0].startswith("ray::") or os.path.basename(argv[0]) in _RAY_DAEMONS:
        return True
    return any(
        os.path.basename(arg) == "touchstone-ray" or any(d in arg for d in _RAY_MODULE_DIRS)
        for arg in argv[:4]
    )


class HarnessPids:
    """Pids of the measuring harness on this host (:func:`is_harness`), plus ``extra`` ones.

    Calling it returns the set; the process table is scanned at most every ``refresh_s``
    (a worker that starts in between counts as foreign until the next scan)."""

    def __init__(
        self, extra: Callable[[], Iterable[int]] = tuple, refresh_s: float = HARNESS_REFRESH_S
    ) -> None:
        self._extra = extra
        self.refresh_s = refresh_s
        self._scanned_at = -float("inf")
        self._pids: frozenset[int] = frozenset()

    def __call__(self) -> set[int]:
        now = time.monotonic()
        if now - self._scanned_at >= self.refresh_s:
            found = set()
            for p in psutil.process_iter(["cmdline"]):
                if is_harness(p.info.get("cmdline") or []):
                    found.add(p.pid)
            self._pids, self._scanned_at = frozenset(found), now
        return {os.getpid(), *self._pids, *self._extra()}


def _cpu_s(p: psutil.Process) -> float:
    t = p.cpu_times()
    return float(t.user + t.system)


def host_busy_s() -> float:
    """Busy CPU seconds of the host, summed over CPUs (all but idle and iowait)."""
    t = psutil.cpu_times()
    idle = t.idle + getattr(t, "iowait", 0.0)
    return float(sum(t) - idle)


@dataclass
class _CpuClock:
    """Previous CPU readings per pid and of the host, for Δ per tick."""

    ts: float | None = None
    host: float | None = None
    pids: dict[int, float] = field(default_factory=dict)


class EngineTracker:
    """Finds and samples the engine process trees of a host's endpoints (module docstring).

    ``own_pids`` returns touchstone's pids on this host (excluded from name matching and from
    the foreign CPU); ``gpu_memory`` returns ``{pid: MB}`` from NVML, or ``None`` when
    per-process GPU memory is not known here. Not thread-safe (the monitor holds a lock).
    """

    def __init__(
        self,
        targets: Iterable[EngineTarget],
        own_pids: Callable[[], set[int]] = lambda: {os.getpid()},
        gpu_memory: Callable[[], dict[int, float] | None] = lambda: None,
        resolve_every: int = RESOLVE_EVERY,
    ) -> None:
        self._states = {t.endpoint: _State(t) for t in targets}
        self._own_pids = own_pids
        self._gpu_memory = gpu_memory
        self.resolve_every = max(1, resolve_every)
        self._clock = _CpuClock()
        for st in self._states.values():
            if st.target.simulated:
                st.reason = SIMULATED_REASON
            else:
                self._resolve(st)

    @property
    def endpoints(self) -> list[str]:
        return list(self._states)

    def status(self) -> dict[str, dict[str, Any]]:
        """Per endpoint ``{"pid", "found_by" ("port"|"engine_process"|None), "reason"}``:
        ``reason`` says why it is not found now (``None`` while it is)."""
        return {
            ep: {"pid": st.pid, "found_by": st.found_by, "reason": st.reason}
            for ep, st in self._states.items()
        }

    def _resolve(self, st: _State) -> None:
        st.ticks_since_resolve = 0
        if st.target.process:
            pid, reason = resolve_name(st.target.process, self._own_pids() | {os.getpid()})
            how = "engine_process"
        else:
            pid, reason = resolve_port(st.target.endpoint)
            how = "port"
        proc: psutil.Process | None = None
        if pid is not None:
            try:
                proc = psutil.Process(pid)
            except (psutil.Error, OSError) as exc:
                pid, reason = None, f"pid {pid} vanished ({type(exc).__name__})"
        if st.proc is not None and proc is not None and st.proc.pid == proc.pid:
            proc = st.proc  # keep the object: it knows the process's create time
        st.pid, st.proc, st.reason = pid, proc, reason
        st.found_by = how if pid is not None else None

    def _tree(self, st: _State) -> list[psutil.Process]:
        if st.target.simulated:
            return []
        st.ticks_since_resolve += 1
        exited = st.proc is not None and not st.proc.is_running()
        if exited or st.ticks_since_resolve >= self.resolve_every:
            self._resolve(st)
        if st.proc is None:
            return []
        try:
            return [st.proc, *st.proc.children(recursive=True)]
        except (psutil.Error, OSError):
            st.proc = None
            return []

    def sample(self, advance: bool = True) -> tuple[list[EngineProcessSample], float | None]:
        """Engine samples of the endpoints found now, and the foreign CPU (% of one core).

        ``advance=False`` (baseline ticks between regular ones) reads against the previous
        regular tick without moving it, so the next regular tick still spans a full interval.
        Never raises."""
        now = time.time()
        clock = self._clock
        dt = None if clock.ts is None else now - clock.ts
        cpu_now: dict[int, float] = {}
        samples: list[EngineProcessSample] = []
        engine_cpu: dict[int, float] = {}
        gpu = self._gpu_memory()
        if gpu is not None and not all(psutil.pid_exists(pid) for pid in gpu):
            gpu = None  # NVML reports pids of another pid namespace (a container): unknown
        for ep, st in self._states.items():
            tree = self._tree(st)
            if not tree:
                continue
            rss = 0.0
            cpu: float | None = 0.0 if dt else None
            gpu_mb: float | None = 0.0 if gpu is not None else None
            for p in tree:
                try:
                    rss += p.memory_info().rss / MB
                    secs = cpu_now[p.pid] = _cpu_s(p)
                except (psutil.Error, OSError):
                    continue
                if gpu is not None and gpu_mb is not None:
                    gpu_mb += gpu.get(p.pid, 0.0)
                delta = self._cpu_delta(p, secs, dt)
                if cpu is not None and delta is not None and dt:
                    engine_cpu[p.pid] = delta / dt * 100.0
                    cpu += engine_cpu[p.pid]
            samples.append(
                EngineProcessSample(
                    endpoint=ep, pid=st.pid, rss_mb=rss, cpu_pct=cpu, gpu_mem_mb=gpu_mb
                )
            )
        foreign = self._foreign(now, dt, engine_cpu, cpu_now, advance)
        return samples, foreign

    def _cpu_delta(self, p: psutil.Process, secs: float, dt: float | None) -> float | None:
        prev = self._clock.pids.get(p.pid)
        if prev is not None:
            return max(0.0, secs - prev)
        if dt is None or self._clock.ts is None:
            return None
        try:  # started since the last tick: all its CPU time is new
            return secs if p.create_time() >= self._clock.ts else None
        except (psutil.Error, OSError):
            return None

    def _foreign(
        self,
        now: float,
        dt: float | None,
        engine_cpu: dict[int, float],
        cpu_now: dict[int, float],
        advance: bool,
    ) -> float | None:
        clock = self._clock
        own_cpu = 0.0
        own_known = True
        for pid in self._own_pids() | {os.getpid()}:
            if pid in engine_cpu:
                continue
            try:
                p = psutil.Process(pid)
                secs = cpu_now[pid] = _cpu_s(p)
            except (psutil.Error, OSError):
                continue
            delta = self._cpu_delta(p, secs, dt)
            if delta is None:
                own_known = False
            elif dt:
                own_cpu += delta / dt * 100.0
        try:
            host = host_busy_s()
        except Exception:
            host = None
        foreign: float | None = None
        if dt and host is not None and clock.host is not None and own_known:
            host_pct = (host - clock.host) / dt * 100.0
            foreign = max(0.0, host_pct - sum(engine_cpu.values()) - own_cpu)
        if advance:
            self._clock = _CpuClock(ts=now, host=host, pids=cpu_now)
        return foreign
