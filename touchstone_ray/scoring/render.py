"""The scorecard as text: ``scorecard.md`` (written by the same document writer as
``report.md``) and the terminal table of ``touchstone-ray scorecard``. Both read only the
:class:`~.scorecard_model.Scorecard` and speak its ``language`` (:mod:`touchstone_ray.lang`).

:func:`ranking_rows` is the one builder of a ranking table (header and cells per row); the
report's ranking uses it with its own columns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from touchstone_ray.doc import (
    Block,
    Bullets,
    Callout,
    Code,
    Document,
    Heading,
    Inline,
    Para,
    Table,
    cell,
)
from touchstone_ray.doc import render_markdown as write_markdown
from touchstone_ray.lang import levels, scorecard_labels
from touchstone_ray.scoring.agreement import AgreementStat
from touchstone_ray.scoring.scorecard_model import Scorecard, ScorecardRow

__all__ = [
    "NUMERIC_COLUMNS",
    "SCORECARD_COLUMNS",
    "RankingCell",
    "RankingColumn",
    "ko_text",
    "level_text",
    "ranking_cell",
    "ranking_rows",
    "ranking_table",
    "render_markdown",
    "scorecard_document",
    "with_checks",
]

_NONE = "–"

RankingColumn = Literal[
    "rank",
    "model",
    "variant",
    "quality",
    "level",
    "ko",
    "red_flags",
    "mean",
    "counts",
    "ttft_p50",
    "ttft_p95",
    "tps",
    "e2e_p50",
    "peak_ram",
    "delta",
    "checks",
]
"""A column of a ranking table; its header is the label of the same name."""

SCORECARD_COLUMNS: tuple[RankingColumn, ...] = tuple(
    c for c in get_args(RankingColumn) if c != "checks"
)
"""The columns of ``scorecard.md``'s ranking and of the terminal table, in order
(:func:`with_checks` adds ``checks`` where some answer had a check)."""

NUMERIC_COLUMNS = frozenset({"rank", "quality", "mean", "ttft_p50", "ttft_p95", "tps", "e2e_p50",
                             "peak_ram", "delta", "checks"})  # fmt: skip
"""The columns whose cells are figures (a table may right-align and sort them by value)."""


@dataclass(frozen=True)
class RankingCell:
    """One cell of a ranking row: its text and the value it sorts by (``None``: no value)."""

    text: str
    value: float | None = None


def _num(value: float | None, digits: int = 2) -> str:
    return _NONE if value is None else f"{value:.{digits}f}"


def _labels(card: Scorecard) -> tuple[dict[str, str], dict[str, str]]:
    return scorecard_labels(card.language), levels(card.language)


def _load_mark(row: ScorecardRow) -> str:
    """`` (c = N)`` beside the speed of a row measured under load (concurrency > 1, SPEC §9)."""
    c = row.concurrency
    return f" (c = {c})" if c is not None and c > 1 else ""


def ko_text(row: ScorecardRow, t: dict[str, str]) -> str:
    """``bestanden`` / ``passed``, or ``nicht bestanden: <reason>`` (labels ``t``)."""
    return t["passed"] if row.ko_passed else f"{t['failed']}: {row.ko_reason or _NONE}"


def level_text(row: ScorecardRow, lang: str) -> str:
    """The row's rubric level in ``lang`` (``–`` without one)."""
    level = row.rubric_level
    return levels(lang).get(level, str(level)) if level else _NONE


def ranking_cell(
    row: ScorecardRow, column: RankingColumn, lang: str, *, load_mark: bool = True
) -> RankingCell:
    """The cell of ``row`` in ``column`` (labels and levels of ``lang``); ``load_mark`` adds
    `` (c = N)`` to the TTFT p50 of a row measured under load. Figures: quality %, scores
    1..5, times s, tok/s, MB; ``checks`` failed/all check outcomes (sorted by the failed;
    ``–`` for a row without any)."""
    t = scorecard_labels(lang)
    r = row
    if column == "rank":
        return RankingCell(str(r.rank), r.rank)
    if column in ("model", "variant"):
        return RankingCell(r.model if column == "model" else r.variant)
    if column == "quality":
        return RankingCell(_num(r.quality_pct, 1), r.quality_pct)
    if column == "level":
        return RankingCell(level_text(r, lang))
    if column == "ko":
        return RankingCell(ko_text(r, t), 1.0 if r.ko_passed else 0.0)
    if column == "red_flags":
        return RankingCell(", ".join(r.red_flagged) or _NONE)
    if column == "mean":
        return RankingCell(_num(r.mean_answer_score), r.mean_answer_score)
    if column == "counts":
        return RankingCell(f"{r.n_scored}/{r.n_unscored}/{r.n_judge_errors}")
    if column == "checks":
        if not r.n_checks:
            return RankingCell(_NONE)
        return RankingCell(f"{r.n_checks_failed}/{r.n_checks}", r.n_checks_failed)
    if column == "ttft_p50":
        mark = _load_mark(r) if load_mark else ""
        return RankingCell(_num(r.ttft_p50_s, 3) + mark, r.ttft_p50_s)
    figures: dict[str, tuple[float | None, int]] = {
        "ttft_p95": (r.ttft_p95_s, 3),
        "tps": (r.decode_tps_median, 1),
        "e2e_p50": (r.e2e_p50_s, 3),
        "peak_ram": (r.peak_ram_mb, 0),
        "delta": (r.model_delta_mb, 0),
    }
    value, digits = figures[column]
    return RankingCell(_num(value, digits), value)


def with_checks(
    columns: Sequence[RankingColumn], rows: Sequence[ScorecardRow]
) -> tuple[RankingColumn, ...]:
    """``columns`` with ``checks`` (failed / all judge-free check outcomes) after
    ``red_flags`` (at the end without it) when some row's answers had a check; else
    unchanged."""
    out = tuple(columns)
    if not any(r.n_checks for r in rows) or "checks" in out:
        return out
    at = out.index("red_flags") + 1 if "red_flags" in out else len(out)
    return (*out[:at], "checks", *out[at:])


def ranking_rows(
    rows: Sequence[ScorecardRow],
    lang: str,
    columns: Sequence[RankingColumn] = SCORECARD_COLUMNS,
    *,
    load_mark: bool = True,
) -> tuple[list[str], list[list[RankingCell]]]:
    """The one ranking-table builder: the header (labels of ``lang``) and, per row of
    ``rows`` (in their order), its :func:`ranking_cell` in each of ``columns``. The writers
    turn the cells into their own table (``scorecard.md``, the terminal table, the report's
    ranking)."""
    t = scorecard_labels(lang)
    head = [t[c] for c in columns]
    body = [[ranking_cell(r, c, lang, load_mark=load_mark) for c in columns] for r in rows]
    return head, body


def _ranking_text(card: Scorecard) -> tuple[list[str], list[list[str]]]:
    head, body = ranking_rows(card.rows, card.language, with_checks(SCORECARD_COLUMNS, card.rows))
    return head, [[c.text for c in row] for row in body]


def ranking_table(card: Scorecard) -> str:
    """The ranking as an aligned plain-text table (header, rule, one line per row)."""
    head, body = _ranking_text(card)
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    t, _ = _labels(card)
    title = f"{t['title']}: {card.title} "
    title += f"({card.pack_id} v{card.pack_version}); {t['judges']}: "
    title += ", ".join(card.judges)
    lines = [title]
    if card.simulated:
        lines.append(t["simulated"])
    lines += [line(head), line(["-" * w for w in widths]), *(line(r) for r in body)]
    return "\n".join(lines)


def _table(head: Sequence[str], body: Sequence[Sequence[str]]) -> Table:
    return Table(tuple(head), tuple(tuple(cell(c) for c in row) for row in body))


def _categories(card: Scorecard, t: dict[str, str]) -> Table:
    names = card.categories.names if card.categories else {}
    rows = card.categories.rows if card.categories else []
    head = [t["model"], t["variant"], *(f"{cid} {name}" for cid, name in names.items())]
    body = [[r.model, r.variant, *(_num(r.means.get(cid)) for cid in names)] for r in rows]
    return _table(head, body)


def _dimensions(card: Scorecard, t: dict[str, str]) -> Table:
    dims = card.dimensions
    head = [t["model"], t["variant"], *(f"{d.id} {d.name} ×{d.weight}" for d in dims)]
    body = [
        [r.model, r.variant, *(_num(r.dim_scores.get(d.id), 1) for d in dims)] for r in card.rows
    ]
    return _table(head, body)


def _variant_ab(card: Scorecard, t: dict[str, str]) -> Table:
    head = [t["model"], "A", "B", t["diff"], t["ci"], t["sign_p"], t["pairs"], t["e2e_diff"]]
    head.append(t["note"])
    body = []
    for c in card.variant_ab:
        ci = f"[{_num(c.ci_low)}, {_num(c.ci_high)}]" if c.ci_low is not None else _NONE
        body.append(
            [
                c.model,
                c.variant_a,
                c.variant_b,
                _num(c.mean_diff),
                ci,
                _num(c.sign_test_p, 3),
                str(c.n_pairs),
                _num(c.e2e_median_diff_s, 3),
                c.warning or "",
            ]
        )
    return _table(head, body)


def _stat(stat: AgreementStat, t: dict[str, str]) -> str:
    if stat.value is None:
        return f"{t['undefined']} ({stat.reason})"
    return f"{stat.value:.3f} (n = {stat.n_items})"


def _agreement(card: Scorecard, t: dict[str, str]) -> Bullets:
    agreement = card.agreement
    items: list[tuple[Inline, ...]] = []
    for dim, stat in agreement.dimension_alpha.items():
        items.append((f"{t['alpha']}, {dim}: {_stat(stat, t)}",))
    kappa = agreement.red_flag_kappa
    items.append((f"{t['kappa']} ({kappa.method}): {_stat(kappa, t)}",))
    for pair, stat in agreement.ranking_tau.items():
        items.append((f"{t['tau']}, {pair}: {_stat(stat, t)}",))
    return Bullets(tuple(items))


def scorecard_document(card: Scorecard) -> Document:
    """``scorecard.md`` as a document of the report's writer (:mod:`touchstone_ray.report`):
    title, ranking, dimensions, categories, variant A/B, agreement."""
    t, _ = _labels(card)
    head, body = _ranking_text(card)
    title = f"{t['title']}: {card.title}"
    vote = card.agreement.red_flag_vote
    meta: tuple[Inline, ...] = (
        Code(card.pack_id),
        f" v{card.pack_version} · {t['judges']}: ",
        *(part for i, j in enumerate(card.judges) for part in ((", " if i else ""), Code(j))),
        f" · {t['vote']} {vote}",
    )
    blocks: list[Block] = [Heading(1, title), Para(meta)]
    if card.simulated:
        blocks.append(Callout("warning", t["simulated"], collapsed=False))
    if card.aborted_judges:
        blocks.append(Para((f"{t['aborted']}: " + ", ".join(card.aborted_judges),)))
    blocks += [Heading(2, t["ranking"]), _table(head, body)]
    blocks += [Heading(2, t["dimensions"]), _dimensions(card, t)]
    blocks += [Heading(2, t["categories"]), _categories(card, t)]
    if card.variant_ab:
        blocks += [Heading(2, t["ab"]), _variant_ab(card, t)]
    if len(card.judges) > 1:
        blocks += [Heading(2, t["agreement"]), _agreement(card, t)]
    front: dict[str, object] = {
        "pack": card.pack_id,
        "pack_version": card.pack_version,
        "judges": list(card.judges),
        "simulated": card.simulated,
    }
    return Document(title=title, lang=card.language, frontmatter=front, blocks=blocks)


def render_markdown(card: Scorecard) -> str:
    """``scorecard.md``: :func:`scorecard_document` through the writer of ``report.md``
    (:func:`touchstone_ray.doc.render_markdown`: YAML frontmatter, Obsidian
    tables, every text escaped)."""
    return write_markdown(scorecard_document(card))
