"""The suite's own checks: a process a test leaves running fails the run (with its pid and
command line) and is killed; the tiers' markers follow the folders; the process helpers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from procs import GRACE, RUN_TAG, sigint_default, stop_group

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parent
LEAKY = """
import subprocess, sys
from pathlib import Path

def test_leaves_a_sleeper(tmp_path_factory):
    env = {"PATH": "/usr/bin:/bin"}  # no run tag: found as a descendant of pytest
    untagged = subprocess.Popen(["sleep", "301"], env=env)
    # tagged, and orphaned at once: its parent shell exits before the test ends
    subprocess.run(["sh", "-c", "sleep 302 & echo $! > orphan.pid"], check=True)
    Path("pids").write_text(f"{untagged.pid} {Path('orphan.pid').read_text().strip()}")

def test_clean():
    assert True
"""


def _inner_pytest(pytester: pytest.Pytester, source: str) -> pytest.RunResult:
    """Run ``source`` as a test module under the suite's own conftest, in a subprocess."""
    pytester.makeconftest((TESTS / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(test_inner=source)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path]), GRACE: "1"}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in env.items():
            mp.setenv(name, value)
        return pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=120)


def test_a_process_left_running_fails_the_run_and_is_killed(pytester: pytest.Pytester) -> None:
    result = _inner_pytest(pytester, LEAKY)
    untagged, orphan = (int(p) for p in (pytester.path / "pids").read_text().split())
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "processes the tests started still ran after the last test (now killed):",
            f"  pid {min(untagged, orphan)}: sleep {301 if untagged < orphan else 302}",
            f"  pid {max(untagged, orphan)}: sleep {302 if untagged < orphan else 301}",
            "*2 passed, 1 error*",
        ]
    )
    assert not psutil.pid_exists(untagged) or psutil.Process(untagged).status() == "zombie"
    assert not psutil.pid_exists(orphan)


def test_a_run_that_stops_what_it_started_passes(pytester: pytest.Pytester) -> None:
    clean = """
import subprocess
from procs import stopped

def test_stops_its_sleeper():
    with stopped(subprocess.Popen(["sleep", "303"], start_new_session=True)) as proc:
        assert proc.poll() is None
"""
    result = _inner_pytest(pytester, clean)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["1 passed*"])


def test_the_run_is_tagged() -> None:
    assert len(os.environ[RUN_TAG]) == 32


MARKS = """
import sys, pytest
class Marks:
    def pytest_collection_finish(self, session):
        for item in session.items:
            print("::".join([item.nodeid, *(m.name for m in item.iter_markers())]))
sys.exit(pytest.main(["--collect-only", "-q", *sys.argv[1:]], plugins=[Marks()]))
"""


def test_folders_give_the_tier_markers_before_m_selects() -> None:
    paths = [
        "tests/real/test_real_server.py",
        "tests/ui/test_ui_jobs_entry.py",
        "tests/test_lang.py",
    ]
    done = subprocess.run(
        [sys.executable, "-c", MARKS, "-m", "not real", *paths],
        capture_output=True,
        text=True,
        cwd=TESTS.parent,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    marks = {}
    for line in done.stdout.splitlines():
        if line.startswith("tests/"):
            path, _, *names = line.split("::")
            marks.setdefault(path, set()).update(n for n in names if n in ("real", "ui"))
    assert marks == {"tests/ui/test_ui_jobs_entry.py": {"ui"}, "tests/test_lang.py": set()}


def test_stop_group_ends_a_group_that_ignores_sigterm() -> None:
    code = "import signal, subprocess, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
    code += "subprocess.Popen(['sleep', '304']); print('up', flush=True); time.sleep(300)"
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "up\n"
    [child] = psutil.Process(proc.pid).children()
    t0 = time.monotonic()
    stop_group(proc, timeout_s=0.5)
    assert proc.returncode == -signal.SIGKILL
    assert 0.5 <= time.monotonic() - t0 < 5
    child.wait(timeout=5)  # the group's SIGKILL reached it; our wait reaps nothing of ours
    assert not child.is_running()


def test_sigint_default_gives_a_child_ctrl_c_back_where_it_was_ignored() -> None:
    code = "import time; print('up', flush=True); time.sleep(30)"
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # like a shell's background job
    try:
        ignored = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        default = subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=sigint_default,
        )
    finally:
        signal.signal(signal.SIGINT, old)
    try:
        for proc in (ignored, default):
            assert proc.stdout is not None and proc.stdout.readline() == "up\n"
            proc.send_signal(signal.SIGINT)
        assert default.wait(timeout=10) == -signal.SIGINT  # KeyboardInterrupt, uncaught
        with pytest.raises(subprocess.TimeoutExpired):
            ignored.wait(timeout=1)
    finally:
        stop_group(ignored)
        stop_group(default)
