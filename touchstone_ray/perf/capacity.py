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
