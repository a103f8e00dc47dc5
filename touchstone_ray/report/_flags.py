"""The answer-flag counts: per model, how many of its answers carry each flag (SPEC §7
``answer_flags``, :mod:`touchstone_ray.answers`). Shown only where some answer has a flag.

And the rows whose answers show a misconfigured server (:func:`misconfigured_rows`): more than
:data:`MISCONFIG_SHARE` of a (model, variant)'s answers carry ``template_leak`` or
``prompt_echo``. Such a row gets a warning above the ranking (:func:`misconfig_warning`) and a
mark in it (:func:`misconfig_mark`): its scores rate the server's chat template, not the model.
"""

from __future__ import annotations

from collections import Counter

from touchstone_ray.answers import ANSWER_FLAGS
from touchstone_ray.doc import Block, Bullets, Callout, Code, Heading, Para, Table, cell, num_cell
from touchstone_ray.report._data import ReportData, RowKey

__all__ = [
    "MISCONFIG_FLAGS",
    "MISCONFIG_SHARE",
    "flag_counts",
    "flag_table",
    "misconfig_mark",
    "misconfig_warning",
    "misconfigured_rows",
]

MISCONFIG_FLAGS = frozenset({"template_leak", "prompt_echo"})
"""The flags that show a server misconfiguration (a chat template that does not fit the model)
rather than the model's quality."""

MISCONFIG_SHARE = 0.5
"""A row is misconfigured when more than this share of its answers (ok records) carry one of
:data:`MISCONFIG_FLAGS` ("mostly", issue 28)."""


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


def misconfigured_rows(data: ReportData) -> dict[RowKey, tuple[int, int]]:
    """Row → ``(answers with a misconfiguration flag, answers)`` for each row where the first
    is more than :data:`MISCONFIG_SHARE` of the second; answers are the row's ok records (a
    failed cell has no answer to flag). Rows in the report's order."""
    flagged: Counter[RowKey] = Counter()
    answers: Counter[RowKey] = Counter()
    for r in data.responses:
        if not r.ok:
            continue
        key = (r.model, r.variant)
        answers[key] += 1
        flagged[key] += bool(MISCONFIG_FLAGS.intersection(r.answer_flags))
    keys = list(dict.fromkeys([*data.rows, *answers]))
    return {
        k: (flagged[k], answers[k])
        for k in keys
        if answers[k] and flagged[k] > MISCONFIG_SHARE * answers[k]
    }


def misconfig_warning(data: ReportData, t: dict[str, str]) -> list[Block]:
    """The warning above the ranking: one line per misconfigured row with its share of
    flagged answers; ``[]`` when no row is misconfigured."""
    rows = misconfigured_rows(data)
    if not rows:
        return []
    items = tuple(
        (
            Code(f"{model} / {variant}"),
            ": " + t["misconfigured_row"].format(n=n, total=total, pct=round(100 * n / total)),
        )
        for (model, variant), (n, total) in rows.items()
    )
    body = (Para((t["misconfigured"],)), Bullets(items), Para((t["misconfigured_fix"],)))
    return [Callout("warning", t["misconfigured_title"], blocks=body, collapsed=False)]


def misconfig_mark(t: dict[str, str]) -> str:
    """The mark beside a misconfigured row's model in the ranking (`` ⚠ <label>``)."""
    return f" ⚠ {t['misconfigured_mark']}"
