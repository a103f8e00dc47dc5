"""Host → Ray node resolution (SPEC §4, §8).

A host name in the fleet config maps to a Ray node by its label ``touchstone.host``, then by
hostname, then by IP (first match wins); ``local`` is the driver's own node. Only alive nodes
match. Resolution is a pure function over ``ray.nodes()`` so it is testable without Ray.
Used by eval, perf, judge and the ``hosts`` command (whose checks are
:func:`touchstone_ray.fleet.preflight.run_hosts`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from touchstone_ray.config import LOCAL_HOST, FleetConfig, HostSpec
from touchstone_ray.errors import ConfigError

HOST_LABEL = "touchstone.host"
"""The node label that names a host (``ray start --labels touchstone.host=gpu-a``)."""


@dataclass(frozen=True)
class NodeInfo:
    """One Ray node as ``ray.nodes()`` reports it."""

    node_id: str
    ip: str
    hostname: str
    labels: Mapping[str, str]
    alive: bool
    metrics_export_port: int | None = None

    @classmethod
    def from_ray(cls, node: Mapping[str, Any]) -> NodeInfo:
        """Build from one ``ray.nodes()`` entry."""
        return cls(
            node_id=str(node["NodeID"]),
            ip=str(node.get("NodeManagerAddress", "")),
            hostname=str(node.get("NodeManagerHostname", "")),
            labels=dict(node.get("Labels") or {}),
            alive=bool(node.get("Alive", False)),
            metrics_export_port=node.get("MetricsExportPort"),
        )

    def describe(self) -> str:
        """``<node id prefix> ip hostname label`` for error messages."""
        label = self.labels.get(HOST_LABEL)
        return f"{self.node_id[:8]} {self.ip} {self.hostname}" + (f" [{label}]" if label else "")


def _match(spec: HostSpec, nodes: Sequence[NodeInfo]) -> NodeInfo | None:
    for attr, value in (("label", spec.label), ("hostname", spec.hostname), ("ip", spec.ip)):
        if value is None:
            continue
        for node in nodes:
            if attr == "label" and node.labels.get(HOST_LABEL) == value:
                return node
            if attr == "hostname" and node.hostname == value:
                return node
            if attr == "ip" and node.ip == value:
                return node
    return None


def resolve_hosts(
    config: FleetConfig, nodes: Sequence[NodeInfo], driver_node_id: str
) -> dict[str, NodeInfo]:
    """Map every host that serves a model to its alive Ray node.

    Raises :class:`ConfigError` naming the host, how it was looked for, and the nodes that
    exist, when a host matches no alive node.
    """
    alive = [n for n in nodes if n.alive]
    resolved: dict[str, NodeInfo] = {}
    for host in config.host_names():
        if host == LOCAL_HOST:
            node = next((n for n in alive if n.node_id == driver_node_id), None)
        else:
            node = _match(config.hosts[host], alive)
        if node is None:
            spec = config.hosts.get(host)
            wanted = (
                ", ".join(f"{k}={v}" for k, v in spec.model_dump(exclude_none=True).items())
                if spec
                else f"node {driver_node_id[:8]}"
            )
            existing = "; ".join(n.describe() for n in alive) or "none"
            raise ConfigError(
                f"hosts.{host}: matches no alive Ray node ({wanted}); nodes: {existing}"
            )
        resolved[host] = node
    return resolved


def current_nodes() -> list[NodeInfo]:
    """The cluster's nodes (requires ``ray.init``)."""
    import ray

    return [NodeInfo.from_ray(n) for n in ray.nodes()]
