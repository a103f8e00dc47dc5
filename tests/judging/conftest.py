"""Fixtures for the judging tests (factories in ``judging_factories``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from judging_factories import make_pack
from ray_env import ray_cluster

from touchstone_ray.pack import Pack


@pytest.fixture
def pack() -> Pack:
    """Scope ``all`` (field omitted), curated prompt B1 (safety_critical), language de."""
    return make_pack()


@pytest.fixture(scope="module")
def ray_two_nodes() -> Iterator[dict[str, str]]:
    """One Ray cluster per test module: a head and a worker labelled ``touchstone.host=box``;
    yields their node ids (``head``, ``box``)."""
    with ray_cluster(["box"], head_cpus=2) as rc:
        yield {"head": rc.cluster.head_node.node_id, "box": rc.nodes["box"].node_id}
