"""The answer-flag counts: per model, how many of its answers carry each flag (SPEC §7
``answer_flags``, :mod:`touchstone_ray.answers`). Shown only where some answer has a flag."""

from __future__ import annotations

from collections import Counter

from touchstone_ray.answers import ANSWER_FLAGS
from touchstone_ray.doc import Block, Code, Heading, Para, Table, cell, num_cell
from touchstone_ray.report._data import ReportData

__all__ = ["flag_counts", "flag_table"]


def flag_counts(data: ReportData) -> dict[str, Counter[str]]:
    """Model → flag → answers of that model with the flag (each answer counts once per flag);
    models in the order of the report's rows, every model with a record listed."""
    models = list(dict.fromkeys([m for m, _ in data.rows] + [r.model for r in data.responses]))
    counts: dict[str, Counter[str]] = {m: Counter() for m in models}
    for r in data.responses:
        counts[r.model].update(set(r.answer_flags))
    return counts


def flag_table(data: ReportData, t: dict[str, str]) -> list[Block]:
    """A heading, a note and the table of :func:`flag_counts` (one column per flag that
    occurs, in :data:`~touchstone_ray.answers.ANSWER_FLAGS` order, then any other name a
    record carries), or ``[]`` when no answer has a flag."""
    counts = flag_counts(data)
    seen = {f for c in counts.values() for f in c}
    if not seen:
        return []
    flags = [f for f in ANSWER_FLAGS if f in seen] + sorted(seen - set(ANSWER_FLAGS))
    answers = Counter(r.model for r in data.responses)
    rows = tuple(
        (
            cell(Code(model)),
            num_cell(str(answers[model]), answers[model]),
            *(num_cell(str(c[f]), c[f]) for f in flags),
        )
        for model, c in counts.items()
    )
    return [
        Heading(3, t["answer_flags"]),
        Para((t["answer_flags_note"],), small=True),
        Table((t["model"], t["n_answers"], *flags), rows, sortable=True),
    ]
