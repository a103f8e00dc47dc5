"""The serving process of each endpoint on this host, and the CPU nobody in the run uses.

Finding the engine (no configuration needed)
    An endpoint's ``base_url`` is resolved *on its host* (the monitor runs there): when its
    hostname is this machine (loopback, or an address of a local interface), the process
    listening on its TCP port (``psutil.net_connections``) is the engine's root. With
    ``engine_process: <substring>`` on the model entry (a server behind a proxy, where the
    port belongs to the proxy) the root is instead the one process whose name or command line
    contains the substring (touchstone's own processes never match). Each tick samples the
    root and all its children (Ollama's runners, vLLM's workers), listed anew every tick, so a
    runner started by a model load is counted at once (from the kernel's per-thread
    ``/proc/<pid>/task/<tid>/children`` lists where they exist: a few small reads, not a scan of
    the whole process table). The root is looked up again when it exits (a restarted server
    gets a new pid); an endpoint that was not found is retried every ``resolve_every`` ticks.
    A lookup by port lists every socket of every process on the host, so it never runs on a
    regular tick while the endpoint's process is alive.

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
    with it, the Ray daemons and workers of this run's cluster on the machine — raylet, GCS,
    dashboard, agents, ``ray::`` workers of any of its nodes started here — and a
    ``touchstone-ray`` driver), floored at 0. Short-lived processes and kernel time are
    included, since it is measured from the host total rather than summed per process. So
    the other simulated hosts of a one-machine demo cluster are harness, not contention; a
    second, unrelated Ray session on the same machine is foreign, as any other work.

Harness CPU (:meth:`EngineTracker.harness_cpu`, for ``bundle.json``
``hosts.<h>.touchstone_footprint``)
    The same per-process readings, summed over the run: per harness pid the CPU seconds
    (user + system) it used since the tracker first read it (a process that started after the
    previous tick counts from its start), up to the last reading, over ``span_s`` seconds
    since the tracker's first tick.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
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


def _argv(pid: int) -> list[str] | None:
    """The command line of ``pid`` (``[]`` for a kernel thread or a zombie), or ``None`` when
    it cannot be read (gone, no permission)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


_SESSION = re.compile(r"session_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_\d+_\d+")
"""A Ray session's name, as its daemons carry it in their command lines."""


def ray_session_of(pid: int) -> str | None:
    """The Ray session name in the command line of ``pid`` (a raylet's: ``--session-name``,
    its socket paths), or ``None``."""
    found = _SESSION.search(" ".join(_argv(pid) or []))
    return found.group(0) if found else None


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        return int(stat[stat.rindex(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


class HarnessPids:
    """Pids of the measuring harness on this host (:func:`is_harness`), plus ``extra`` ones.

    Calling it returns the set; the process table is scanned at most every ``refresh_s``
    (a worker that starts in between counts as foreign until the next scan). A scan lists
    the pids and reads the command line of new ones only: a process's verdict is kept while
    its pid lives (a Ray worker renames itself, ``ray::IDLE`` to ``ray::HostClient``, and
    stays harness). Without ``/proc`` every process is asked through psutil.

    ``raylet`` (the pid of this node's raylet, the parent of every worker and agent) limits
    Ray's processes to this run's cluster: the raylet's children and any Ray process whose
    command line names its session (:func:`ray_session_of`: the GCS, dashboard and monitors
    of a head node, the raylets of other nodes of a one-machine cluster). Another Ray session
    on the same machine is then foreign, as any other work is. Without it every Ray process
    on the machine counts."""

    def __init__(
        self,
        extra: Callable[[], Iterable[int]] = tuple,
        refresh_s: float = HARNESS_REFRESH_S,
        raylet: int | None = None,
    ) -> None:
        self._extra = extra
        self.refresh_s = refresh_s
        self._scanned_at = -float("inf")
        self._pids: frozenset[int] = frozenset()
        self._verdicts: dict[int, bool] = {}
        self.raylet = raylet
        self.session = ray_session_of(raylet) if raylet is not None else None

    def _is_ours(self, pid: int, argv: list[str]) -> bool:
        if not is_harness(argv):
            return False
        if self.raylet is None or pid == self.raylet:
            return True
        if any(os.path.basename(a) == "touchstone-ray" for a in argv[:4]):
            return True
        if self.session is not None and any(self.session in a for a in argv):
            return True
        return _ppid(pid) == self.raylet

    def _scan(self) -> frozenset[int]:
        try:
            pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        except OSError:
            found = set()
            for p in psutil.process_iter(["cmdline"]):
                if is_harness(p.info.get("cmdline") or []):
                    found.add(p.pid)
            return frozenset(found)
        verdicts: dict[int, bool] = {}
        for pid in pids:
            known = self._verdicts.get(pid)
            if known is None:
                argv = _argv(pid)
                if argv is None:
                    continue
                known = self._is_ours(pid, argv)
            verdicts[pid] = known
        self._verdicts = verdicts
        return frozenset(pid for pid, yes in verdicts.items() if yes)

    def __call__(self) -> set[int]:
        now = time.monotonic()
        if now - self._scanned_at >= self.refresh_s:
            self._pids, self._scanned_at = self._scan(), now
        return {os.getpid(), *self._pids, *self._extra()}


_CHILDREN_LISTS = os.path.exists(f"/proc/self/task/{os.getpid()}/children")
"""Whether this kernel keeps per-thread children lists (``CONFIG_PROC_CHILDREN``)."""


def child_pids(pid: int) -> list[int] | None:
    """Direct children of ``pid`` from ``/proc/<pid>/task/*/children`` (each thread lists the
    children it forked; ``[]`` for a process that is gone), or ``None`` where the kernel does
    not keep those lists."""
    if not _CHILDREN_LISTS:
        return None
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                out += [int(c) for c in fh.read().split()]
        except OSError:  # the thread ended meanwhile
            continue
    return out


def tree_pids(pid: int) -> list[int] | None:
    """``pid``'s descendants (not ``pid`` itself), from :func:`child_pids`, or ``None`` when
    those lists are not available."""
    todo, out = [pid], []
    while todo:
        kids = child_pids(todo.pop())
        if kids is None:
            return None
        out += kids
        todo += kids
    return out


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
    started: float | None = None
    """The tick's time on the clock of ``Process.create_time`` (:func:`process_clock`)."""


_BOOT_TIME: list[float] = []
"""psutil's boot time, read once (it reads ``/proc/stat``)."""


def process_clock() -> float:
    """Now, on the clock of psutil's ``Process.create_time``: on Linux the boot time plus
    ``/proc/uptime`` (a process's start is the boot time plus its start in ticks since boot,
    so the two compare to 0.01 s, where the wall clock can be a second off); elsewhere the
    wall clock."""
    try:
        with open("/proc/uptime", "rb") as fh:
            up = float(fh.read().split()[0])
        if not _BOOT_TIME:
            _BOOT_TIME.append(float(psutil.boot_time()))
        return _BOOT_TIME[0] + up
    except (OSError, ValueError, IndexError):
        return time.time()


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
        self._procs: dict[int, psutil.Process] = {}
        """pid → its psutil object, kept while it is read (knows its create time)."""
        self._harness_s: dict[int, float] = {}
        """Harness pid → CPU s it used between the regular ticks that read it."""
        self._first_ts: float | None = None
        """Epoch s of the first regular tick (the start of :meth:`harness_cpu`'s span)."""
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
        missing = st.proc is None and st.ticks_since_resolve >= self.resolve_every
        if exited or missing:
            self._resolve(st)
        if st.proc is None:
            return []
        kids = tree_pids(st.proc.pid)
        if kids is None:
            try:
                return [st.proc, *st.proc.children(recursive=True)]
            except (psutil.Error, OSError):
                st.proc = None
                return []
        return [st.proc, *(p for pid in kids if (p := self._proc(pid)) is not None)]

    def _proc(self, pid: int) -> psutil.Process | None:
        """The kept psutil object of ``pid`` (a new one for a pid not seen or reused), or
        ``None`` when it is gone."""
        p = self._procs.get(pid)
        if p is not None:
            return p
        try:
            p = self._procs[pid] = psutil.Process(pid)
        except (psutil.Error, OSError):
            return None
        return p

    def sample(self, advance: bool = True) -> tuple[list[EngineProcessSample], float | None]:
        """Engine samples of the endpoints found now, and the foreign CPU (% of one core).

        ``advance=False`` (baseline ticks between regular ones) reads against the previous
        regular tick without moving it, so the next regular tick still spans a full interval.
        Never raises."""
        now, started = time.time(), process_clock()
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
        foreign = self._foreign(now, started, dt, engine_cpu, cpu_now, advance)
        return samples, foreign

    def _cpu_delta(self, p: psutil.Process, secs: float, dt: float | None) -> float | None:
        prev = self._clock.pids.get(p.pid)
        if prev is not None:
            return max(0.0, secs - prev)
        started = self._clock.started
        if dt is None or started is None:
            return None
        try:  # started since the last tick: all its CPU time is new
            return secs if p.create_time() >= started else None
        except (psutil.Error, OSError):
            return None

    def _foreign(
        self,
        now: float,
        started: float,
        dt: float | None,
        engine_cpu: dict[int, float],
        cpu_now: dict[int, float],
        advance: bool,
    ) -> float | None:
        clock = self._clock
        own_cpu = 0.0
        own_known = True
        own_deltas: dict[int, float] = {}
        for pid in self._own_pids() | {os.getpid()}:
            if pid in engine_cpu:
                continue
            p = self._proc(pid)
            if p is None:
                continue
            try:
                secs = cpu_now[pid] = _cpu_s(p)
            except (psutil.Error, OSError):
                self._procs.pop(pid, None)
                continue
            delta = self._cpu_delta(p, secs, dt)
            if delta is None:
                own_known = False
                own_deltas.setdefault(pid, 0.0)
            else:
                own_deltas[pid] = delta
                if dt:
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
            self._clock = _CpuClock(ts=now, host=host, pids=cpu_now, started=started)
            if self._first_ts is None:
                self._first_ts = now
            for pid, delta in own_deltas.items():
                self._harness_s[pid] = self._harness_s.get(pid, 0.0) + delta
            for pid in set(self._procs) - set(cpu_now):  # not read this tick: gone or left
                del self._procs[pid]
        return foreign

    def harness_cpu(self) -> tuple[dict[int, float], float | None]:
        """Per harness pid the CPU seconds it used over the ticks so far (module docstring),
        and the seconds those ticks span (``None`` before two regular ticks)."""
        span = None
        if self._first_ts is not None and self._clock.ts is not None:
            span = self._clock.ts - self._first_ts
        return dict(self._harness_s), span or None
