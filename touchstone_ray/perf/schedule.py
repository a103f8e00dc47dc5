"""When a perf point's requests are due, and how late each one went out.

Two ways to keep ``concurrency`` requests in flight:

* **closed loop** (the default, as GuideLLM's ``concurrent`` profile): ``concurrency`` streams,
  each sends its next request the moment its previous one ended. A request is *scheduled* at
  that moment; each stream's first request is its discarded warm-up, so every measured one
  has a predecessor.
* **lockstep** (``--lockstep``, as llama-benchy's ``--concurrency``): rounds of
  ``concurrency`` requests sent together; a round starts when every request of the round
  before has ended (the first after a discarded warm-up round), and all of its requests are
  scheduled at that moment, so a round's last send includes the time the others' took.

* **open loop** (``--rate R``, as GuideLLM's ``constant`` and ``poisson`` profiles): requests
  are due on a schedule fixed before the point starts (:func:`arrival_offsets`) whatever the
  server does; a request due while ``--max-in-flight`` are out is recorded ``dropped``, never
  sent late. The point stops early, ``saturated``, when :class:`SaturationWatch` finds the
  in-flight count growing for good (:func:`saturation_test` for W s running).

Send lateness (SPEC §7b ``send_lateness_s``) = ``sent_at`` − ``scheduled_at``, s: the load
generator's own delay between "due" and "the request headers were written" (building the
body, taking a connection, the event loop getting to it). A late generator sends fewer
requests than the point claims and its TTFT starts later than the user's would, as GuideLLM
(``request_dispatch_delay``) and AIPerf track it.
"""

from __future__ import annotations

import contextlib
import gc
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

Arrival = Literal["constant", "poisson"]
ARRIVALS: tuple[Arrival, ...] = ("constant", "poisson")
"""The ``--arrival`` processes of an open-loop point."""
MAX_IN_FLIGHT = 256
"""``--max-in-flight`` default: requests out at once beyond which a due one is ``dropped``."""
SATURATION_WINDOW_S = 3.0
"""W (s): the sliding window of :func:`saturation_test`, and how long it must keep finding
growth before :class:`SaturationWatch` calls the point saturated (so at the earliest 2 W s
into the point; a ramp-up to a steady in-flight count shorter than W never counts)."""
SATURATION_SAMPLE_S = 0.05
"""How often (s) the open loop samples its in-flight count for :func:`saturation_test`."""
SATURATION_MIN_GROWTH = 4.0
"""Least growth (requests) of the fitted in-flight line over one window for it to count: a
slope whose CI is above zero but that adds under this many requests in W s is noise around
a steady queue, not a server falling behind."""
SATURATION_TEST_EVERY_S = 0.25
"""How often (s) :class:`SaturationWatch` runs :func:`saturation_test`."""
SATURATION_CONFIDENCE = 0.95
"""Two-sided confidence of the slope's interval in :func:`saturation_test`."""


def send_lateness_s(scheduled_at: float, sent_at: float | None) -> float | None:
    """``sent_at − scheduled_at`` (s, both ``time.time()``); ``None`` when the request was
    never sent (``sent_at`` unknown)."""
    return None if sent_at is None else sent_at - scheduled_at


def lockstep_rounds(first_run: int, last_run: int, concurrency: int) -> list[list[int]]:
    """The runs ``first_run .. last_run`` (inclusive, counted from 1) in rounds of
    ``concurrency``, the last round possibly shorter: ``(1, 8, 3)`` →
    ``[[1, 2, 3], [4, 5, 6], [7, 8]]``; empty when ``first_run > last_run``. Raises
    ValueError for ``concurrency < 1`` or ``first_run < 1``."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be ≥ 1, not {concurrency}")
    if first_run < 1:
        raise ValueError(f"runs count from 1, not {first_run}")
    runs = list(range(first_run, last_run + 1))
    return [runs[i : i + concurrency] for i in range(0, len(runs), concurrency)]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block, then a collection.

    A full collection in a client actor (a Ray worker holds a large heap) stops its event loop
    for tens of ms, and any request due then is sent that much late; a point's measured
    requests run without it, as ``timeit`` does. The objects that already exist are frozen
    first (``gc.freeze``), so the collection afterwards only walks what the point made. The
    collector's previous on/off state is restored."""
    was_enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()
        gc.collect()


def arrival_offsets(
    rate: float,
    arrival: Arrival,
    *,
    n: int | None = None,
    duration_s: float | None = None,
    seed: int = 0,
) -> list[float]:
    """When each request of an open-loop point is due: offsets (s) from the point's start,
    ascending, the first at 0.

    ``constant``: ``i / rate``. ``poisson``: a Poisson process of intensity ``rate``
    (requests/s), i.e. independent exponential gaps of mean ``1 / rate`` (the first request
    at 0, as GuideLLM's ``poisson`` profile), drawn from ``numpy.random.default_rng(seed)``
    so the same seed gives the same schedule. Exactly ``n`` requests, or every one due before
    ``duration_s`` (s). Raises ValueError for ``rate ≤ 0``, an unknown ``arrival`` or neither
    or both of ``n`` and ``duration_s``."""
    if not rate > 0 or not math.isfinite(rate):
        raise ValueError(f"rate must be > 0 requests/s, not {rate}")
    if arrival not in ARRIVALS:
        raise ValueError(f"unknown arrival {arrival!r}; use one of {', '.join(ARRIVALS)}")
    if (n is None) == (duration_s is None):
        raise ValueError("give exactly one of n and duration_s")
    if n is not None:
        count = n
    else:  # enough draws to pass duration_s but with a chance below 1e-9 (6 σ of a Poisson count)
        expected = rate * (duration_s or 0.0)
        count = (
            max(1, math.ceil(expected))
            if arrival == "constant"
            else int(expected + 6 * math.sqrt(expected) + 10)
        )
    if arrival == "constant":
        offsets = [i / rate for i in range(count)]
    else:
        import numpy as np

        gaps = np.random.default_rng(seed).exponential(1.0 / rate, size=max(count - 1, 0))
        offsets = [0.0, *np.cumsum(gaps).tolist()]
    if duration_s is not None:
        offsets = [t for t in offsets if t < duration_s] or [0.0]
    return offsets


@dataclass(frozen=True)
class SaturationVerdict:
    """What :func:`saturation_test` found over one window."""

    saturated: bool
    slope_per_s: float
    """Fitted growth of the in-flight count (requests/s)."""
    ci_low_per_s: float
    """Lower end of the slope's two-sided :data:`SATURATION_CONFIDENCE` interval."""
    reason: str
    """One line: the slope, its interval and the window (empty when not saturated)."""


def saturation_test(
    times_s: Sequence[float],
    in_flight: Sequence[float],
    window_s: float = SATURATION_WINDOW_S,
    min_growth: float = SATURATION_MIN_GROWTH,
) -> SaturationVerdict | None:
    """The over-saturation test over the samples of the last ``window_s`` s (``times_s``
    ascending, s; ``in_flight`` requests out at each): an ordinary least-squares line
    through them (``scipy.stats.linregress``) whose slope's two-sided
    :data:`SATURATION_CONFIDENCE` interval (slope ± t₀.₉₇₅,ₙ₋₂ × stderr, Student's t) lies
    above zero **and** whose growth over the window (slope × ``window_s``) is at least
    ``min_growth`` requests means the server falls behind for good: requests arrive faster
    than it ends them, so its queue grows without bound. ``None`` while the samples span
    less than ``window_s`` or are fewer than 3 (no interval)."""
    if len(times_s) < 3 or times_s[-1] - times_s[0] < window_s * 0.999:
        return None
    start = times_s[-1] - window_s
    pairs = [(t, y) for t, y in zip(times_s, in_flight, strict=True) if t >= start]
    if len(pairs) < 3:
        return None
    xs, ys = [t for t, _ in pairs], [y for _, y in pairs]
    if max(ys) == min(ys):
        return SaturationVerdict(False, 0.0, 0.0, "")
    from scipy import stats  # type: ignore[import-untyped]  # lazy, ~0.6 s: warm it first

    fit = stats.linregress(xs, ys)
    t_crit = float(stats.t.ppf(0.5 + SATURATION_CONFIDENCE / 2, len(xs) - 2))
    slope, low = float(fit.slope), float(fit.slope - t_crit * fit.stderr)
    saturated = low > 0 and slope * window_s >= min_growth
    reason = (
        f"in-flight grew {slope:.3g} requests/s over the last {window_s:g} s "
        f"({SATURATION_CONFIDENCE * 100:.0f} % CI from {low:.3g})"
        if saturated
        else ""
    )
    return SaturationVerdict(saturated, slope, low, reason)


class SaturationWatch:
    """The over-saturation stop of one open-loop point: :meth:`sample` takes the in-flight
    count (requests) at ``t`` s from the point's start; every :data:`SATURATION_TEST_EVERY_S`
    s from ``window_s`` on it runs :func:`saturation_test` on the last ``window_s`` s, and
    :meth:`sample` returns the reason (one line) once every test of the last ``window_s`` s
    found the in-flight count growing: the slope's CI stayed above zero for W s. A burst
    of arrivals (Poisson) or a server that stalls for a moment makes one window grow, not
    every window for W s; a queue that grows for good does."""

    def __init__(self, window_s: float = SATURATION_WINDOW_S) -> None:
        self.window_s = window_s
        self.times: list[float] = []
        self.counts: list[float] = []
        self.growing_since: float | None = None
        """``t`` (s) of the first test of the current run of tests that all found growth."""
        self._next_test = window_s

    def sample(self, t: float, in_flight: int) -> str | None:
        """Record one sample; the reason once the point is saturated, else ``None``."""
        self.times.append(t)
        self.counts.append(float(in_flight))
        while len(self.times) > 1 and self.times[1] <= t - self.window_s:
            del self.times[0], self.counts[0]  # keep one sample at or before t − W: a full W
        if t < self._next_test:
            return None
        self._next_test = t + SATURATION_TEST_EVERY_S
        verdict = saturation_test(self.times, self.counts, self.window_s)
        if verdict is None or not verdict.saturated:
            self.growing_since = None
            return None
        if self.growing_since is None:
            self.growing_since = t
        if t - self.growing_since < self.window_s:
            return None
        return f"{verdict.reason}, growing for {t - self.growing_since:.3g} s"


def warm_saturation_test() -> None:
    """Import scipy and run :func:`saturation_test` once, so the first real test does not
    stop an open loop's event loop for the import (~0.6 s)."""
    saturation_test([0.0, 1.0, 2.0], [0.0, 1.0, 3.0], window_s=2.0)
