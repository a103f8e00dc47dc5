"""A job stopped from the page, or running when the UI ends, leaves no process behind. Ray stops a
job by signalling the entrypoint's process and the children it sees at that moment, and on the
supervisor's exit kills only the supervisor's own children; a shell between them and the CLI
(``/bin/sh -c touchstone-ray …``) left the CLI running, orphaned, whenever the shell forked it
just after that look. The shell now ``exec``s the CLI: the process Ray signals is the run
itself.

The UI ended by SIGTERM while an eval runs on its head: the eval was SIGKILLed by Ray's
watcher 30 s later (the head drained for its 30 s first), its bundle left ``running``, or,
where that watcher did not fire, it ran on orphaned. Now the UI stops its jobs through the Jobs
API before its head, the driver finalizes on that SIGTERM, and nothing of the head's tree
is left when the UI has exited. A UI SIGKILLed left its head and jobs running, with no parent;
the head is now tied to the UI (``PR_SET_PDEATHSIG``) and takes its jobs down with it."""

from __future__ import annotations

import contextlib
import json
import signal
import time
from pathlib import Path

import psutil
import yaml
from test_ui_jobs import FLEET
from test_ui_jobs_run import start
from test_ui_live import PACK
from ui_helpers import ui_server

from touchstone_ray.ui.jobs import Jobs

DONE = ("SUCCEEDED", "FAILED", "STOPPED")


def _runs_of(runs: Path) -> list[psutil.Process]:
    """The processes whose command line names ``runs`` (the job's CLI, and a shell around it)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if str(runs) in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _is_cli(proc: psutil.Process) -> bool:
    """``python …/touchstone-ray eval …``: the console script itself."""
    with contextlib.suppress(psutil.Error):
        return proc.cmdline()[1:3] == [
            str(Path(proc.cmdline()[0]).with_name("touchstone-ray")),
            "eval",
        ]
    return False


def test_a_stopped_job_was_the_cli_itself_and_is_gone(tmp_path: Path) -> None:
    runs, packs = (tmp_path / "runs").resolve(), (tmp_path / "packs").resolve()
    runs.mkdir()
    packs.mkdir()
    (packs / "live.yaml").write_text(yaml.safe_dump(PACK, allow_unicode=True), encoding="utf-8")
    (packs / "fleet.yaml").write_text(yaml.safe_dump(FLEET), encoding="utf-8")
    jobs = Jobs(None, runs, packs)
    try:
        job_id = jobs.submit("eval", {"pack": "live.yaml", "config": "fleet.yaml"})
        deadline = time.monotonic() + 120
        while not (procs := _runs_of(runs)) and time.monotonic() < deadline:
            time.sleep(0.2)
        [cli] = procs
        assert cli.cmdline()[1:3] == [
            str(Path(cli.cmdline()[0]).with_name("touchstone-ray")),
            "eval",
        ]
        # Ray titles the actor's process by the method it runs: "ray::JobSupervisor" idle,
        # "ray::JobSupervisor.run" while the entrypoint runs.
        assert cli.parent().cmdline()[0] in {"ray::JobSupervisor", "ray::JobSupervisor.run"}
        [job] = [j for j in jobs.jobs() if j.job_id == job_id]
        assert job.entrypoint == (
            f"touchstone-ray eval --pack {packs / 'live.yaml'} --config {packs / 'fleet.yaml'} "
            f"--out {runs}"
        )
        assert jobs.stop(job_id) is True
        while jobs.logs(job_id)[0] not in DONE and time.monotonic() < deadline:
            time.sleep(0.2)
        assert jobs.logs(job_id)[0] == "STOPPED"
        _, alive = psutil.wait_procs([cli], timeout=10)
        assert alive == [] and _runs_of(runs) == []
    finally:
        jobs.close()


def _model_started(runs: Path) -> Path:
    """The ``events.jsonl`` of the eval under ``runs`` once it holds a ``model_start``."""
    deadline = time.monotonic() + 240
    events = runs / "missing"
    while '"model_start"' not in (events.read_text() if events.exists() else ""):
        assert time.monotonic() < deadline, "the eval did not start its model"
        events = next(runs.glob("*/events.jsonl"), events)
        time.sleep(0.5)
    return events


SLOW = {**FLEET, "models": [{**FLEET["models"][0], "sim": {"ttft_ms": 2000, "tps": 2}}]}
"""The jobs page's fleet with cells that take minutes."""


def _slow_folders(tmp_path: Path) -> tuple[Path, Path]:
    """``runs/`` and ``packs/`` under ``tmp_path``, the pack and the :data:`SLOW` fleet in it."""
    runs, packs = (tmp_path / "runs").resolve(), (tmp_path / "packs").resolve()
    runs.mkdir()
    packs.mkdir()
    (packs / "live.yaml").write_text(yaml.safe_dump(PACK, allow_unicode=True), encoding="utf-8")
    (packs / "fleet.yaml").write_text(yaml.safe_dump(SLOW), encoding="utf-8")
    return runs, packs


def test_the_ui_ended_by_sigterm_ends_its_jobs_first(tmp_path: Path) -> None:
    runs, packs = _slow_folders(tmp_path)
    with ui_server(runs, packs) as server:
        ui = psutil.Process(server.proc.pid)
        start(server, kind="eval", pack="live.yaml", config="fleet.yaml")
        events = _model_started(runs)
        [cli] = [p for p in _runs_of(runs) if _is_cli(p)]
        tree = ui.children(recursive=True)
        assert cli in tree
        sent = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(timeout=60)
        took = time.monotonic() - sent
        assert server.proc.returncode == 0
        assert [p for p in tree if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []
        assert took < 10.0, took  # SIGTERM ends any touchstone command within 10 s
    manifest = json.loads(next(runs.glob("*/bundle.json")).read_text(encoding="utf-8"))
    last = json.loads(events.read_text(encoding="utf-8").strip().splitlines()[-1])
    assert manifest["status"] == "failed"
    assert (last["event"], last["reason"]) == ("run_aborted", "terminated (SIGTERM)")


def test_a_sigkilled_ui_takes_its_head_and_jobs_with_it(tmp_path: Path) -> None:
    runs, packs = _slow_folders(tmp_path)
    with ui_server(runs, packs) as server:
        ui = psutil.Process(server.proc.pid)
        start(server, kind="eval", pack="live.yaml", config="fleet.yaml")
        _model_started(runs)
        tree = ui.children(recursive=True)
        server.proc.kill()
        server.proc.wait()
        # the head gets SIGTERM with the UI and drains for up to 30 s (Ray's own wait)
        _, alive = psutil.wait_procs(tree, timeout=60)
        assert alive == []
    manifest = json.loads(next(runs.glob("*/bundle.json")).read_text(encoding="utf-8"))
    assert manifest["status"] == "failed"  # the driver finalized: node lost, then run_done
