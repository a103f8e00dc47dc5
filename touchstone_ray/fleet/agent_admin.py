"""``touchstone-ray agents up|status|down``: the standing host agents of a cluster
(:mod:`touchstone_ray.fleet.agents`), managed from any driver that joins it.

- ``up``: agents on for the cluster; every live node gets an agent at this driver's code
  version (a stale one is replaced, one line each);
- ``status``: on or off, and per agent its host, node, pid, version, uptime and the run it
  serves;
- ``down``: agents off; every agent's run client closed and the agent killed: no touchstone
  actor is left on the cluster.

Agents need a cluster that stays up: without ``--address`` (or ``RAY_ADDRESS``) the command
exits 2 with one line.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO

from touchstone_ray.errors import RunError, UsageError, one_line
from touchstone_ray.fleet.agent_actor import AGENT_PREFIX, NAMESPACE, code_version, settings_hash
from touchstone_ray.fleet.agents import (
    agents_on,
    find_agent,
    gather,
    kill_agent,
    replaced_line,
    set_agents_on,
    start_agent,
)

__all__ = ["agents_down", "agents_status", "agents_up", "format_status", "run_agents"]

ACTIONS = ("up", "status", "down")
"""The subcommands of ``touchstone-ray agents``."""
NAME_FREE_TIMEOUT_S = 15.0
"""How long ``down`` waits for the killed agents' names to leave the cluster (s)."""
START_TIMEOUT_S = 120.0
"""How long ``up`` waits for new agents to answer (s): a node may be starting workers."""


def _node_host(node: Mapping[str, Any]) -> str:
    from touchstone_ray.fleet.hosts import HOST_LABEL

    labels = node.get("Labels") or {}
    return str(labels.get(HOST_LABEL) or node.get("NodeManagerHostname") or node["NodeID"][:8])


def agents_up(err: TextIO | None = None) -> list[dict[str, Any]]:
    """Turn agents on for the connected cluster (:data:`ON_KEY`) and make sure every live
    node has one at this driver's version: a missing one is started, a stale one replaced
    (one line on ``err``); each is warmed (``HostAgent.warm``: the client's imports, its
    monitor actor). Returns each agent's facts (``HostAgent.info``), by host name. Raises
    :class:`RunError` for an agent that does not answer."""
    import ray

    err = err or sys.stderr
    set_agents_on(True)
    version, settings = code_version(), settings_hash()
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    agents = {n["NodeID"]: find_agent(n["NodeID"]) for n in nodes}
    hosts = {n["NodeID"]: _node_host(n) for n in nodes}
    found = gather({nid: a.info.remote() for nid, a in agents.items() if a is not None})
    for node_id, facts in found.items():
        if isinstance(facts, BaseException):
            kill_agent(agents[node_id])
            agents[node_id] = None
        elif facts["version"] != version or facts["settings_hash"] != settings:
            why = "other code version" if facts["version"] != version else "other settings"
            print(replaced_line(hosts[node_id], node_id, facts, why), file=err, flush=True)
            kill_agent(agents[node_id])
            agents[node_id] = None
    for node_id, agent in list(agents.items()):
        if agent is None:
            agents[node_id] = start_agent(node_id, hosts[node_id])
    warmed = gather({nid: a.warm.remote() for nid, a in agents.items()}, START_TIMEOUT_S)
    facts = gather({nid: a.info.remote() for nid, a in agents.items()}, START_TIMEOUT_S)
    for node_id, value in warmed.items():
        if isinstance(value, Exception):
            facts[node_id] = value
    bad = [f"{hosts[n]}: {one_line(str(v))}" for n, v in facts.items() if isinstance(v, Exception)]
    if bad:
        raise RunError(f"agents did not start: {'; '.join(bad)}")
    return sorted(facts.values(), key=lambda f: str(f["host"]))


def _listed() -> list[str]:
    """Names of the live actors in :data:`NAMESPACE` (from the GCS)."""
    from ray.util import list_named_actors

    return sorted(
        a["name"]
        for a in list_named_actors(all_namespaces=True)
        if a.get("namespace") == NAMESPACE and str(a["name"]).startswith(AGENT_PREFIX)
    )


def agents_status() -> dict[str, Any]:
    """``{"on": bool, "agents": [facts]}``: whether runs use agents, and each agent's
    :meth:`HostAgent.info` (``{"name", "error"}`` for one that does not answer)."""
    import ray

    handles = {name: ray.get_actor(name, namespace=NAMESPACE) for name in _listed()}
    facts = gather({name: a.info.remote() for name, a in handles.items()})
    rows = [
        {"name": name, "error": one_line(str(v))} if isinstance(v, BaseException) else v
        for name, v in facts.items()
    ]
    return {"on": agents_on(), "agents": rows}


def agents_down() -> list[str]:
    """Turn agents off for the connected cluster and end every agent: its run's client closed
    (at most :data:`CALL_TIMEOUT_S`), then the actor killed. Returns the names ended; when it
    returns, none is left in :data:`NAMESPACE`."""
    import ray

    set_agents_on(False)
    names = _listed()
    handles = {name: ray.get_actor(name, namespace=NAMESPACE) for name in names}
    gather({name: a.shutdown.remote() for name, a in handles.items()})
    for agent in handles.values():
        kill_agent(agent)
    deadline = time.monotonic() + NAME_FREE_TIMEOUT_S
    while _listed() and time.monotonic() < deadline:
        time.sleep(0.05)
    return names


def format_status(status: Mapping[str, Any], now: float | None = None) -> list[str]:
    """``agents status`` as lines: whether runs use agents, then one line per agent: host,
    node, version, uptime, the run it serves."""
    now = time.time() if now is None else now
    lines = [f"agents: {'on' if status['on'] else 'off'} ({len(status['agents'])} running)"]
    for row in status["agents"]:
        if "error" in row:
            lines.append(f"{row['name']}: not answering ({row['error']})")
            continue
        lines.append(_row(row, now))
    return lines


def _row(row: Mapping[str, Any], now: float) -> str:
    """One agent as a line: host, node, pid, version, uptime (s), the run it serves."""
    run = row.get("run")
    serving = f"serves run {run['run_id']}" if run else "serves no run"
    uptime = max(0.0, now - float(row["started_at"]))
    return (
        f"{row['host']}: node {str(row['node_id'])[:8]}, pid {row['pid']}, "
        f"{row['version']}, up {uptime:.0f} s, {serving}"
    )


def run_agents(action: str, address: str | None, out: TextIO | None = None) -> int:
    """``touchstone-ray agents <action> [--address A]``: join the cluster at ``address`` (or
    ``RAY_ADDRESS``), do ``action`` (:data:`ACTIONS`) and print its lines on ``out`` (default
    stdout); returns the exit code (0). Raises :class:`UsageError` (exit 2) for an unknown
    action or no address, :class:`RunError` (exit 1) for agents that do not answer."""
    from touchstone_ray.config import RaySettings
    from touchstone_ray.fleet.session import ensure_ray, resolve_address

    out = out or sys.stdout
    if action not in ACTIONS:
        raise UsageError(f"agents: unknown action {action!r}; use one of {', '.join(ACTIONS)}")
    settings = RaySettings()
    if resolve_address(address, settings) is None:
        raise UsageError(
            "agents: they live on a cluster that stays up; give its address with --address "
            "(or RAY_ADDRESS)"
        )
    ensure_ray(address, settings)
    if action == "up":
        for facts in agents_up():
            print(f"agent up: {_row(facts, time.time())}", file=out)
    elif action == "down":
        names = agents_down()
        print(f"agents down: {len(names)} ended, none left", file=out)
    else:
        for line in format_status(agents_status()):
            print(line, file=out)
    out.flush()
    return 0
