"""The hosts' clients and monitors of one perf or tools run, around its lanes: started
together (a standing cluster's host agents where they are up, else client actors of their
own), the host facts and the preflight's findings kept in ``bundle.json``, and at the end the
clients closed and touchstone's own footprint recorded.

:class:`HostClients` owns them; :class:`HostStart` is a host's start lane
(:class:`~touchstone_ray.fleet.preflight.PreflightStart`) that stores what ``ready`` and
``preflight`` found (the ``preflight`` event, each model's context limit). The eval keeps its
own start-up (:mod:`touchstone_ray.eval.startup`: context check and warm-up probes)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from touchstone_ray.bundle import AgentEntry, Bundle, Footprint
from touchstone_ray.config import FleetConfig, ModelSpec
from touchstone_ray.fleet.actors import close_actors
from touchstone_ray.fleet.agents import AgentClient, agent_entries, start_clients
from touchstone_ray.fleet.dispatch import Dispatcher, Lane, Pinned
from touchstone_ray.fleet.monitors import MonitorSet
from touchstone_ray.fleet.preflight import PreflightStart, store_servers

if TYPE_CHECKING:
    from touchstone_ray.fleet.agents import ClientSpec

__all__ = ["HostClients", "HostStart"]


@dataclass
class HostClients:
    """One run's client per host (``actors``: host → handle), the hosts' monitors and each
    monitor's capabilities; :meth:`start` makes them, :meth:`stop` ends them once."""

    bundle: Bundle
    event: Callable[..., object]
    """The run's event writer (``event(name, **fields)``): a host's ``preflight`` goes there."""
    actors: dict[str, Any] = field(default_factory=dict)
    monitors: MonitorSet | None = None
    capabilities: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Host → its monitor's capabilities."""
    limits: dict[str, int | None] = field(default_factory=dict)
    """Model label → the server's context limit (tokens) from the preflight (None: not
    said)."""
    _stopped: bool = False

    def start(
        self,
        config: FleetConfig,
        specs: Mapping[str, ClientSpec],
        models: Mapping[str, Sequence[tuple[str, ModelSpec]]],
    ) -> None:
        """Start each host's client (``specs``, host → how it is built) and monitor (within
        :class:`MonitorSet`'s own deadline), watching the engines of ``models`` (host →
        ``(label, spec)``); the agents leased go into ``bundle.json`` ``agents``. No client
        is waited for here."""
        from touchstone_ray.telemetry.engines import EngineTarget

        self.actors.update(start_clients(specs, self.bundle.root.name))  # agents, if up
        agents = agent_entries(self.actors)
        if agents:
            self.bundle.update_manifest(agents={h: AgentEntry(**a) for h, a in agents.items()})
        self.monitors = MonitorSet(
            self.bundle.root,
            config.monitor.interval_s,
            config.monitor.gpu,
            autodrain_s=1.0,
            agents={h: a for h, a in self.actors.items() if isinstance(a, AgentClient)},
        )
        targets = {
            host: [EngineTarget.from_spec(label, spec.model_dump()) for label, spec in ms]
            for host, ms in models.items()
        }
        nodes = {host: spec.node_id for host, spec in specs.items()}
        self.capabilities = self.monitors.start(nodes, targets)

    def pin(
        self,
        dispatcher: Dispatcher,
        nodes: Mapping[str, str],
        lanes: Callable[[str], list[Lane]],
        lost: set[str],
    ) -> dict[str, Pinned]:
        """Put each host's client on ``dispatcher`` as one :class:`Pinned` (``nodes``: host →
        node id) with the lanes ``lanes(host)`` gives (its start lane first); a host whose
        client or node is lost is added to ``lost``. Returns host → its :class:`Pinned`."""
        pinned: dict[str, Pinned] = {}
        for host, node_id in nodes.items():
            one = Pinned(f"host {host}", node_id, self.actors[host], role="client actor")
            one.lanes = lanes(host)
            one.on_lost = lambda reason, host=host: lost.add(host)
            pinned[host] = one
            dispatcher.add(one)
        return pinned

    def poll(self) -> None:
        """The monitors' answers that came in (``register_pids_soon``); call once per
        dispatcher turn."""
        if self.monitors is not None:
            self.monitors.poll()

    def ready(self, host: str, facts: dict[str, Any]) -> None:
        """``host``'s client answered ``ready`` with ``facts``: they and the monitor's
        capabilities go into ``bundle.json`` ``hosts``, the client's pid to the monitor."""
        with self.bundle.edit_manifest() as manifest:
            entry = manifest.host(host)
            entry.update(facts)
            entry.capabilities = self.capabilities.get(host, {})
        if self.monitors is not None:
            self.monitors.register_pids_soon(host, [facts["client_pid"]])

    def preflighted(self, host: str, result: dict[str, dict[str, Any]] | None) -> None:
        """``host``'s preflight answer (``None``: none came): a ``preflight`` event, each
        model's context limit into :attr:`limits`, its server facts into ``bundle.json``
        ``servers``."""
        self.event("preflight", host=host, result=result)
        for label, found in (result or {}).items():
            self.limits[label] = found.get("context_limit")
        with self.bundle.edit_manifest() as manifest:
            store_servers(manifest, result)

    def stop(self, lost: set[str]) -> None:
        """Close the clients (those of ``lost`` hosts are only killed) and stop the monitors,
        once; each host's footprint goes into ``bundle.json`` ``hosts``."""
        if self._stopped:
            return
        self._stopped = True
        close_actors(self.actors, lost)
        if self.monitors is None:
            return
        footprint = self.monitors.footprint()
        self.monitors.stop()
        with self.bundle.edit_manifest() as manifest:
            for host, entry in manifest.hosts.items():
                if host in footprint:
                    entry.touchstone_footprint = Footprint.model_validate(footprint[host])


class HostStart(PreflightStart):
    """One host's start lane in a perf or tools run: ``ready`` and ``preflight``, stored by
    :class:`HostClients`; then the host's other lanes begin. Subclasses implement
    :meth:`not_started`."""

    def __init__(
        self, clients: HostClients, host: str, node_id: str, ready_timeout_s: float
    ) -> None:
        super().__init__(clients.actors[host], host, node_id, ready_timeout_s)
        self.clients = clients

    def ready(self, facts: dict[str, Any]) -> None:
        self.clients.ready(self.host, facts)

    def preflighted(self, result: dict[str, dict[str, Any]] | None, problems: list[str]) -> None:
        self.clients.preflighted(self.host, result)
        self.finish()
