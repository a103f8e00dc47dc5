"""Fixtures for the engine tests: a replay server on loopback, fresh per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from engine_helpers import ReplayServer


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    """A started :class:`ReplayServer`; stopped after the test."""
    server = ReplayServer()
    server.start()
    yield server
    server.stop()
