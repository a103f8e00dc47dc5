"""Host agents on a real standing cluster: ``cluster/start-head.sh`` (a ``ray start --head``
process labelled ``head``, token auth, its own temp folder), ``touchstone-ray`` commands as
subprocesses, the simulator inside the host's client.

- ``agents up`` puts one agent on the node; two evals reuse it (same actor, same pid) and
  record it in ``bundle.json``;
- ``tools`` and ``perf`` lease the same agent as ``eval`` (same pid, recorded in their
  ``bundle.json``);
- a second measuring run is told, in one line, which run holds the agent;
- a driver SIGKILLed mid-run leaves the agent serving no run: the next run attaches within its
  first second and records whose lease it took over;
- the agent's process SIGKILLed mid-run (an eval, a tools run): the host's pending cells are
  recorded ``node_lost``, ``--resume`` starts a new agent and completes;
- an agent of another code version is replaced, with one line;
- ``agents down`` leaves no actor in the ``touchstone`` namespace, and runs go back to actors
  of their own.

Teardown kills exactly the process groups the start script ran in, never ``ray stop``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from fleet_helpers import REPO, Fleet, fleet_env, shard_records, start_head, tiny_pack, write_yaml

from touchstone_ray.fleet.agent_actor import code_version

pytestmark = pytest.mark.slow

HOST = "head"
N_CELLS = 6  # tiny_pack(): 3 prompts × 2 variants
FAST = {"ttft_ms": 5, "tps": 2000, "answer_tokens": 20}
SLOW = {"ttft_ms": 5, "tps": 20, "answer_tokens": 40}
"""About 2 s a cell: a run that is still going when a test kills something."""
HOLD = {"ttft_ms": 5, "tps": 5, "answer_tokens": 200}
"""About 40 s a cell: a run that holds its agent for the whole test."""


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    with fleet_env() as handle:
        start_head(handle, host=HOST)
        handle.wait_for_nodes(1)
        yield handle


def _config(fleet: Fleet, name: str, sim: dict[str, Any]) -> Path:
    return write_yaml(
        fleet.tmp / f"{name}.yaml",
        {
            "ray": {"include_dashboard": False},
            "hosts": {HOST: {"label": HOST}},
            "models": [
                {"id": name, "engine": "simulated", "host": HOST, "concurrency": 1, "sim": sim}
            ],
            "scheduling": {"warmup": False, "max_attempts": 1},
            "monitor": {"interval_s": 0.5, "gpu": "off"},
        },
    )


def _pack(fleet: Fleet) -> Path:
    return write_yaml(fleet.tmp / "pack.yaml", tiny_pack("agents"))


def _eval_args(fleet: Fleet, config: Path, *more: str) -> list[str]:
    return [
        "eval", "--pack", str(_pack(fleet)), "--config", str(config),
        "--address", fleet.address, "--out", str(fleet.tmp / "runs"), *more,
    ]  # fmt: skip


def _eval(fleet: Fleet, name: str, sim: dict[str, Any] = FAST) -> subprocess.CompletedProcess[str]:
    return fleet.cli(*_eval_args(fleet, _config(fleet, name, sim)), timeout=180)


def _bundle(done: subprocess.CompletedProcess[str]) -> Path:
    return Path(done.stdout.strip().splitlines()[-1])


def _manifest(bundle: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((bundle / "bundle.json").read_text())
    return data


def _events(bundle: Path) -> list[dict[str, Any]]:
    path = bundle / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.endswith("}")]


def _first(bundle: Path, name: str) -> float:
    return float(next(e["ts"] for e in _events(bundle) if e["event"] == name))


def _monitor_pid(bundle: Path) -> int:
    pid: int = _manifest(bundle)["hosts"][HOST]["touchstone_footprint"]["monitor_pid"]
    return pid


def _spawn(fleet: Fleet, args: list[str]) -> subprocess.Popen[str]:
    """A driver (``touchstone-ray ARGS``) as a child process of its own, for the test to kill."""
    return subprocess.Popen(
        [sys.executable, "-m", "touchstone_ray.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=fleet.env,
        cwd=REPO,
    )


def _wait_for_bundle(fleet: Fleet, name: str, cells: int, kind: str = "eval") -> Path:
    """The running ``kind`` bundle of model ``name`` once its agent is attached and ``cells``
    of its records are written (90 s at most)."""
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        for bundle in sorted((fleet.tmp / "runs").glob(f"*_{kind}_agents*")):
            try:
                manifest = _manifest(bundle)
                if [m["model"] for m in manifest["models"]] != [name] or "agents" not in manifest:
                    continue
                written = len(shard_records(bundle, KINDS[kind].shards))
            except (OSError, ValueError, KeyError):  # still being written
                continue
            if written >= cells:
                return bundle
        time.sleep(0.2)
    raise AssertionError(f"no {kind} bundle of {name} with {cells} records within 90 s")


def _status(fleet: Fleet) -> list[str]:
    done = fleet.cli("agents", "status", "--address", fleet.address)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip().splitlines()


def _touchstone_actors(fleet: Fleet) -> list[str]:
    """Live actors of the ``touchstone`` namespace, by name (a driver of its own)."""
    code = (
        "import json, ray\n"
        f"ray.init(address={fleet.address!r}, logging_level='ERROR', log_to_driver=False)\n"
        "from ray.util import list_named_actors\n"
        "names = [a['name'] for a in list_named_actors(all_namespaces=True)"
        " if a['namespace'] == 'touchstone']\n"
        "print(json.dumps(names))\n"
    )
    names: list[str] = fleet.python(code)
    return names


@pytest.fixture(scope="module")
def up(fleet: Fleet) -> list[str]:
    done = fleet.cli("agents", "up", "--address", fleet.address, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip().splitlines()


def test_agents_up_then_two_runs_reuse_the_same_agent(fleet: Fleet, up: list[str]) -> None:
    assert len(up) == 1
    assert up[0].startswith(f"agent up: {HOST}: node ")
    assert re.search(rf"pid \d+, {re.escape(code_version())}, up \d+ s, serves no run$", up[0])
    first, second = _eval(fleet, "r1"), _eval(fleet, "r2")
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    a, b = (_manifest(_bundle(d))["agents"][HOST] for d in (first, second))
    assert a["reused"] is True and b["reused"] is True
    assert a["name"] == b["name"] and a["name"].startswith("agent:")
    assert a["pid"] == b["pid"]
    assert a["version"] == b["version"] == code_version()
    assert a["replaced"] is None and a["taken_from"] is None
    monitors = [_monitor_pid(_bundle(d)) for d in (first, second)]
    assert monitors[0] == monitors[1]  # the agent's monitor, kept between runs
    for done in (first, second):
        records = shard_records(_bundle(done))
        assert len(records) == N_CELLS and all(r["ok"] for r in records)
    status = _status(fleet)
    assert status[0] == "agents: on (1 running)"
    assert status[1].startswith(f"{HOST}: node ") and status[1].endswith("serves no run")
    assert f"pid {a['pid']}, {code_version()}" in status[1]


SHIPPED_TOOLS = yaml.safe_load((REPO / "packs" / "werkzeuge.yaml").read_text("utf-8"))["tools"]
TOOLS_PACK: dict[str, Any] = {
    "kind": "tools",
    "id": "agents",
    "title": "Agents",
    "language": "de",
    "tools": [t for t in SHIPPED_TOOLS if t["name"] == "read"],
    "world": {"files": {"a.txt": "eins"}},
    "items": [
        {
            "id": "lesen",
            "prompt": "Lies a.txt.",
            "tools": ["read"],
            "repeats": 2,
            "checks": [{"id": "ruft", "type": "calls", "expect": ["read"], "turn": 1}],
        }
    ],
}
CALLER = {"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]}


def _tools_args(fleet: Fleet, config: Path, *more: str) -> list[str]:
    pack = write_yaml(fleet.tmp / "tools.yaml", TOOLS_PACK)
    return [
        "tools", "--pack", str(pack), "--config", str(config), "--address", fleet.address,
        "--out", str(fleet.tmp / "runs"), *more,
    ]  # fmt: skip


@dataclass(frozen=True)
class Kind:
    """What differs between an eval and a tools run in these tests."""

    args: Callable[..., list[str]]
    """``(fleet, config, *more)`` → the command's arguments."""
    shards: str
    """The bundle's folder of record shards."""
    cells: int
    """Cells of one run: the tiny eval pack, or the tools pack's one item twice."""
    sim: dict[str, Any]
    """Simulator settings added to the model's."""


KINDS = {
    "eval": Kind(_eval_args, "responses", N_CELLS, {}),
    "tools": Kind(_tools_args, "cells", 2, CALLER),
}


def _agent_pid(fleet: Fleet) -> int:
    match = re.search(r"pid (\d+),", _status(fleet)[1])
    assert match, _status(fleet)
    return int(match.group(1))


def test_tools_and_perf_lease_the_same_agent(fleet: Fleet, up: list[str]) -> None:
    pid = _agent_pid(fleet)
    tools = fleet.cli(*_tools_args(fleet, _config(fleet, "caller", FAST | CALLER)), timeout=180)
    assert tools.returncode == 0, tools.stderr
    records = shard_records(_bundle(tools), "cells")
    assert len(records) == 2 and all(r["passed"] for r in records), records
    perf = fleet.cli(
        "perf", "--config", str(_config(fleet, "speed", FAST)), "--address", fleet.address,
        "--out", str(fleet.tmp / "runs"), "--contexts", "256", "--concurrency", "1",
        "--runs", "2", timeout=180,
    )  # fmt: skip
    assert perf.returncode == 0, perf.stderr
    for done in (tools, perf):
        agent = _manifest(_bundle(done))["agents"][HOST]
        assert agent["reused"] is True and agent["pid"] == pid
        assert agent["version"] == code_version()
    assert _status(fleet)[1].endswith("serves no run")


def test_a_second_run_is_told_which_run_holds_the_agent(fleet: Fleet, up: list[str]) -> None:
    holder = _spawn(fleet, _eval_args(fleet, _config(fleet, "hold", HOLD)))
    try:
        bundle = _wait_for_bundle(fleet, "hold", 0)
        assert any(f"serves run {bundle.name}" in x for x in _status(fleet))
        second = _eval(fleet, "second")
        assert second.returncode == 1
        errors = [x for x in second.stderr.splitlines() if x.startswith("error:")]
        assert errors == [
            f"error: host {HOST}: its agent (node {errors[0].split('node ')[1][:8]}) serves run "
            f"{bundle.name}; an agent serves one measuring run at a time: wait for that run, "
            "or stop it"
        ]
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_a_sigkilled_driver_leaves_the_agent_free(fleet: Fleet, up: list[str]) -> None:
    driver = _spawn(fleet, _eval_args(fleet, _config(fleet, "killed", SLOW)))
    bundle = _wait_for_bundle(fleet, "killed", 1)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait(timeout=30)
    nxt = _eval(fleet, "next")
    assert nxt.returncode == 0, nxt.stderr
    after = _bundle(nxt)
    agent = _manifest(after)["agents"][HOST]
    assert agent["taken_from"] == bundle.name
    assert agent["reused"] is True
    assert _first(after, "agents") - _first(after, "run_start") < 1.0
    assert _status(fleet)[1].endswith("serves no run")


@pytest.mark.parametrize("kind", ["eval", "tools"])
def test_a_sigkilled_agent_loses_the_pending_cells_and_resume_completes(
    fleet: Fleet, up: list[str], kind: str
) -> None:
    name, run = f"lost-{kind}", KINDS[kind]
    config = _config(fleet, name, SLOW | run.sim)
    driver = _spawn(fleet, run.args(fleet, config))
    bundle = _wait_for_bundle(fleet, name, 1, kind)
    old = _manifest(bundle)["agents"][HOST]
    os.kill(old["pid"], signal.SIGKILL)
    out, err = driver.communicate(timeout=120)
    assert driver.returncode == 1, out + err
    records = shard_records(bundle, run.shards)
    ok = [r for r in records if r["ok"]]
    lost = [r for r in records if r["error_kind"] == "node_lost"]
    assert len(ok) >= 1 and len(lost) >= 1 and len(ok) + len(lost) == run.cells, records
    resumed = fleet.cli(*run.args(fleet, config, "--resume", str(bundle)), timeout=180)
    assert resumed.returncode == 0, resumed.stderr
    new = _manifest(bundle)["agents"][HOST]
    assert new["reused"] is False and new["pid"] != old["pid"]
    assert new["name"] == old["name"]
    keys = {r["key"] for r in shard_records(bundle, run.shards) if r["ok"]}
    assert len(keys) == run.cells


def test_a_stale_agent_is_replaced_with_one_line(fleet: Fleet, up: list[str]) -> None:
    code = (
        "import json, ray\n"
        f"ray.init(address={fleet.address!r}, logging_level='ERROR', log_to_driver=False)\n"
        "from touchstone_ray.fleet.agents import find_agent, kill_agent, start_agent\n"
        "node = ray.get_runtime_context().get_node_id()\n"
        "kill_agent(find_agent(node))\n"
        f"agent = start_agent(node, {HOST!r}, version='0.0.0+stale')\n"
        "print(json.dumps(ray.get(agent.info.remote())['version']))\n"
    )
    assert fleet.python(code) == "0.0.0+stale"
    done = _eval(fleet, "fresh")
    assert done.returncode == 0, done.stderr
    said = [x for x in done.stderr.splitlines() if "replaced" in x]
    assert len(said) == 1, done.stderr
    assert said[0].startswith(f"agent of host {HOST} (node ")
    assert "other code version (it runs 0.0.0+stale" in said[0]
    assert f"this driver {code_version()}" in said[0] and said[0].endswith("; replaced")
    agent = _manifest(_bundle(done))["agents"][HOST]
    assert agent["replaced"] == said[0]
    assert agent["version"] == code_version() and agent["reused"] is False


def test_agents_down_leaves_no_touchstone_actor(fleet: Fleet, up: list[str]) -> None:
    assert len(_touchstone_actors(fleet)) == 1
    monitor = _monitor_pid(_bundle(_eval(fleet, "last")))
    assert psutil.pid_exists(monitor)
    done = fleet.cli("agents", "down", "--address", fleet.address)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "agents down: 1 ended, none left"
    assert _touchstone_actors(fleet) == []
    deadline = time.monotonic() + 15
    while psutil.pid_exists(monitor) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not psutil.pid_exists(monitor)  # the agent's monitor went with it
    assert _status(fleet) == ["agents: off (0 running)"]
    after = _eval(fleet, "plain")
    assert after.returncode == 0, after.stderr
    assert "agents" not in _manifest(_bundle(after))
    assert _touchstone_actors(fleet) == []
