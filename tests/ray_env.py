"""Ray in the test process: one local Ray (:func:`local_ray`) or a multi-node
``ray.cluster_utils.Cluster`` (:func:`ray_cluster`), each in its own short temp folder with its
own auth state. ``tests/conftest.py`` builds its fixtures ``ray_local`` and ``rc`` from these;
a test that needs another cluster shape (a node lost, a partition) calls them itself.

Ray 2.60 caches the auth mode and token for the whole process and a local ``ray.init`` sets
``RAY_AUTH_MODE=token`` in the environment: a second ``ray.init`` with another HOME would
otherwise fail (its GCS finding no token, or the driver sending the old one). Ray's own tests
reset the same way. ``HOME`` and ``RAY_TMPDIR`` go to a short folder under /tmp (Ray's socket
paths are limited, ray-notes.md) and are restored after.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from touchstone_ray.fleet.hosts import HOST_LABEL

RAY_AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def reset_ray_auth() -> None:
    """Forget the auth mode and token this process cached."""
    from ray._raylet import AuthenticationTokenLoader, Config

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


@contextlib.contextmanager
def isolated_ray_auth() -> Iterator[None]:
    """Unset the ``RAY_AUTH_*`` variables and reset the cached auth state, before and after
    (whatever Ray sets in between is undone)."""
    with pytest.MonkeyPatch.context() as mp:
        for name in RAY_AUTH_VARS:
            mp.setenv(name, "")  # records the old value, so what ray.init sets is undone
            mp.delenv(name)
        reset_ray_auth()
        try:
            yield
        finally:
            reset_ray_auth()


@contextlib.contextmanager
def ray_home(env: Mapping[str, str] | None = None) -> Iterator[Path]:
    """A short temp folder as ``HOME`` and ``RAY_TMPDIR`` (plus ``env``), auth state isolated;
    yields the folder; everything restored and the folder removed after."""
    tmp = Path(tempfile.mkdtemp(prefix="tsr-", dir="/tmp"))
    try:
        with pytest.MonkeyPatch.context() as mp, isolated_ray_auth():
            for name, value in {"HOME": str(tmp), "RAY_TMPDIR": str(tmp), **(env or {})}.items():
                mp.setenv(name, value)
            yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass(frozen=True)
class LocalRay:
    """A local Ray the test process is connected to."""

    home: Path
    """Its ``HOME`` and ``RAY_TMPDIR``: a subprocess driver joining it needs both."""
    address: str
    """GCS address (``ip:port``), for ``--address``."""
    node_id: str
    """The one node's id (hex)."""


@contextlib.contextmanager
def local_ray(num_cpus: int = 2) -> Iterator[LocalRay]:
    """``ray.init`` of a fresh local Ray (no dashboard, workers' logs not echoed) in a
    :func:`ray_home`; shut down after."""
    import ray

    with ray_home() as home:
        ray.init(
            num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, logging_level="ERROR"
        )
        try:
            ctx = ray.get_runtime_context()
            yield LocalRay(home, ctx.gcs_address, ctx.get_node_id())
        finally:
            ray.shutdown()


@dataclass
class RayCluster:
    """A started ``ray.cluster_utils.Cluster`` the test process is connected to."""

    cluster: Any
    address: str
    tmp: Path
    nodes: dict[str, Any] = field(default_factory=dict)
    """Host label → ``ray._private.node.Node`` of its worker."""

    def add_host(self, host: str) -> Any:
        """Start a worker node labelled ``touchstone.host=<host>`` and wait for it."""
        node = self.cluster.add_node(num_cpus=1, labels={HOST_LABEL: host})
        self.cluster.wait_for_nodes()
        self.nodes[host] = node
        return node

    @staticmethod
    def node_ids_by_host() -> dict[str, str]:
        """Alive nodes' host label → node id, from ``ray.nodes()``."""
        import ray

        return {
            n["Labels"][HOST_LABEL]: n["NodeID"]
            for n in ray.nodes()
            if n.get("Alive") and HOST_LABEL in (n.get("Labels") or {})
        }


@contextlib.contextmanager
def ray_cluster(
    hosts: list[str],
    *,
    head_cpus: int = 1,
    head_args: Mapping[str, Any] | None = None,
    node_args: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[RayCluster]:
    """A head (``head_cpus``, no dashboard, plus ``head_args``) and one 1-CPU worker per host
    label (plus ``node_args``), in a :func:`ray_home` with ``env``; ``ray.init(address=…)`` in
    this process; everything shut down and restored after."""
    import ray
    from ray.cluster_utils import Cluster

    with ray_home(env) as tmp:
        cluster = None
        try:
            cluster = Cluster(
                initialize_head=True,
                head_node_args={
                    "num_cpus": head_cpus,
                    "include_dashboard": False,
                    **(head_args or {}),
                },
            )
            handle = RayCluster(cluster=cluster, address=cluster.address, tmp=tmp)
            for host in hosts:
                handle.nodes[host] = cluster.add_node(
                    num_cpus=1, labels={HOST_LABEL: host}, **(node_args or {})
                )
            cluster.wait_for_nodes()
            ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
            yield handle
        finally:
            ray.shutdown()
            if cluster is not None:
                cluster.shutdown()
