"""A command ends in time when it must (:mod:`touchstone_ray.fleet.lifeline`): an eval or a
perf run joined to a Ray head whose processes are SIGKILLed exits with one line within 30 s,
and SIGTERM ends one stuck on that gone cluster within 10 s; both finalize what they wrote.
Real ``ray start`` heads, real ``touchstone-ray`` subprocesses, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from procs import stopped

from touchstone_ray.fleet.lifeline import END_S, GONE_AFTER_S, Steps
from touchstone_ray.fleet.local_head import LocalCluster

REPO = Path(__file__).resolve().parents[2]
SLOW_FLEET: dict[str, Any] = {
    "ray": {"include_dashboard": False},
    "models": [
        {
            "id": "sim-slow",
            "engine": "simulated",
            "concurrency": 1,
            "sim": {"ttft_ms": 2000, "tps": 2, "answer_tokens": 200},
        }
    ],
    "scheduling": {"warmup": False},
    "monitor": {"interval_s": 0.5},
}
"""A fleet whose cells take minutes: the eval is mid-run whenever the test acts."""


def test_steps_run_once_each_whoever_runs_them() -> None:
    seen: list[str] = []

    def boom(reason: str) -> None:
        seen.append(f"boom:{reason}")
        raise OSError("disk gone")

    steps = Steps([lambda r: seen.append(f"a:{r}"), boom, lambda r: seen.append(f"c:{r}")])
    first = steps.take()
    assert first is not None
    first("main")
    steps.run("lifeline")
    steps.run("again")
    assert seen == ["a:main", "boom:lifeline", "c:lifeline"]
    assert steps.take() is None


def test_an_exit_raised_inside_a_step_runs_the_rest_then_goes_on() -> None:
    seen: list[str] = []

    def exits(reason: str) -> None:  # Ray's SIGTERM handler, under a step blocked in Ray
        seen.append(f"stop:{reason}")
        raise SystemExit(1)

    steps = Steps([exits, lambda r: seen.append(f"status:{r}"), lambda r: seen.append(f"fin:{r}")])
    with pytest.raises(SystemExit) as raised:
        steps.run("gone")
    assert raised.value.code == 1
    assert seen == ["stop:gone", "status:gone", "fin:gone"]
    assert steps.take() is None


STUCK_IN_A_STEP = """
import sys, threading
from pathlib import Path
from touchstone_ray.fleet import lifeline
from touchstone_ray.fleet.abort import abort_guard

log = Path(sys.argv[1])
def note(what):
    with log.open("a") as fh:
        fh.write(what + "\\n")
lifeline.install()
stuck = threading.Event()
steps = [lambda r: note("status " + r), lambda r: stuck.wait(), lambda r: note("aborted")]
with abort_guard(log.parent, "run", steps, "resume"):
    note("running")
    threading.Event().wait()
"""
"""A run whose second finalize step never returns (a call into a Ray that is gone)."""


def test_the_lifeline_runs_the_steps_after_one_stuck_in_the_main_threads_abort(
    tmp_path: Path,
) -> None:
    log = tmp_path / "steps.log"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.Popen([sys.executable, "-c", STUCK_IN_A_STEP, str(log)], env=env)
    with stopped(run):
        deadline = time.monotonic() + 30
        while not log.exists():
            assert time.monotonic() < deadline, "the script did not start"
            time.sleep(0.05)
        sent = time.monotonic()
        run.send_signal(signal.SIGTERM)
        _ended_within(run, END_S + 2.0, sent)
    assert run.returncode == signal.SIGTERM
    assert log.read_text().splitlines() == ["running", "status terminated (SIGTERM)", "aborted"]


COMMANDS = {
    "eval": ["eval", "--pack", "{tmp}/pack.yaml", "--config", "{tmp}/fleet.yaml"],
    "perf": ["perf", "--config", "{tmp}/fleet.yaml"],
}
"""The commands run mid-way when their cluster goes (``{tmp}``: the test's folder)."""


@pytest.fixture(params=sorted(COMMANDS))
def run_on_head(
    request: pytest.FixtureRequest, tmp_path: Path, pack_data: dict[str, Any]
) -> Iterator[tuple[LocalCluster, subprocess.Popen[str], Path]]:
    """A ``ray start`` head and an eval or perf run joined to it (``--address``), once its
    first model has started: ``(head, the run's process, runs folder)``."""
    runs = tmp_path / "runs"
    (tmp_path / "pack.yaml").write_text(yaml.safe_dump(pack_data, allow_unicode=True))
    (tmp_path / "fleet.yaml").write_text(yaml.safe_dump(SLOW_FLEET))
    head = LocalCluster()
    try:
        cmd = [sys.executable, "-m", "touchstone_ray.cli"]
        cmd += [a.format(tmp=tmp_path) for a in COMMANDS[request.param]]
        cmd += ["--out", str(runs), "--address", head.address]
        env = {**head.client_env(), "PYTHONPATH": str(REPO)}
        run = subprocess.Popen(
            cmd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        with stopped(run):
            deadline = time.monotonic() + 240
            while '"model_start"' not in _events(runs) and run.poll() is None:
                assert time.monotonic() < deadline, "the run did not start its model"
                time.sleep(0.5)
            assert run.poll() is None, run.communicate()
            yield head, run, runs
    finally:
        head.stop()


def _events(runs: Path) -> str:
    found = list(runs.glob("*/events.jsonl"))
    return found[0].read_text(encoding="utf-8") if found else ""


def _kill_head(head: LocalCluster) -> None:
    """SIGKILL the head and every process of its cluster: the GCS is gone at once."""
    top = psutil.Process(head.proc.pid)
    tree = [*top.children(recursive=True), top]
    for proc in tree:
        proc.kill()
    psutil.wait_procs(tree, timeout=10)
    head.proc.wait()


def _ended_within(run: subprocess.Popen[str], limit_s: float, since: float) -> float:
    try:
        run.wait(timeout=max(0.0, since + limit_s - time.monotonic()))
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {limit_s:g} s later")
    return time.monotonic() - since


def _finalized(runs: Path) -> tuple[str, dict[str, Any]]:
    """The bundle's manifest status and its last event."""
    [manifest] = runs.glob("*/bundle.json")
    last = json.loads(_events(runs).strip().splitlines()[-1])
    return json.loads(manifest.read_text(encoding="utf-8"))["status"], last


@pytest.mark.slow
def test_a_command_whose_cluster_is_gone_exits_with_one_line(
    run_on_head: tuple[LocalCluster, subprocess.Popen[str], Path],
) -> None:
    head, run, runs = run_on_head
    _kill_head(head)
    took = _ended_within(run, 30.0, time.monotonic())
    assert took >= GONE_AFTER_S
    _, err = run.communicate()
    [line] = err.splitlines()
    host = line.removeprefix("error: Ray cluster at ").split(":")[0]
    reason = f"Ray cluster at {host}:{head.gcs_port} is gone (no answer for 10 s)"
    assert err == f"error: {reason}\n"
    assert run.returncode == 1
    status, last = _finalized(runs)
    assert status == "failed"
    assert (last["event"], last.get("reason")) == ("run_aborted", reason), _events(runs)


@pytest.mark.slow
def test_sigterm_ends_a_command_stuck_on_a_gone_cluster_within_10_s(
    run_on_head: tuple[LocalCluster, subprocess.Popen[str], Path],
) -> None:
    head, run, runs = run_on_head
    _kill_head(head)
    time.sleep(2.0)  # the driver is inside a call to the GCS that is gone
    sent = time.monotonic()
    os.kill(run.pid, signal.SIGTERM)
    _ended_within(run, 10.0, sent)
    _, err = run.communicate()
    assert (run.returncode, err) == (signal.SIGTERM, "")
    status, last = _finalized(runs)
    assert status == "failed"
    aborted = ("run_aborted", "terminated (SIGTERM)")
    assert (last["event"], last.get("reason")) == aborted, _events(runs)
