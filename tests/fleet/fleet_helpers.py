"""Helpers for the fleet tests: real ``ray start`` nodes started through ``cluster/*.sh``.

Every node is a ``cluster/start-head.sh`` or ``cluster/start-worker.sh`` subprocess started in
its own session, so the Ray daemons it leaves behind share one process group, and teardown
kills exactly those groups (never ``ray stop``, which would kill other people's clusters on
this machine). ``HOME`` (the auth token) and ``RAY_TMPDIR`` (sessions) live in a short temp
folder; every port is picked free and passed explicitly, so parallel clusters do not collide.
The test process itself never calls ``ray.init``: drivers, queries and job submissions run
as subprocesses with the fleet's environment.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import yaml

REPO = Path(__file__).resolve().parents[2]
START_HEAD = REPO / "cluster" / "start-head.sh"
START_WORKER = REPO / "cluster" / "start-worker.sh"
NODE_START_TIMEOUT_S = 90.0


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports free right now (held open together, then released)."""
    socks = []
    try:
        for _ in range(n):
            sock = socket.socket()
            sock.bind(("", 0))
            socks.append(sock)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for sock in socks:
            sock.close()


def write_yaml(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def tiny_pack(pack_id: str = "fleet", n_prompts: int = 3) -> dict[str, Any]:
    """A valid pack: ``n_prompts`` prompts (repeats 1), 2 variants."""
    return {
        "id": pack_id,
        "title": "Fleet",
        "scale": {1: "eins", 2: "zwei", 3: "drei", 4: "vier", 5: "fünf"},
        "dimensions": [
            {"id": "Q1", "name": "Korrektheit", "weight": 3},
            {"id": "Q6", "name": "Sicherheit", "weight": 3},
        ],
        "ko_rule": {"dimension": "Q6", "red_flag_prompts": ["E1"]},
        "prompt_variants": [{"id": "baseline", "system_prompt": "Sei hilfreich."}, {"id": "none"}],
        "categories": [
            {
                "id": "A",
                "name": "Alpha",
                "prompts": [
                    {"id": f"A{i}", "title": "t", "prompt": f"Frage {i}: was ist zu tun?"}
                    for i in range(1, n_prompts)
                ],
            },
            {
                "id": "E",
                "name": "Querschnitt",
                "prompts": [
                    {"id": "E1", "title": "t", "prompt": "Notfall!", "safety_critical": True}
                ],
            },
        ],
    }


@dataclass
class Node:
    """One started node: its process group and the ports it was given."""

    host: str
    pgid: int
    output: str
    metrics_port: int
    returncode: int | None = None


@dataclass
class Fleet:
    """A head (+ workers) on this machine, all in ``tmp``."""

    tmp: Path
    env: dict[str, str]
    gcs_port: int
    dashboard_port: int
    nodes: list[Node] = field(default_factory=list)
    nodes_seen: list[dict[str, Any]] = field(default_factory=list)
    """``ray.nodes()`` as last polled by :meth:`wait_for_nodes`."""

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gcs_port}"

    @property
    def dashboard_url(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def run(
        self, args: list[str], timeout: float = 120, cwd: Path = REPO
    ) -> subprocess.CompletedProcess[str]:
        """A subprocess with the fleet's environment (token, temp dirs)."""
        return subprocess.run(
            args, capture_output=True, text=True, timeout=timeout, env=self.env, cwd=cwd
        )

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``touchstone-ray ARGS`` (as ``python -m touchstone_ray.cli``)."""
        return self.run([sys.executable, "-m", "touchstone_ray.cli", *args], timeout=timeout)

    def python(self, code: str, timeout: float = 60) -> Any:
        """Run ``code`` (which prints one JSON value last) in a driver subprocess."""
        done = self.run([sys.executable, "-c", code], timeout=timeout)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    def ray_nodes(self) -> list[dict[str, Any]]:
        """``ray.nodes()`` of the cluster (alive ones), trimmed to what tests use."""
        code = (
            "import json, ray\n"
            f"ray.init(address={self.address!r}, logging_level='ERROR', log_to_driver=False)\n"
            "keys = ('NodeID', 'Alive', 'Labels', 'MetricsExportPort', 'NodeManagerAddress')\n"
            "print(json.dumps([{k: n.get(k) for k in keys} for n in ray.nodes()"
            " if n.get('Alive')]))\n"
        )
        nodes: list[dict[str, Any]] = self.python(code)
        return nodes

    def start(self, script: Path, *args: str, host: str, attempts: int = 2) -> Node:
        """Run a start script in its own session; raise (after cleaning up) if it fails.

        A failed start (on a loaded machine a raylet can miss Ray's fixed 30 s registration
        window) has its process group killed and is tried once more with fresh ports.
        """
        for attempt in range(1, attempts + 1):
            node = self._start_once(script, *args, host=host)
            if node.returncode == 0:
                return node
            kill_groups([node.pgid])
            if attempt == attempts:
                raise RuntimeError(
                    f"{script.name} {host} failed ({node.returncode}):\n{node.output}\n"
                    + self.log_tails()
                )
        raise AssertionError("unreachable")

    def _start_once(self, script: Path, *args: str, host: str) -> Node:
        metrics, agent_http, agent_grpc, runtime_env = free_ports(4)
        ray_args = [
            "--num-cpus",
            "1",
            "--metrics-export-port",
            str(metrics),
            "--dashboard-agent-listen-port",
            str(agent_http),
            "--dashboard-agent-grpc-port",
            str(agent_grpc),
            "--runtime-env-agent-port",
            str(runtime_env),
        ]
        if script == START_HEAD:
            ray_args += ["--ray-client-server-port", str(free_ports(1)[0])]
        else:
            # Its own temp dir, as on a separate machine: nodes sharing one session folder
            # unpack a job's working_dir into the same path, racing each other's imports.
            ray_args += ["--temp-dir", str(self.tmp / f"ray-{host}")]
        proc = subprocess.Popen(
            ["bash", str(script), *args, "--", *ray_args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.env,
            start_new_session=True,  # its Ray daemons stay in this process group
        )
        node = Node(host=host, pgid=proc.pid, output="", metrics_port=metrics)
        self.nodes.append(node)  # registered first: teardown kills it even if start fails
        try:
            node.output, _ = proc.communicate(timeout=NODE_START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            node.output, _ = proc.communicate()
        node.returncode = proc.returncode
        return node

    def log_tails(self, lines: int = 15) -> str:
        """The last lines of the session's raylet and GCS logs (for a failed start)."""
        out = []
        for log in sorted(self.tmp.glob("ray*/**/session_latest/logs/*.out")):
            if log.name.startswith(("raylet", "gcs_server")):
                tail = log.read_text("utf-8", "replace").splitlines()[-lines:]
                out.append(f"--- {log.name}\n" + "\n".join(tail))
        return "\n".join(out)

    def wait_for_nodes(self, n: int, deadline_s: float = 60) -> list[dict[str, Any]]:
        """Poll until ``n`` nodes are alive; return them."""
        deadline = time.monotonic() + deadline_s
        while True:
            nodes = self.ray_nodes()
            if len(nodes) >= n or time.monotonic() > deadline:
                assert len(nodes) >= n, f"only {len(nodes)} of {n} nodes alive: {nodes}"
                return nodes
            time.sleep(1)


def kill_groups(pgids: list[int], grace_s: float = 4.0) -> None:
    """SIGTERM each process group, wait up to ``grace_s`` for them to go, then SIGKILL."""

    def members(pgid: int) -> list[int]:
        out = []
        for proc in psutil.process_iter(["pid"]):
            with contextlib.suppress(psutil.Error, OSError):
                if os.getpgid(proc.info["pid"]) == pgid:
                    out.append(proc.info["pid"])
        return out

    alive = [g for g in pgids if members(g)]
    for pgid in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while alive and time.monotonic() < deadline:
        time.sleep(0.3)
        alive = [g for g in alive if members(g)]
    for pgid in alive:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


@contextlib.contextmanager
def fleet_env() -> Iterator[Fleet]:
    """A short temp folder with ``HOME`` and ``RAY_TMPDIR``; every node started in it is
    killed (by process group) and the folder removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="tsf", dir="/tmp"))  # short: unix socket path limit
    (tmp / "home").mkdir()
    (tmp / "ray").mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RAY_", "PYTEST_")) and k != "COV_CORE_SOURCE"
    }
    env.update(
        HOME=str(tmp / "home"),
        RAY_TMPDIR=str(tmp / "ray"),
        RAY_AUTH_MODE="token",
        RAY_USAGE_STATS_ENABLED="0",
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    )
    gcs_port, dashboard_port = free_ports(2)
    fleet = Fleet(tmp=tmp, env=env, gcs_port=gcs_port, dashboard_port=dashboard_port)
    try:
        yield fleet
    finally:
        kill_groups([n.pgid for n in fleet.nodes])
        shutil.rmtree(tmp, ignore_errors=True)


def start_head(fleet: Fleet, *, dashboard_host: str | None = None, host: str = "head") -> Node:
    args = [host, "--port", str(fleet.gcs_port), "--dashboard-port", str(fleet.dashboard_port)]
    if dashboard_host is not None:
        args += ["--dashboard-host", dashboard_host]
    return fleet.start(START_HEAD, *args, host=host)


def start_worker(fleet: Fleet, host: str) -> Node:
    return fleet.start(START_WORKER, host, "--address", fleet.address, host=host)


_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def scrape(port: int, name: str) -> list[tuple[dict[str, str], float]]:
    """Samples of metric ``name`` on ``127.0.0.1:port/metrics`` (Prometheus text)."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    out = []
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match and match["name"] == name:
            labels = dict(_LABEL.findall(match["labels"] or ""))
            out.append((labels, float(match["value"])))
    return out


def metric_names(port: int) -> set[str]:
    """Every metric family name on a node's metrics port."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return {m["name"] for line in text.splitlines() if (m := _SAMPLE.match(line))}


def shard_records(bundle: Path, folder: str = "responses") -> list[dict[str, Any]]:
    """Every record of the bundle's shards in ``folder`` (an eval's ``responses/``, a tools
    run's ``cells/``), in shard order."""
    out: list[dict[str, Any]] = []
    for shard in sorted((bundle / folder).glob("*.jsonl")):
        out.extend(json.loads(x) for x in shard.read_text("utf-8").splitlines() if x.strip())
    return out
