"""Number and time formatting shared by the report writers (pure, deterministic)."""

from __future__ import annotations

import time
from collections.abc import Iterable

NONE = "–"
"""Shown for a value that was not measured or does not exist."""


def num(value: float | None, digits: int = 2, unit: str = "") -> str:
    """``value`` with ``digits`` decimals and an optional unit, or ``–`` for ``None``."""
    if value is None:
        return NONE
    text = f"{value:.{digits}f}"
    if text.startswith("-") and float(text) == 0.0:
        text = text[1:]
    return f"{text} {unit}" if unit else text


def pct(value: float | None) -> str:
    """A percentage with one decimal (``60.0``) or ``–``."""
    return num(value, 1)


def mb(value: float | None) -> str:
    """Megabytes without decimals (``2449``) or ``–``."""
    return num(value, 0)


def gb(value_mb: float | None) -> str:
    """Megabytes shown as GB (1024 MB) with two decimals, or ``–``."""
    return NONE if value_mb is None else num(value_mb / 1024, 2)


def utc(ts: float | None) -> str:
    """Epoch seconds as ``YYYY-MM-DD HH:MM:SS UTC`` (``–`` for ``None``)."""
    if ts is None:
        return NONE
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


def iso_utc(ts: float | None) -> str | None:
    """Epoch seconds as ``YYYY-MM-DDTHH:MM:SS`` in UTC (an Obsidian date-time property)."""
    if ts is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts))


def joined(values: Iterable[str], empty: str = NONE) -> str:
    """``a, b, c`` or ``empty``."""
    items = list(values)
    return ", ".join(items) if items else empty
