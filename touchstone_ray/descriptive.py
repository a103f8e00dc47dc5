"""Descriptive statistics every floor uses: a percentile and a median over the values present.

Pure Python, so the client actor's worker needs no numpy; :func:`percentile` gives
``numpy.percentile``'s default (``linear``) result bit for bit, its interpolation included
(numpy's ``_lerp``: from the upper neighbour when the weight is ≥ 0.5).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable

__all__ = ["median", "percentile"]


def percentile(values: Iterable[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100) of ``values``, linear interpolation between the closest
    ranks (Hyndman & Fan type 7, ``numpy.percentile``'s default); ``None`` when empty."""
    ordered = sorted(values)
    if not ordered:
        return None
    pos = (len(ordered) - 1) * (q / 100)
    lo = math.floor(pos)
    weight = pos - lo
    below, above = ordered[lo], ordered[min(lo + 1, len(ordered) - 1)]
    step = above - below
    return float(above - step * (1 - weight) if weight >= 0.5 else below + step * weight)


def median(values: Iterable[float | None], *, as_float: bool = False) -> float | None:
    """The median of the values that are not ``None`` (:func:`statistics.median`: the mean of
    the middle two for an even count); ``None`` when there are none. ``as_float`` turns an
    integer median into a float (a figure that is always written as one)."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    middle = statistics.median(present)
    return float(middle) if as_float else middle
