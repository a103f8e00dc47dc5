"""Repeat stability in the report: per row, how many repeated prompts got one answer on every
repeat (:mod:`touchstone_ray.scoring.stability`), with the reason temperature 0 does not
guarantee it. Shown only where some prompt has at least two ok repeats."""

from __future__ import annotations

from collections import defaultdict

from touchstone_ray.doc import Block, Code, Heading, Para, Table, cell, num_cell
from touchstone_ray.doc.fmt import NONE, pct
from touchstone_ray.records import EvalResponse
from touchstone_ray.report._data import ReportData, RowKey
from touchstone_ray.scoring import repeat_stability

__all__ = ["stability_table"]


def stability_table(data: ReportData, t: dict[str, str]) -> list[Block]:
    """A heading, the note why repeats differ, and per row (report order) the prompts with
    repeats, the stable ones, the stability % and each unstable prompt with its number of
    distinct answers (``E1 (2)``); ``[]`` when no prompt has two ok repeats."""
    by_row: dict[RowKey, list[EvalResponse]] = defaultdict(list)
    for r in data.responses:
        by_row[(r.model, r.variant)].append(r)
    rows = []
    for key in data.rows:
        stability = repeat_stability(by_row.get(key, []))
        if not stability.n_prompts:
            continue
        unstable = ", ".join(f"{p} ({n})" for p, n in stability.unstable.items()) or NONE
        rows.append(
            (
                cell(Code(key[0])),
                cell(key[1]),
                num_cell(str(stability.n_prompts), stability.n_prompts),
                num_cell(str(stability.n_stable), stability.n_stable),
                num_cell(pct(stability.stability_pct), stability.stability_pct),
                cell(unstable),
            )
        )
    if not rows:
        return []
    header = (t["model"], t["variant"], t["repeat_prompts"], t["repeat_stable"])
    return [
        Heading(3, t["repeat_stability"]),
        Para((t["repeat_stability_note"],), small=True),
        Table((*header, t["repeat_stability_pct"], t["repeat_unstable"]), tuple(rows)),
    ]
