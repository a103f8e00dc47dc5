"""Mutable server state of the simulator: counters, model loading, fault decisions, traces.

All of it is touched only from the server's event loop, so it needs no locks.
"""

from __future__ import annotations

import asyncio
import time
from array import array
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Literal

from touchstone_ray.sim._config import SimConfig, SimModelKnobs
from touchstone_ray.sim._text import rng_for

StreamFault = Literal["stall", "disconnect", "error_event", "garbage"]

_CHANNELS = (
    "headers",
    "role",
    "content",
    "reasoning",
    "final",
    "usage",
    "done",
    "error",
    "garbage",
    "comment",
    "body",
    "tool",
)
_CODE = {name: i for i, name in enumerate(_CHANNELS)}


@dataclass
class Trace:
    """Ground truth of one chat request: epoch seconds (``time.time()``) when the headers were
    sent and when each chunk was written and flushed, with the channel it carried."""

    id: int
    protocol: str
    model: str
    key: str
    stream: bool
    t_received: float
    status: int = 200
    outcome: str = "ok"
    finish_reason: str | None = None
    t_headers: float | None = None
    t_end: float | None = None
    _times: array[float] = field(default_factory=lambda: array("d"))
    _codes: bytearray = field(default_factory=bytearray)

    def mark(self, channel: str) -> None:
        """Record that a chunk of ``channel`` was just written (``headers`` sets t_headers)."""
        now = time.time()
        if channel == "headers":
            self.t_headers = now
            return
        self._times.append(now)
        self._codes.append(_CODE[channel])

    def to_json(self) -> dict[str, Any]:
        """The JSON form served by ``/sim/trace``; ``chunks`` is ``[[t_epoch_s, channel]]``."""
        return {
            "id": self.id,
            "protocol": self.protocol,
            "model": self.model,
            "key": self.key,
            "stream": self.stream,
            "status": self.status,
            "outcome": self.outcome,
            "finish_reason": self.finish_reason,
            "t_received": self.t_received,
            "t_headers": self.t_headers,
            "t_end": self.t_end,
            "chunks": [[t, _CHANNELS[c]] for t, c in zip(self._times, self._codes, strict=True)],
        }


@dataclass(frozen=True)
class Faults:
    """What goes wrong with one request, decided up front and deterministically."""

    fail: bool
    """HTTP 500 before streaming."""
    stream_fault: StreamFault | None
    """The mid-stream fault, if any."""
    fault_at: int
    """Tokens sent before the stream fault strikes (at least 1)."""
    comment_seed: str
    """Seed material for the per-chunk SSE comment draws."""


@dataclass
class _ModelState:
    requested_at: float  # monotonic seconds of the first request since (re)load
    expires_at: float | None = None  # epoch seconds; None = never
    cold: bool = True  # the first served request after loading reports load_duration


class SimState:
    """Counters, load state and traces of one simulated server."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self._next_id = 0
        self.traces: deque[Trace] = deque(maxlen=config.trace_limit)
        self.models: dict[str, _ModelState] = {}
        self.seen: dict[str, None] = {}
        self.in_flight: Counter[str] = Counter()
        self.generating: Counter[str] = Counter()
        """Requests per model holding a slot (generating) right now."""
        self._slots: dict[str, asyncio.Semaphore] = {}
        self.reset()

    def slot(self, model: str, slots: int) -> asyncio.Semaphore:
        """The semaphore of ``model``'s ``slots`` generation slots (made on first use)."""
        sem = self._slots.get(model)
        if sem is None:
            sem = self._slots[model] = asyncio.Semaphore(slots)
        return sem

    def reset(self) -> None:
        """Forget counters, traces, fail_first_n progress and loaded models (in-flight stays)."""
        self.requests: Counter[str] = Counter()
        self.control: Counter[str] = Counter()
        self.by_key: Counter[str] = Counter()
        self.served: Counter[str] = Counter()
        self.max_in_flight: Counter[str] = Counter(dict(self.in_flight))
        self.traces.clear()
        self.models.clear()

    def begin(self, model: str, key: str, *, control: bool = False) -> int:
        """Count a request as started and in flight; returns its ordinal for ``key`` (0-based)."""
        self.seen.setdefault(model, None)
        self.in_flight[model] += 1
        self.max_in_flight[model] = max(self.max_in_flight[model], self.in_flight[model])
        if control:
            self.control[model] += 1
            return 0
        self.requests[model] += 1
        ordinal = self.by_key[key]
        self.by_key[key] += 1
        return ordinal

    def end(self, model: str) -> None:
        """Count a request as finished."""
        self.in_flight[model] -= 1

    def new_trace(self, protocol: str, model: str, key: str, stream: bool) -> Trace:
        """Start a trace and keep it (the oldest is dropped beyond ``trace_limit``)."""
        self._next_id += 1
        trace = Trace(self._next_id, protocol, model, key, stream, time.time())
        self.traces.append(trace)
        return trace

    def load_remaining_s(self, model: str, knobs: SimModelKnobs) -> float:
        """Seconds until ``model`` is loaded; the first request for it starts the load."""
        state = self.models.get(model)
        if state is not None and state.expires_at is not None and time.time() > state.expires_at:
            del self.models[model]
            state = None
        if state is None:
            state = self.models[model] = _ModelState(time.monotonic())
        return max(0.0, state.requested_at + knobs.load_s - time.monotonic())

    def take_cold(self, model: str) -> bool:
        """Whether this is the first served request since ``model`` was loaded (once)."""
        state = self.models.get(model)
        if state is None or not state.cold:
            return False
        state.cold = False
        return True

    def touch(self, model: str, keep_alive_s: float | None, *, set_expiry: bool) -> None:
        """After a request: unload at once (``keep_alive_s == 0``), or set the expiry."""
        if keep_alive_s == 0:
            self.models.pop(model, None)
            return
        state = self.models.get(model)
        if state is not None and set_expiry:
            state.expires_at = None if keep_alive_s is None else time.time() + keep_alive_s

    def unload(self, model: str) -> None:
        """Unload ``model`` now (the next request loads it again)."""
        self.models.pop(model, None)

    def loaded(self) -> list[tuple[str, float | None]]:
        """Loaded models (load finished, not expired) with their expiry, epoch seconds."""
        now_m, now = time.monotonic(), time.time()
        out = []
        for name, st in self.models.items():
            knobs = self.config.for_model(name)
            if st.requested_at + knobs.load_s <= now_m and (
                st.expires_at is None or st.expires_at > now
            ):
                out.append((name, st.expires_at))
        return out

    def decide_faults(
        self, knobs: SimModelKnobs, model: str, key: str, ordinal: int, n_tokens: int
    ) -> Faults:
        """Decide failures from a PRNG seeded by (seed, request key, ordinal): reproducible
        per test, yet a retry (next ordinal) draws anew. ``fail_first_n`` forces 500s."""
        seed = self.config.seed
        served = self.served[model]
        self.served[model] += 1
        fail = served < knobs.fail_first_n or (
            rng_for("fail", seed, key, ordinal).random() < knobs.fail_rate
        )
        fault: StreamFault | None = None
        rates: list[tuple[StreamFault, float]] = [
            ("stall", knobs.stall_rate),
            ("disconnect", knobs.disconnect_rate),
            ("error_event", knobs.error_event_rate),
            ("garbage", knobs.garbage_rate),
        ]
        for name, rate in rates:
            if rate > 0 and rng_for(name, seed, key, ordinal).random() < rate:
                fault = name
                break
        at = rng_for("fault_at", seed, key, ordinal).randint(1, max(1, n_tokens - 1))
        return Faults(fail, fault, at, f"{seed}:{key}:{ordinal}")

    def stats(self) -> dict[str, Any]:
        """The ``/sim/stats`` document."""
        return {
            "requests": dict(self.requests),
            "control": dict(self.control),
            "in_flight": {m: n for m, n in self.in_flight.items()},
            "max_in_flight": dict(self.max_in_flight),
            "requests_by_key": dict(self.by_key),
            "loaded": [name for name, _ in self.loaded()],
        }
