"""Fixtures for the judging tests (factories in ``judging_factories``)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator

import pytest
from judging_factories import make_pack
from ray_env import isolated_ray_auth

from touchstone_ray.fleet.hosts import HOST_LABEL
from touchstone_ray.pack import Pack


@pytest.fixture
def pack() -> Pack:
    """Scope ``all`` (field omitted), curated prompt B1 (safety_critical), language de."""
    return make_pack()


@contextlib.contextmanager
def _ray_env() -> Iterator[str]:
    """HOME and RAY_TMPDIR in a short temp folder (socket path limit), auth state reset before
    and after; yields the folder."""
    tmp = tempfile.mkdtemp(prefix="tsj-")
    with pytest.MonkeyPatch.context() as mp, isolated_ray_auth():
        mp.setenv("HOME", tmp)
        mp.setenv("RAY_TMPDIR", tmp)
        yield tmp
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def ray_local() -> Iterator[dict[str, str]]:
    """One local Ray per test module; yields the env a subprocess driver needs to join it
    (``HOME``, ``RAY_TMPDIR``) and its ``address``."""
    import ray

    with _ray_env() as tmp:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            address = ray.get_runtime_context().gcs_address
            yield {"HOME": tmp, "RAY_TMPDIR": tmp, "address": address}
        finally:
            ray.shutdown()


@pytest.fixture(scope="module")
def ray_two_nodes() -> Iterator[dict[str, str]]:
    """One Ray cluster per test module: a head and a worker labelled ``touchstone.host=box``;
    yields their node ids (``head``, ``box``)."""
    import ray
    from ray.cluster_utils import Cluster

    with _ray_env():
        cluster = Cluster(
            initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False}
        )
        try:
            box = cluster.add_node(num_cpus=1, labels={HOST_LABEL: "box"})
            cluster.wait_for_nodes()
            ray.init(address=cluster.address, log_to_driver=False)
            yield {"head": cluster.head_node.node_id, "box": box.node_id}
        finally:
            ray.shutdown()
            cluster.shutdown()
