"""The refused-connections state of one endpoint, shared by every call of its engine.

An engine that restarts closes its port for a while: every call sent then is refused at once.
Those calls wait for it together, from the endpoint's *first* refusal, so a cell sent late in
an outage does not get a fresh ``engine_down_timeout_s`` of its own (:mod:`._retry`). Only an
endpoint that has answered this engine before is waited for: one refused from the start is a
wrong URL or an engine never started, and fails as it always did.
"""

from __future__ import annotations

import time


class EndpointOutage:
    """Whether the endpoint has answered, and since when (``time.monotonic`` s) it has
    refused connections (``None``: it does not)."""

    def __init__(self) -> None:
        self.since: float | None = None
        self.answered = False
        """The endpoint has accepted a connection of this engine before."""

    def refused(self) -> float:
        """Note a refused connect; the seconds the endpoint has refused them so far."""
        now = time.monotonic()
        if self.since is None:
            self.since = now
        return now - self.since

    def reached(self) -> None:
        """The endpoint accepted a connection: the outage, if any, is over."""
        self.since = None
        self.answered = True
