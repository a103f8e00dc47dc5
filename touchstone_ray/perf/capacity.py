"""The capacity search (``--capacity``): the highest concurrency at which at least
:data:`SLO_SHARE` of requests meet the SLO.

Doubling from 1 until a concurrency fails (or :data:`MAX_CONCURRENCY`), then bisection between
the last good and the first bad one. Assumes the share falls as concurrency grows (a server's
queue only gets longer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SLO_SHARE = 0.9
"""Share of requests (0..1) that must meet the SLO."""
MAX_CONCURRENCY = 256
"""Largest concurrency the search tries."""


def meets(share: float | None, threshold: float = SLO_SHARE) -> bool:
    """Whether a point's SLO share passes: ``share`` ≥ ``threshold``; a point none of whose
    requests counts (``share`` ``None``) does not pass."""
    return share is not None and share >= threshold


def search_capacity(
    share_at: Callable[[int], float | None],
    threshold: float = SLO_SHARE,
    max_concurrency: int = MAX_CONCURRENCY,
) -> tuple[int, dict[int, float | None]]:
    """``(capacity, tried)``: the highest concurrency whose ``share_at(c)`` passes
    (:func:`meets`; 0 when even 1 fails) and every concurrency tried → its share."""
    tried: dict[int, float | None] = {}

    def good(c: int) -> bool:
        tried[c] = share_at(c)
        return meets(tried[c], threshold)

    if not good(1):
        return 0, tried
    lo, hi = 1, None
    while hi is None:
        nxt = min(lo * 2, max_concurrency)
        if nxt == lo:
            return lo, tried
        if good(nxt):
            lo = nxt
        else:
            hi = nxt
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if good(mid):
            lo = mid
        else:
            hi = mid
    return lo, tried


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
