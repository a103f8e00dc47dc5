"""Flags a judge names, checked against the prompt's own flags (SPEC §10).

The judge prompt numbers a prompt's flags with labels: red flags ``R1``, ``R2``, … and green
flags ``G1``, ``G2``, … — **1-based**, in the pack's order (:func:`flag_label`). An entry of
``red_flags_hit`` / ``green_flags_hit`` matches a flag of its own list when it is

- the flag's text, after whitespace and case normalisation (``"  Erfindet  eine Zahl "``);
- its label, with or without the letter (``"R2"``, ``"r2"``, ``"2"``, ``"R2."``);
- its label followed by its text (``"R2: Erfindet eine Zahl"``).

A matched entry is stored as the flag's text (as written in the pack), once. Every other entry
(another list's label, a number out of range, a paraphrase, ``"<Red Flag>"``) is dropped from
the list and kept in ``unknown_flags``. An empty entry is dropped silently.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["CheckedFlags", "FlagKind", "check_flags", "flag_label", "normalise_flag"]

FlagKind = Literal["R", "G"]
"""``R`` for a red flag, ``G`` for a green flag."""

_LABEL_RE = re.compile(r"(?P<kind>[RG])?\s*(?P<num>\d{1,3})\s*[.:)]?", re.IGNORECASE)
_LABEL_TEXT_RE = re.compile(
    r"(?P<kind>[RG])?\s*(?P<num>\d{1,3})\s*[.:)\-–]\s*(?P<text>.+)", re.IGNORECASE | re.DOTALL
)


def flag_label(kind: FlagKind, index0: int) -> str:
    """The label of the flag at 0-based ``index0`` of a list: ``flag_label("R", 0) == "R1"``."""
    return f"{kind}{index0 + 1}"


def normalise_flag(text: str) -> str:
    """``text`` with runs of whitespace made one space, stripped, case-folded."""
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class CheckedFlags:
    """The outcome of :func:`check_flags`."""

    red_flags_hit: list[str] = field(default_factory=list)
    """Red flags of the prompt the judge named (pack text, in first-named order)."""
    green_flags_hit: list[str] = field(default_factory=list)
    """Green flags of the prompt the judge named (pack text, in first-named order)."""
    unknown_flags: list[str] = field(default_factory=list)
    """Entries matching no flag of their list, as the judge wrote them."""


def _match(entry: str, kind: FlagKind, flags: Sequence[str]) -> int | None:
    """0-based index of the flag ``entry`` names in ``flags``, or ``None``."""
    norm = normalise_flag(entry)
    texts = [normalise_flag(f) for f in flags]
    if norm in texts:
        return texts.index(norm)
    for pattern in (_LABEL_RE, _LABEL_TEXT_RE):
        m = pattern.fullmatch(entry.strip())
        if m is None:
            continue
        letter = (m.group("kind") or kind).upper()
        index0 = int(m.group("num")) - 1
        if letter != kind or not 0 <= index0 < len(flags):
            return None
        if "text" in m.groupdict() and normalise_flag(m.group("text")) != texts[index0]:
            return None
        return index0
    return None


def check_flags(
    red_hit: Sequence[str],
    green_hit: Sequence[str],
    red_flags: Sequence[str],
    green_flags: Sequence[str],
) -> CheckedFlags:
    """Split a judge's named flags into the prompt's red and green flags and unknown entries.

    ``red_hit`` / ``green_hit`` are the judge's lists; ``red_flags`` / ``green_flags`` the
    prompt's (pack order; labels ``R1…`` / ``G1…``, 1-based). See the module docstring.
    """
    out = CheckedFlags()
    _sort_into(red_hit, "R", red_flags, out.red_flags_hit, out.unknown_flags)
    _sort_into(green_hit, "G", green_flags, out.green_flags_hit, out.unknown_flags)
    return out


def _sort_into(
    entries: Sequence[str],
    kind: FlagKind,
    flags: Sequence[str],
    target: list[str],
    unknown: list[str],
) -> None:
    for entry in entries:
        if not entry.strip():
            continue
        index0 = _match(entry, kind, flags)
        if index0 is None:
            unknown.append(entry)
        elif flags[index0] not in target:
            target.append(flags[index0])
