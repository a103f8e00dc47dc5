"""Retry policy of one chat call, run by tenacity's ``AsyncRetrying``.

Rules (SPEC §8): errors whose ``retryable`` flag is set (connect errors, timeouts, 5xx, a
stream cut mid-way) are retried with jittered exponential backoff until ``max_attempts`` of them
have failed; 4xx, context-length errors, error events and garbage are not retried. HTTP 503
while the model loads (:class:`EngineModelLoading`) does not count against ``max_attempts``:
it is retried until ``load_timeout_s`` after the call's first attempt began. A refused
connection (:class:`EngineRefused`) to an endpoint that answered before (an engine restarting)
does not count either: it is probed every ``down_probe_s`` until ``engine_down_timeout_s``
after the endpoint's first refusal (:class:`~touchstone_ray.engines._outage.EndpointOutage`,
shared by the engine's calls).
"""

from __future__ import annotations

import random
import time

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from touchstone_ray.engines._outage import EndpointOutage
from touchstone_ray.engines._types import EngineSettings
from touchstone_ray.errors import (
    EngineConnectError,
    EngineError,
    EngineModelLoading,
    EngineRefused,
)


class RetryPolicy:
    """Per-call retry decisions; :meth:`Engine.retry_policy` makes a fresh one per call.

    Override :meth:`backoff_s` or :meth:`give_up` (e.g. a fixed backoff in tests) and return
    the subclass from ``Engine.retry_policy``.
    """

    def __init__(self, settings: EngineSettings, outage: EndpointOutage | None = None) -> None:
        self.settings = settings
        self.outage = outage or EndpointOutage()
        """The endpoint's refused-connections state (the engine's, shared by its calls)."""
        self.failures = 0
        """Failed attempts that count against ``max_attempts`` so far."""
        self.first_refused: float | None = None
        """``time.monotonic`` s of this call's first refused connect; ``None``: none."""
        self.refusals = 0
        """Refused connects of this call so far (probes, not attempts)."""

    def retryable(self, error: BaseException) -> bool:
        """Whether ``error`` may be retried at all (an :class:`EngineError` that says so)."""
        return isinstance(error, EngineError) and error.retryable

    def backoff_s(self, attempt: int, error: EngineError) -> float:
        """Seconds to sleep after failed attempt number ``attempt`` (1-based): equal-jitter
        exponential, uniform in ``[h/2, h]`` with ``h = min(backoff_max_s,
        backoff_base_s * 2**(attempt-1))``."""
        high = min(self.settings.backoff_max_s, self.settings.backoff_base_s * 2 ** (attempt - 1))
        return random.uniform(high / 2, high)

    def give_up(self, attempt: int, error: EngineError, elapsed_s: float) -> bool:
        """Whether to stop after failed attempt ``attempt``, ``elapsed_s`` seconds after the
        first attempt began. Called once per retryable failure."""
        if self._waits_for(error):
            self.refusals += 1
            if self.first_refused is None:
                self.first_refused = time.monotonic()
            return self.outage.refused() >= self.settings.engine_down_timeout_s
        if not isinstance(error, EngineConnectError):  # the server took the connection
            self.outage.reached()
        if isinstance(error, EngineModelLoading):
            return elapsed_s >= self.settings.load_timeout_s
        self.failures += 1
        return self.failures >= self.settings.max_attempts

    def _waits_for(self, error: EngineError) -> bool:
        return isinstance(error, EngineRefused) and self.outage.answered

    def down_waited_s(self) -> float | None:
        """Seconds this call waited for its refusing endpoint (from its first refused connect
        until now); ``None`` when it was never refused."""
        return None if self.first_refused is None else time.monotonic() - self.first_refused

    def retrying(self) -> AsyncRetrying:
        """A tenacity ``AsyncRetrying`` that applies this policy and re-raises the last error."""
        return AsyncRetrying(
            retry=retry_if_exception(self.retryable),
            stop=self._stop,
            wait=self._wait,
            reraise=True,
        )

    @staticmethod
    def _error(state: RetryCallState) -> EngineError:
        assert state.outcome is not None
        error = state.outcome.exception()
        assert isinstance(error, EngineError)
        return error

    def _stop(self, state: RetryCallState) -> bool:
        elapsed = state.seconds_since_start or 0.0
        return self.give_up(state.attempt_number, self._error(state), elapsed)

    def _wait(self, state: RetryCallState) -> float:
        error = self._error(state)
        if self._waits_for(error):
            since = self.outage.since
            left = self.settings.engine_down_timeout_s - (
                0.0 if since is None else time.monotonic() - since
            )
            return max(0.0, min(self.settings.down_probe_s, left))
        wait = self.backoff_s(state.attempt_number, error)
        if isinstance(error, EngineModelLoading):
            left = self.settings.load_timeout_s - (state.seconds_since_start or 0.0)
            wait = max(0.0, min(wait, left))
        return wait
