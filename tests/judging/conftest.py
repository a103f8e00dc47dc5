"""Fixtures for the judging tests (factories in ``judging_factories``)."""

from __future__ import annotations

import pytest
from judging_factories import make_pack

from touchstone_ray.pack import Pack


@pytest.fixture
def pack() -> Pack:
    """Scope ``all`` (field omitted), curated prompt B1 (safety_critical), language de."""
    return make_pack()
