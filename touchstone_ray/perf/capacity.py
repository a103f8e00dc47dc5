"""The capacity search (``--capacity``): the highest concurrency at which at least
:data:`SLO_SHARE` of requests meet the SLO.

Doubling from 1 until a concurrency fails (or :data:`MAX_CONCURRENCY`), then bisection between
the last good and the first bad one. Assumes the share falls as concurrency grows (a server's
queue only gets longer).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

SLO_SHARE = 0.9
"""Share of requests (0..1) that must meet the SLO."""
MAX_CONCURRENCY = 256
"""Largest concurrency the search tries."""


def meets(share: float | None, threshold: float = SLO_SHARE) -> bool:
    """Whether a point's SLO share passes: ``share`` ≥ ``threshold``; a point none of whose
    requests counts (``share`` ``None``) does not pass."""
    return share is not None and share >= threshold


class CapacitySearch:
    """The search one step at a time, for a driver that runs each point when it likes:
    :attr:`next` is the concurrency to try (``None`` once the search is over), :meth:`record`
    takes its share; then :attr:`capacity` is the highest concurrency that passed
    (:func:`meets`; 0 when even 1 fails) and :attr:`tried` every concurrency tried → its
    share, in the order tried."""

    def __init__(self, threshold: float = SLO_SHARE, max_concurrency: int = MAX_CONCURRENCY):
        self.threshold = threshold
        self.max_concurrency = max_concurrency
        self.tried: dict[int, float | None] = {}
        self.capacity: int | None = None
        """The answer, once :attr:`next` is ``None``."""
        self._steps = self._search()
        self.next: int | None = next(self._steps)

    def record(self, share: float | None) -> None:
        """The share (0..1, ``None``: no request counts) of concurrency :attr:`next`."""
        if self.next is None:
            raise RuntimeError("the capacity search is over")
        self.tried[self.next] = share
        try:
            self.next = self._steps.send(share)
        except StopIteration as stop:
            self.next, self.capacity = None, stop.value

    def _search(self) -> Generator[int, float | None, int]:
        """Yields each concurrency to try and is sent its share; returns the capacity."""
        if not meets((yield 1), self.threshold):
            return 0
        lo, hi = 1, None
        while hi is None:
            nxt = min(lo * 2, self.max_concurrency)
            if nxt == lo:
                return lo
            if meets((yield nxt), self.threshold):
                lo = nxt
            else:
                hi = nxt
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if meets((yield mid), self.threshold):
                lo = mid
            else:
                hi = mid
        return lo


def search_capacity(
    share_at: Callable[[int], float | None],
    threshold: float = SLO_SHARE,
    max_concurrency: int = MAX_CONCURRENCY,
) -> tuple[int, dict[int, float | None]]:
    """``(capacity, tried)``: the highest concurrency whose ``share_at(c)`` passes
    (:func:`meets`; 0 when even 1 fails) and every concurrency tried → its share
    (:class:`CapacitySearch`, each share asked at once)."""
    search = CapacitySearch(threshold, max_concurrency)
    while search.next is not None:
        search.record(share_at(search.next))
    assert search.capacity is not None
    return search.capacity, search.tried


def capacity_line(model: str, host: str, capacity: int, slo: dict[str, float]) -> str:
    """``M on H: N users at once with TTFT < 0.5 s and ≥ 20 tok/s for 90 %``; for capacity 0
    ``M on H: not even 1 user at once with … for 90 %``."""
    parts = []
    if "ttft" in slo:
        parts.append(f"TTFT < {slo['ttft']:g} s")
    if "tpot" in slo:
        parts.append(f"≥ {1 / slo['tpot']:g} tok/s")
    users = {0: "not even 1 user", 1: "1 user"}.get(capacity, f"{capacity} users")
    return (
        f"{model} on {host}: {users} at once with {' and '.join(parts)} for {SLO_SHARE * 100:.0f} %"
    )


def capacity_points(
    model: str,
    host: str,
    context: int,
    tried: dict[int, float | None],
    threshold: float = SLO_SHARE,
) -> list[dict[str, Any]]:
    """The points the search probed, in the order of their concurrency: ``[{point, concurrency,
    slo_share (0..1, null when none of its requests counts), meets_slo}]``; ``point`` is the
    key prefix of its requests (``model|host|context|concurrency``) and ``meets_slo``
    :func:`meets` (``slo_share`` ≥ ``threshold``), the test that decided the search."""
    return [
        {
            "point": f"{model}|{host}|{context}|{c}",
            "concurrency": c,
            "slo_share": share,
            "meets_slo": meets(share, threshold),
        }
        for c, share in sorted(tried.items())
    ]


def sweep_rates(low_rps: float, high_rps: float, k: int) -> list[float]:
    """``k`` offered rates (requests/s) evenly spaced strictly between ``low_rps`` and
    ``high_rps``: ``low + (high − low) × i / (k + 1)`` for i = 1 … k (GuideLLM's ``sweep``
    puts its constant rates between the synchronous and the throughput rate the same way);
    rounded to 4 significant digits (they name the points). When the two are (nearly) equal
    (no gain from parallel requests) the rates run from 0 instead: ``high × i / (k + 1)``."""
    lo, hi = sorted((low_rps, high_rps))
    if hi <= 0:
        raise ValueError(f"the closed-loop throughput must be > 0 requests/s, not {hi}")
    if hi <= lo * 1.01:
        lo = 0.0
    return [float(f"{lo + (hi - lo) * i / (k + 1):.4g}") for i in range(1, k + 1)]


def sustainable(figures: dict[str, Any], slo: dict[str, float]) -> bool:
    """Whether an open-loop point (its ``summary.json`` figures) is sustained: not
    ``saturated``, nothing ``dropped``, and, with an SLO, at least :data:`SLO_SHARE` of its
    requests meet it (:func:`meets`)."""
    if figures.get("saturated") or figures.get("dropped"):
        return False
    return not slo or meets(figures.get("slo_share"))


class SweepSearch:
    """``perf --sweep`` one step at a time: :attr:`next` is the next point to run (``None``
    once over), as ``("closed", concurrency)`` or ``("rate", requests/s)``; :meth:`record`
    takes its figures (``summary.json``'s per-point dict).

    First the closed loop at concurrency 1 and at ``saturation_concurrency`` (each one's
    throughput = ok requests / the point's wall time, requests/s), then ``k`` open-loop
    rates spread between the two (:func:`sweep_rates`), so the sustainable rate lies below
    the closed-loop throughput at saturation. Then :attr:`result` is the highest
    rate that is :func:`sustainable` (its goodput beside it), ``None`` when none is."""

    def __init__(self, k: int, saturation_concurrency: int, slo: dict[str, float]) -> None:
        self.k = k
        self.saturation_concurrency = saturation_concurrency
        self.slo = slo
        self.closed_rps: dict[int, float | None] = {}
        self.rates: list[dict[str, Any]] = []
        self.next: tuple[str, float] | None = ("closed", 1)
        self._todo: list[float] = []

    def record(self, figures: dict[str, Any]) -> None:
        """The figures of the point :attr:`next` named."""
        if self.next is None:
            raise RuntimeError("the sweep is over")
        kind, value = self.next
        if kind == "closed":
            wall, n_ok = figures.get("wall_s"), figures.get("n_ok") or 0
            self.closed_rps[int(value)] = n_ok / wall if wall else None
            if int(value) == 1 and self.saturation_concurrency > 1:
                self.next = ("closed", self.saturation_concurrency)
                return
            rps = [r for r in self.closed_rps.values() if r]
            if not rps:
                self.next = None
                return
            self._todo = sweep_rates(min(rps), max(rps), self.k)
        else:
            self.rates.append(
                {
                    "rate": value,
                    "achieved_rate": figures.get("achieved_rate"),
                    "saturated": bool(figures.get("saturated")),
                    "dropped": figures.get("dropped") or 0,
                    "slo_share": figures.get("slo_share"),
                    "goodput_rps": figures.get("goodput_rps"),
                    "sustainable": sustainable(figures, self.slo),
                }
            )
        self.next = ("rate", self._todo.pop(0)) if self._todo else None

    @property
    def result(self) -> dict[str, Any] | None:
        """The highest sustainable rate's entry of :attr:`rates`, ``None`` when none is."""
        ok = [r for r in self.rates if r["sustainable"]]
        return max(ok, key=lambda r: float(r["rate"])) if ok else None


def sweep_line(model: str, host: str, best: dict[str, Any] | None, slo: dict[str, float]) -> str:
    """``M on H: sustains 7.5 requests/s (goodput 7.2 requests/s with TTFT < 0.5 s for 90 %)``;
    ``M on H: no rate sustained`` when none is."""
    if best is None:
        return f"{model} on {host}: no rate of the sweep sustained"
    parts = []
    if "ttft" in slo:
        parts.append(f"TTFT < {slo['ttft']:g} s")
    if "tpot" in slo:
        parts.append(f"≥ {1 / slo['tpot']:g} tok/s")
    good = best.get("goodput_rps")
    tail = (
        f" (goodput {good:.3g} requests/s with {' and '.join(parts)} for {SLO_SHARE * 100:.0f} %)"
        if parts and good is not None
        else ""
    )
    return f"{model} on {host}: sustains {best['rate']:g} requests/s{tail}"
