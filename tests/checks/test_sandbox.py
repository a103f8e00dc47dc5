"""The sandbox for real: no network, an empty environment, no stdin, the process group killed
on timeout (grandchildren and a process that left the group too), CPU / memory / file-size
limits, and the temp directory removed."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from touchstone_ray.checks import SandboxLimits, run_sandboxed
from touchstone_ray.checks.sandbox import SANDBOX_PATH, isolation, python_argv

CLIENT = """
import errno, socket
s = socket.socket()
s.settimeout(3)
try:
    s.connect(("127.0.0.1", {port}))
except OSError as exc:
    print("blocked", errno.errorcode.get(exc.errno, exc.errno))
else:
    print("connected")
"""


@pytest.fixture
def listening_port() -> Iterator[int]:
    """A TCP server listening on loopback (connections wait in its backlog)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def py(code: str, limits: SandboxLimits | None = None, **files: str) -> tuple[int, str, str]:
    """``(returncode, stdout, stderr)`` of ``code`` run sandboxed by this interpreter."""
    result = run_sandboxed([*python_argv(), "-c", code], files, limits)
    return result.returncode, result.stdout_tail, result.stderr_tail


def test_no_network_inside_while_the_server_is_reachable_outside(listening_port: int) -> None:
    code = CLIENT.format(port=listening_port)
    outside = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert outside.stdout == "connected\n"
    assert py(code) == (0, "blocked ENETUNREACH\n", "")


def test_the_environment_is_empty_but_path() -> None:
    env = shutil.which("env")
    assert env is not None
    result = run_sandboxed([env])
    assert (result.returncode, result.stdout_tail) == (0, f"PATH={SANDBOX_PATH}\n")


def test_stdin_is_dev_null_and_python_runs_isolated() -> None:
    code = (
        "import os, sys\n"
        "print(repr(sys.stdin.read()), os.readlink('/proc/self/fd/0'), sys.flags.isolated)"
    )
    assert py(code) == (0, "'' /dev/null 1\n", "")


def _alive(marker: str) -> list[int]:
    """Pids of live (not zombie) processes whose command line holds ``marker``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and marker in " ".join(
            proc.info["cmdline"] or []
        ):
            found.append(proc.pid)
    return found


def test_timeout_kills_the_whole_group_and_what_left_it() -> None:
    marker = f"{60 + uuid.uuid4().int % 1000 / 1000:.3f}"  # a sleep length no one else uses
    code = f"""
import os, subprocess, time
subprocess.Popen(["sleep", "{marker}"])          # a child
if os.fork() == 0:                               # a grandchild's parent...
    subprocess.Popen(["sleep", "{marker}"])
    if os.fork() == 0:                           # ...and one that leaves the group
        os.setsid()
        os.execvp("sleep", ["sleep", "{marker}"])
    time.sleep(60)
print("started", flush=True)
time.sleep(60)
"""
    start = time.perf_counter()
    result = run_sandboxed([*python_argv(), "-c", code], limits=SandboxLimits(timeout_s=1.5))
    took = time.perf_counter() - start
    assert (result.timed_out, result.returncode, result.stdout_tail) == (True, -9, "started\n")
    assert 1.5 <= result.elapsed_s < 3.0 and took < 4.0
    deadline = time.monotonic() + 2.0
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _alive(marker) == []


def test_memory_limit() -> None:
    rc, _, err = py("b = bytearray(512 * 2**20)", SandboxLimits(memory_mb=256))
    assert (rc, err.splitlines()[-1]) == (1, "MemoryError")
    assert py("b = bytearray(64 * 2**20); print(len(b))", SandboxLimits(memory_mb=256)) == (
        0,
        f"{64 * 2**20}\n",
        "",
    )


def test_file_size_limit() -> None:
    code = "open('big', 'wb').write(b'x' * (2 * 2**20))"
    rc, _, err = py(code, SandboxLimits(file_size_mb=1))
    assert (rc, err.splitlines()[-1]) == (1, "OSError: [Errno 27] File too large")


def test_cpu_limit() -> None:
    result = run_sandboxed(
        [*python_argv(), "-c", "while True: pass"], limits=SandboxLimits(cpu_s=1, timeout_s=10)
    )
    assert not result.timed_out
    # SIGXCPU: from sh as 128 + n inside a PID namespace, as a signal without one
    assert result.returncode in (128 + signal.SIGXCPU, -signal.SIGXCPU)
    assert result.elapsed_s < 5


def test_files_are_written_and_the_temp_directory_is_removed() -> None:
    code = """
import os
print(os.getcwd())
print(open("a/b.txt").read())
os.makedirs("locked/inner")
open("locked/inner/f", "w").write("x")
os.chmod("locked/inner", 0)
os.chmod("locked", 0)
"""
    rc, out, err = py(code, **{"a/b.txt": "hallo"})
    cwd = Path(out.splitlines()[0])
    assert (rc, out.splitlines()[1:], err) == (0, ["hallo"], "")
    assert cwd.name == "work" and cwd.parent.name.startswith("ts-sandbox-")
    assert not cwd.exists() and not cwd.parent.exists()


def test_a_file_outside_the_directory_is_refused() -> None:
    with pytest.raises(ValueError, match=r"not a relative path inside the sandbox: '\.\./x'"):
        run_sandboxed(["true"], {"../x": ""})


def test_output_tails() -> None:
    result = run_sandboxed(
        [*python_argv(), "-c", "print('x' * 100 + 'END'); import sys; sys.exit(3)"],
        limits=SandboxLimits(tail_chars=10),
    )
    assert (result.returncode, result.stdout_tail, result.ok) == (3, "xxxxxxEND\n", False)


def test_a_missing_program_is_refused_before_anything_runs() -> None:
    with pytest.raises(FileNotFoundError, match="/nonexistent/program"):
        run_sandboxed(["/nonexistent/program"])
    with pytest.raises(FileNotFoundError, match="no-such-program-here"):
        run_sandboxed(["no-such-program-here"])


def test_no_process_is_left_after_a_normal_exit() -> None:
    marker = f"{70 + uuid.uuid4().int % 1000 / 1000:.3f}"
    code = f"import subprocess; subprocess.Popen(['sleep', '{marker}']); print('bye')"
    assert py(code) == (0, "bye\n", "")
    time.sleep(0.2)
    assert _alive(marker) == []


@pytest.fixture
def no_prlimit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's ``PATH`` with ``unshare``, ``sh`` and ``true`` but no ``prlimit``."""
    for name in ("unshare", "sh", "true"):
        found = shutil.which(name)
        assert found is not None
        (tmp_path / name).symlink_to(found)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert shutil.which("prlimit") is None
    isolation(refresh=True)
    yield
    monkeypatch.undo()
    isolation(refresh=True)


@pytest.mark.usefixtures("no_prlimit")
def test_the_limits_hold_without_prlimit_too() -> None:
    rc, _, err = py("b = bytearray(512 * 2**20)", SandboxLimits(memory_mb=256))
    assert (rc, err.splitlines()[-1]) == (1, "MemoryError")
    rc, _, err = py("open('big', 'wb').write(b'x' * (2 * 2**20))", SandboxLimits(file_size_mb=1))
    assert (rc, err.splitlines()[-1]) == (1, "OSError: [Errno 27] File too large")
