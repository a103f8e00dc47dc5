"""Run untrusted code (a model's answer and the hidden asserts) in a sandboxed subprocess.

What each run gets:

* its own **network namespace** (no network; loopback exists but is down) and, where the
  host allows one, its own PID namespace, made by util-linux ``unshare``: ``unshare --net`` as
  root, ``unshare --net --map-root-user`` otherwise. Which prefix works is probed once per
  process and cached (:func:`isolation`); where none works the code is never run and
  :class:`SandboxUnavailable` says why (the check is then not measured). In a PID namespace
  ``sh`` is process 1 and the program its child: when ``sh`` ends, the kernel kills whatever
  the program left, even a process that left the group with ``setsid``. A program killed by
  signal ``n`` there exits ``128 + n`` (``sh``'s convention);
* an **empty environment** except ``PATH`` (:data:`SANDBOX_PATH`), stdin ``/dev/null``;
* its own **process group** (``start_new_session``); after ``timeout_s`` the whole group gets
  ``SIGKILL`` (and in a PID namespace the kernel kills every process left in it);
* limits (util-linux ``prlimit``, else ``setrlimit`` between fork and exec): CPU seconds,
  address space (MiB), size of any file written (MiB), no core files;
* a **fresh temp directory** as cwd, removed afterwards (stdout and stderr go to files beside
  it, so a run that prints without end is bounded by the file-size limit, not by memory).
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = [
    "SANDBOX_PATH",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "isolation",
    "python_argv",
    "run_sandboxed",
]

SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
"""The only environment variable a sandboxed program sees."""

_INIT = ("sh", "-c", 'unset PWD OLDPWD; "$@"; exit $?', "sh")
"""Process 1 of a PID namespace: ``sh`` running the program as its child (so the program has
the usual signal semantics, which process 1 has not) and exiting with its status."""

_CANDIDATES: tuple[tuple[str, ...], ...] = (
    ("unshare", "--net", "--pid", "--fork", "--kill-child", *_INIT),
    ("unshare", "--net", "--map-root-user", "--pid", "--fork", "--kill-child", *_INIT),
    ("unshare", "--net"),
    ("unshare", "--net", "--map-root-user"),
)
"""Namespace prefixes tried in order (the ones without ``--map-root-user`` need root)."""

_lock = threading.Lock()
_isolation: tuple[tuple[str, ...] | None, str] | None = None


class SandboxUnavailable(RuntimeError):
    """No network namespace can be made on this machine: the code is not run."""


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one sandboxed run."""

    timeout_s: float = 20.0
    """Wall clock after which the process group is killed (s)."""
    cpu_s: int = 20
    """CPU time per process (s, ``RLIMIT_CPU``; ``SIGKILL`` one second later)."""
    memory_mb: int = 2048
    """Address space per process (MiB, ``RLIMIT_AS``; ``node`` needs about 1 GiB to start)."""
    file_size_mb: int = 16
    """Largest file a process may write (MiB, ``RLIMIT_FSIZE``), stdout and stderr too."""
    tail_chars: int = 4000
    """Characters kept from the end of stdout and of stderr."""


@dataclass(frozen=True)
class SandboxResult:
    """What one sandboxed run did."""

    returncode: int
    """Exit status; negative: killed by that signal (``-9`` after a timeout); ``128 + n``:
    the program was killed by signal ``n`` inside a PID namespace."""
    stdout_tail: str
    """The last ``tail_chars`` of stdout (UTF-8, undecodable bytes replaced)."""
    stderr_tail: str
    """The last ``tail_chars`` of stderr."""
    timed_out: bool
    """The run passed ``timeout_s`` and its process group was killed."""
    elapsed_s: float
    """Wall time from start to exit (s)."""

    @property
    def ok(self) -> bool:
        """Exited 0 within the time."""
        return self.returncode == 0 and not self.timed_out


def python_argv() -> list[str]:
    """The interpreter for Python code: this one, isolated (``-I``: no environment variables,
    no user site, no script-independent ``sys.path`` entry)."""
    return [sys.executable, "-I"]


def isolation(refresh: bool = False) -> tuple[str, ...]:
    """The ``unshare`` prefix that gives a run its own network namespace here, probed once per
    process (running ``true`` under each candidate, ``unshare`` and ``sh`` looked up on this
    process's ``PATH``) and cached; ``refresh`` probes again.

    Raises :class:`SandboxUnavailable` naming why where none works.
    """
    global _isolation
    with _lock:
        if _isolation is None or refresh:
            _isolation = _probe()
        prefix, reason = _isolation
    if prefix is None:
        raise SandboxUnavailable(reason)
    return prefix


def _probe() -> tuple[tuple[str, ...] | None, str]:
    unshare = shutil.which("unshare")
    if unshare is None:
        return None, "no network namespace: unshare not found"
    true = shutil.which("true") or "/bin/true"
    shell = shutil.which("sh") or "/bin/sh"
    last = ""
    for candidate in _CANDIDATES:
        if "--map-root-user" not in candidate and os.geteuid() != 0:
            continue
        prefix = tuple(
            shell if part == "sh" and i == candidate.index("sh") else part
            for i, part in enumerate((unshare, *candidate[1:]))
        )
        try:
            done = subprocess.run(
                [*prefix, true],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=10,
                env={"PATH": SANDBOX_PATH},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            last = str(exc)
            continue
        if done.returncode == 0:
            return prefix, ""
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        last = lines[-1] if lines else f"exit {done.returncode}"
    return None, f"no network namespace: {last or 'unshare failed'}"


def _limits(limits: SandboxLimits) -> tuple[list[str], Callable[[], None] | None]:
    """The limits as a ``prlimit`` prefix (util-linux: set on itself, then exec), or, where
    there is no ``prlimit``, as a ``preexec_fn`` (not safe beside other threads, hence the
    second choice)."""
    cpu = max(1, int(limits.cpu_s))
    memory = limits.memory_mb * 2**20
    fsize = limits.file_size_mb * 2**20
    prlimit = shutil.which("prlimit")
    if prlimit is not None:
        return [
            prlimit,
            f"--cpu={cpu}:{cpu + 1}",
            f"--as={memory}",
            f"--fsize={fsize}",
            "--core=0",
        ], None

    def apply() -> None:  # runs in the child between fork and exec
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return [], apply


def _safe_relative(name: str) -> PurePosixPath:
    path = PurePosixPath(name.replace("\\", "/").lstrip("/"))
    if not path.parts or any(p in ("..", "") for p in path.parts):
        raise ValueError(f"not a relative path inside the sandbox: {name!r}")
    return path


def _tail(path: Path, chars: int) -> str:
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 4 * chars))
        text = f.read().decode("utf-8", errors="replace")
    return text[-chars:]


def _remove_tree(path: Path) -> None:
    def unlock(func: Callable[..., object], name: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(name), stat.S_IRWXU)
            os.chmod(name, stat.S_IRWXU)
            func(name)

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=unlock)
    else:
        shutil.rmtree(path, onerror=unlock)
    shutil.rmtree(path, ignore_errors=True)


def run_sandboxed(
    argv: Sequence[str],
    files: Mapping[str, str] | None = None,
    limits: SandboxLimits | None = None,
) -> SandboxResult:
    """Run ``argv`` sandboxed (see the module docstring) in a fresh temp directory holding
    ``files`` (relative path → UTF-8 text), and remove the directory afterwards.

    Raises :class:`SandboxUnavailable` (nothing run) where no network namespace can be made,
    ``ValueError`` for a file path outside the directory, ``FileNotFoundError`` where
    ``argv[0]`` is no executable (a bare name is looked up on :data:`SANDBOX_PATH`).
    """
    limits = limits or SandboxLimits()
    prefix = isolation()
    program = argv[0]
    found = program if "/" in program else shutil.which(program, path=SANDBOX_PATH)
    if found is None or not os.access(found, os.X_OK) or os.path.isdir(found):
        raise FileNotFoundError(errno.ENOENT, "no such program", program)
    root = Path(tempfile.mkdtemp(prefix="ts-sandbox-"))
    try:
        work = root / "work"
        work.mkdir()
        for name, text in (files or {}).items():
            target = work / _safe_relative(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        out, err = root / "stdout", root / "stderr"
        limit_prefix, preexec = _limits(limits)
        with out.open("wb") as stdout, err.open("wb") as stderr:
            start = time.perf_counter()
            proc = subprocess.Popen(
                [*limit_prefix, *prefix, *argv],
                cwd=work,
                env={"PATH": SANDBOX_PATH},
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
                preexec_fn=preexec,
                close_fds=True,
            )
            try:
                timed_out = not _exited(proc, limits.timeout_s)
            except BaseException:  # interrupted while waiting: leave nothing running
                _kill_group(proc.pid)
                proc.wait()
                raise
            elapsed = time.perf_counter() - start
            # Not reaped yet, so its pid still names the group: kill whatever is left in it
            # (everything, after a timeout), then reap.
            _kill_group(proc.pid)
            returncode = proc.wait()
        return SandboxResult(
            returncode=returncode,
            stdout_tail=_tail(out, limits.tail_chars),
            stderr_tail=_tail(err, limits.tail_chars),
            timed_out=timed_out,
            elapsed_s=elapsed,
        )
    finally:
        _remove_tree(root)


def _exited(proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Wait until ``proc`` exits or ``timeout_s`` passes, without reaping it (a pidfd wakes
    at once; no polling loop)."""
    try:
        fd = os.pidfd_open(proc.pid)
    except OSError:  # pre-5.3 kernel: waitid with WNOWAIT in short sleeps
        deadline = time.perf_counter() + timeout_s
        while time.perf_counter() < deadline:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                return True
            time.sleep(0.002)
        return False
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(max(0, int(timeout_s * 1000))))
    finally:
        os.close(fd)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
