"""Host agents, the driver's side: a run leases each host's agent (one detached, named actor
per node of a standing cluster that keeps a host's client process warm between runs; issue 30,
SPEC §6 ``agents``), starts or replaces it, and calls its client through it. The actor itself
is :class:`~touchstone_ray.fleet.agent_actor.HostAgent`.

Every run on a cluster joined with ``--address`` pays for a new client actor per host: a Ray
worker process, the client's imports, its first ``ready`` (about 1 s on a quiet host, 3 s on a
loaded one, docs/benchmarks.md). An agent is that process, started once
(``touchstone-ray agents up``) and reused by every later run:

- **Where:** one :class:`HostAgent` per Ray node, named ``agent:<node id>`` (:func:`agent_name`)
  in the Ray namespace :data:`NAMESPACE`, ``lifetime="detached"`` (it outlives the driver that
  started it), pinned hard to its node, no CPU, never restarted elsewhere.
- **When runs use them:** only on a cluster where ``agents up`` was run: it sets the key
  :data:`ON_KEY` in the GCS key-value store (namespace :data:`NAMESPACE`), ``agents down``
  removes it (:func:`agents_on`). Without it, and always on the embedded local Ray, runs start
  their own client actors as before, so a head that nobody asked for agents (the UI's own, a
  queue's own) never gets one.
- **Attach:** a run leases each host's agent (:func:`start_clients`): one ``attach`` call per
  host, all at once, that builds the run's client object (a
  :class:`~touchstone_ray.fleet.client_actor.HostClient`, or a subclass) inside the agent and
  answers a lease token. The run's calls then go through :class:`AgentClient`, a handle with
  the same methods as the client actor's (each becomes the agent's ``call(lease, method, …)``);
  a call with a lease that is no longer the agent's raises
  :class:`~touchstone_ray.fleet.agent_actor.StaleLease` there.
- **Version:** ``attach`` carries the driver's :func:`code_version` (the package version and a
  hash of its sources) and :func:`settings_hash`. An agent whose either differs is killed and
  replaced, with one line on stderr (:func:`replaced_line`), never reused silently; what each
  host's agent was, and whether it was replaced, goes into ``bundle.json`` ``agents``.
- **One measuring run at a time:** an agent that serves a measuring run (eval, perf) whose
  driver is alive answers another measuring run ``busy`` with that run's id, and that run
  fails with one line (:func:`busy_line`). A run that measures no speed (a judge) gets a
  client of its own in the agent beside it. A lease whose driver's Ray job is dead (a driver
  SIGKILLed) is dropped at the next ``attach`` or ``status`` (the agent reads the GCS job
  table): the agent then serves no run, and the old run's client (its open streams) is closed.
- **End of a run:** :func:`~touchstone_ray.fleet.actors.close_actors` releases the lease
  (``release``: the client's engines and stream workers closed) instead of killing the actor.
- **An agent that dies** (its process SIGKILLed) fails the run's calls like a dead client actor
  (``node_lost`` records for the host's pending cells); the next run starts a new agent there.

The agent also keeps the host's monitor actor (:meth:`HostAgent.monitor`, a child of the
agent): a measuring run's :class:`~touchstone_ray.fleet.monitors.MonitorSet` resets it for the
run instead of starting one, and stops it at the end without killing it.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from touchstone_ray.errors import RunError, one_line
from touchstone_ray.fleet.agent_actor import (
    NAMESPACE,
    HostAgent,
    agent_name,
    code_version,
    settings_hash,
)

__all__ = [
    "ON_KEY",
    "AgentClient",
    "AgentInfo",
    "ClientSpec",
    "agent_entries",
    "agents_on",
    "busy_line",
    "find_agent",
    "gather",
    "kill_agent",
    "replaced_line",
    "set_agents_on",
    "start_agent",
    "start_clients",
]

ON_KEY = "agents_on"
"""GCS key-value key (namespace :data:`NAMESPACE`) set by ``agents up``: runs use agents."""
CALL_TIMEOUT_S = 30.0
"""How long one round of ``attach`` / ``info`` / ``release`` calls may take, all hosts
together (s)."""
NAME_FREE_TIMEOUT_S = 15.0
"""How long a replacement waits for a killed agent's name to be free (s)."""


def replaced_line(host: str, node_id: str, found: Mapping[str, Any], why: str) -> str:
    """The one line said when ``host``'s agent is replaced: what it runs and why not."""
    return (
        f"agent of host {host} (node {node_id[:8]}): {why} "
        f"(it runs {found.get('version')}, settings {found.get('settings_hash')}; "
        f"this driver {code_version()}, settings {settings_hash()}); replaced"
    )


def busy_line(host: str, node_id: str, run_id: str) -> str:
    """The one line a run gets when ``host``'s agent serves another run (``run_id``)."""
    return (
        f"host {host}: its agent (node {node_id[:8]}) serves run {run_id}; an agent serves one "
        "measuring run at a time: wait for that run, or stop it"
    )


@dataclass
class AgentInfo:
    """What a run found of one host's agent (``bundle.json`` ``agents.<host>``)."""

    name: str
    node_id: str
    pid: int
    """The agent's process id on its node."""
    version: str
    settings_hash: str
    started_at: float
    """Epoch s when the agent started."""
    reused: bool
    """The agent was up before this run (false: started for it)."""
    replaced: str | None = None
    """Why an agent found there was replaced (one line), else ``None``."""
    taken_from: str | None = None
    """The run whose dead driver still held the agent, else ``None``."""

    def to_dict(self) -> dict[str, Any]:
        """As stored in ``bundle.json``."""
        return dict(self.__dict__)


class _AgentMethod:
    """``agent_client.<method>``: ``.remote(*args)`` and ``.options(**ray options)`` like an
    actor method's handle, sent as the agent's ``call``."""

    def __init__(self, client: AgentClient, method: str, options: dict[str, Any]) -> None:
        self._client = client
        self._method = method
        self._options = options

    def options(self, **options: Any) -> _AgentMethod:
        return _AgentMethod(self._client, self._method, {**self._options, **options})

    def remote(self, *args: Any, **kwargs: Any) -> Any:
        call = self._client.agent.call
        if self._options:
            call = call.options(**self._options)
        return call.remote(self._client.lease, self._method, *args, **kwargs)


class AgentClient:
    """A run's handle on a leased agent: ``handle.<method>.remote(…)`` calls its client's
    method as a client actor's handle would (see the module docstring). ``agent`` is the
    agent actor, ``lease`` the token, ``info`` what was found (:class:`AgentInfo`)."""

    def __init__(self, agent: Any, lease: str, info: AgentInfo) -> None:
        self.agent = agent
        self.lease = lease
        self.info = info

    def __getattr__(self, name: str) -> _AgentMethod:
        if name.startswith("_"):
            raise AttributeError(name)
        return _AgentMethod(self, name, {})

    def release(self) -> Any:
        """Submit the agent's ``release`` of this lease; returns its ref."""
        return self.agent.release.remote(self.lease)

    def monitor(
        self,
        host: str,
        interval_s: float,
        gpu_mode: str,
        buffer_size: int,
        engines: list[Any],
        pids: list[int],
    ) -> Any:
        """Submit the agent's ``monitor`` call for this lease (:meth:`HostAgent.monitor`);
        returns its ref, whose value is the monitor actor's handle."""
        return self.agent.monitor.remote(
            self.lease, host, interval_s, gpu_mode, buffer_size, engines, pids
        )


@dataclass
class ClientSpec:
    """One host's client for :func:`start_clients`: ``cls(*args, **kwargs)`` pinned to
    ``node_id``; ``name`` the actor's name when it runs as an actor of its own."""

    host: str
    node_id: str
    cls: type
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    name: str | None = None


def agents_on() -> bool:
    """Whether runs on the connected cluster use agents: ``agents up`` was run on it (the
    :data:`ON_KEY` marker). Requires an initialised Ray; false when the store cannot be read."""
    try:
        from ray.experimental.internal_kv import _internal_kv_get

        return bool(_internal_kv_get(ON_KEY, namespace=NAMESPACE))
    except Exception:
        return False


def set_agents_on(on: bool) -> None:
    """Set (``on``) or remove the :data:`ON_KEY` marker of the connected cluster."""
    from ray.experimental.internal_kv import _internal_kv_del, _internal_kv_put

    if on:
        _internal_kv_put(ON_KEY, str(time.time()), overwrite=True, namespace=NAMESPACE)
    else:
        _internal_kv_del(ON_KEY, namespace=NAMESPACE)


def find_agent(node_id: str) -> Any:
    """``node_id``'s agent actor, or ``None`` where there is none (alive)."""
    import ray

    try:
        return ray.get_actor(agent_name(node_id), namespace=NAMESPACE)
    except ValueError:
        return None


def start_agent(node_id: str, host: str, *, version: str | None = None) -> Any:
    """Start ``node_id``'s agent (detached, pinned hard, no CPU, never restarted), answering
    ``version`` (default :func:`code_version`; another value only to test replacement).
    Retries for up to :data:`NAME_FREE_TIMEOUT_S` while a killed agent's name is not yet
    free; raises :class:`RunError` (one line) when it stays taken."""
    import ray

    from touchstone_ray.fleet.dispatch import pin

    deadline = time.monotonic() + NAME_FREE_TIMEOUT_S
    remote = ray.remote(HostAgent)
    while True:
        try:
            return remote.options(
                name=agent_name(node_id),
                namespace=NAMESPACE,
                lifetime="detached",
                num_cpus=0,
                max_restarts=0,
                max_concurrency=1000,
                scheduling_strategy=pin(node_id),
            ).remote(host, version or code_version(), settings_hash())
        except ValueError as exc:  # the name is still taken
            if time.monotonic() > deadline:
                raise RunError(f"agent of host {host}: {one_line(str(exc))}") from exc
            time.sleep(0.05)


def gather(refs: Mapping[str, Any], timeout_s: float = CALL_TIMEOUT_S) -> dict[str, Any]:
    """Wait for one call per key (at most ``timeout_s`` s, all together): key → its value,
    or the exception it ended with (no answer in time: ``TimeoutError``)."""
    import ray

    if not refs:
        return {}
    ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout_s)
    done = set(ready)
    out: dict[str, Any] = {}
    for key, ref in refs.items():
        if ref not in done:
            out[key] = TimeoutError(f"no answer within {timeout_s:g} s")
            continue
        try:
            out[key] = ray.get(ref, timeout=0)
        except Exception as exc:
            out[key] = exc
    return out


def kill_agent(agent: Any) -> None:
    """Kill an agent actor (never restarted); never raises."""
    import ray

    with contextlib.suppress(Exception):
        ray.kill(agent, no_restart=True)


def spawn_own(spec: ClientSpec) -> Any:
    """Start the client of ``spec`` as an actor of its own, pinned hard to its node
    (:func:`~touchstone_ray.fleet.dispatch.spawn_pinned`, ``max_concurrency`` 1000); returns
    its handle."""
    from touchstone_ray.fleet.dispatch import spawn_pinned

    return spawn_pinned(
        spec.cls, spec.node_id, *spec.args, name=spec.name, max_concurrency=1000, **spec.kwargs
    )


def start_clients(
    specs: Mapping[str, ClientSpec],
    run_id: str,
    *,
    measuring: bool = True,
    err: TextIO | None = None,
) -> dict[str, Any]:
    """One client per key of ``specs``: a leased agent (:class:`AgentClient`) where the
    cluster has agents on (:func:`agents_on`), else a client actor of its own
    (:func:`~touchstone_ray.fleet.dispatch.spawn_pinned`, ``max_concurrency`` 1000).

    With agents: every ``attach`` at once; a missing or dead agent is started, a stale one
    killed and replaced (one line each on ``err``, default stderr), then attached again. A
    measuring run (``measuring``: eval, perf) with two keys on one node leases the agent for
    the first and starts actors of its own for the rest. An agent busy with another measuring
    run: what this run leased is released and :class:`RunError` raised with :func:`busy_line`.
    Raises :class:`RunError` for an agent that does not answer within :data:`CALL_TIMEOUT_S`."""
    if not specs or not agents_on():
        return {key: spawn_own(spec) for key, spec in specs.items()}
    import ray

    err = err or sys.stderr
    job_id = ray.get_runtime_context().get_job_id()
    version, settings = code_version(), settings_hash()
    out: dict[str, Any] = {}
    keys: list[str] = []
    for key, spec in specs.items():
        if measuring and any(specs[k].node_id == spec.node_id for k in keys):
            out[key] = spawn_own(spec)
        else:
            keys.append(key)
    agents: dict[str, Any] = {}
    """Node id → its agent actor."""
    reused: dict[str, bool] = {}
    replaced: dict[str, str] = {}
    for key in keys:
        node_id = specs[key].node_id
        if node_id not in agents:
            agent = find_agent(node_id)
            reused[node_id] = agent is not None
            agents[node_id] = agent if agent is not None else start_agent(node_id, specs[key].host)
    leased: dict[str, AgentClient] = {}

    def attach(todo: list[str]) -> dict[str, Any]:
        return gather(
            {
                k: agents[specs[k].node_id].attach.remote(
                    run_id,
                    job_id,
                    specs[k].host,
                    version,
                    settings,
                    measuring,
                    specs[k].cls,
                    specs[k].args,
                    specs[k].kwargs,
                )
                for k in todo
            }
        )

    def fail(line: str) -> RunError:
        gather({k: c.release() for k, c in leased.items()})
        return RunError(line)

    def restart(node_id: str, host: str) -> None:
        kill_agent(agents[node_id])
        agents[node_id] = start_agent(node_id, host)
        reused[node_id] = False

    todo = keys
    for attempt in range(2):
        answers = attach(todo)
        todo = []
        restarted: set[str] = set()
        for key, answer in answers.items():
            spec = specs[key]
            node_id = spec.node_id
            if isinstance(answer, dict) and "lease" in answer:
                info = AgentInfo(
                    name=answer["name"],
                    node_id=answer["node_id"],
                    pid=answer["pid"],
                    version=answer["version"],
                    settings_hash=answer["settings_hash"],
                    started_at=answer["started_at"],
                    reused=reused[node_id],
                    replaced=replaced.get(node_id),
                    taken_from=answer.get("taken_from"),
                )
                leased[key] = AgentClient(agents[node_id], answer["lease"], info)
            elif attempt == 0 and isinstance(answer, dict) and "stale" in answer:
                if node_id not in restarted:
                    found = answer["stale"]
                    other = found.get("version") != version
                    why = "other code version" if other else "other settings"
                    line = replaced_line(spec.host, node_id, found, why)
                    print(line, file=err, flush=True)
                    replaced[node_id] = line
                    restart(node_id, spec.host)
                    restarted.add(node_id)
                todo.append(key)
            elif attempt == 0 and isinstance(answer, BaseException) and reused[node_id]:
                if node_id not in restarted:  # a dead agent (its process gone): a new one
                    restart(node_id, spec.host)
                    restarted.add(node_id)
                todo.append(key)
            elif isinstance(answer, dict) and "busy" in answer:
                raise fail(busy_line(spec.host, node_id, str(answer["busy"])))
            else:
                what = one_line(f"{type(answer).__name__}: {answer}")
                raise fail(f"agent of host {spec.host} (node {node_id[:8]}): {what}")
        if not todo:
            break
    return {key: leased.get(key, out.get(key)) for key in specs}


def agent_entries(clients: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Key → ``bundle.json`` ``agents`` entry (:meth:`AgentInfo.to_dict`) of each client
    that is a leased agent; ``{}`` without agents."""
    return {k: c.info.to_dict() for k, c in clients.items() if isinstance(c, AgentClient)}
