"""The percentile and median every floor uses (``touchstone_ray.descriptive``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from touchstone_ray.descriptive import median, percentile


@given(
    st.lists(st.floats(0, 1e4, allow_nan=False), min_size=1, max_size=40),
    st.integers(0, 100),
)
def test_percentile_is_numpys_linear_bit_for_bit(values: list[float], q: int) -> None:
    assert percentile(values, q) == float(np.percentile(values, q))


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([], 50, None),
        ([3.0], 99, 3.0),
        ([1.0, 2.0, 3.0, 4.0], 50, 2.5),
        ([1, 2, 3, 4, 5], 95, 4.8),
        ([0.1, 0.2, 0.3], 0, 0.1),
        ([0.1, 0.2, 0.3], 100, 0.3),
    ],
)
def test_percentile_values(values: list[float], q: float, expected: float | None) -> None:
    assert percentile(values, q) == expected


def test_median_skips_missing_values_and_keeps_the_type() -> None:
    assert median([None, 3, 1, None, 2]) == 2
    assert isinstance(median([1, 2, 3]), int)
    assert median([1, 2, 3], as_float=True) == 2.0
    assert isinstance(median([1, 2, 3], as_float=True), float)
    assert median([1.0, 4.0]) == 2.5
    assert median([None, None]) is None
    assert median([]) is None
