"""The scorecard as text: ``scorecard.md`` (written by the same document writer as
``report.md``) and the terminal table of ``touchstone-ray scorecard``. Both read only the
scorecard dict (``scorecard.json``) and speak its ``language`` (:mod:`touchstone_ray.lang`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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

__all__ = ["ranking_table", "render_markdown", "scorecard_document"]

_NONE = "–"


def _num(value: Any, digits: int = 2) -> str:
    if value is None:
        return _NONE
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return f"{value:.{digits}f}"
    return str(value)


def _labels(card: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    lang = card.get("language", "en")
    return scorecard_labels(str(lang)), levels(str(lang))


def _load_mark(row: Mapping[str, Any]) -> str:
    """`` (c = N)`` beside the speed of a row measured under load (concurrency > 1, SPEC §9)."""
    c = row.get("concurrency")
    return f" (c = {c})" if isinstance(c, int) and c > 1 else ""


def _ranking_rows(card: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    t, levels = _labels(card)
    head = [
        t["rank"],
        t["model"],
        t["variant"],
        t["quality"],
        t["level"],
        t["ko"],
        t["red_flags"],
        t["mean"],
        t["counts"],
        t["ttft_p50"],
        t["ttft_p95"],
        t["tps"],
        t["e2e_p50"],
        t["peak_ram"],
        t["delta"],
    ]
    body = []
    for row in card["rows"]:
        ko = t["passed"] if row["ko_passed"] else f"{t['failed']}: {row['ko_reason']}"
        level = row.get("rubric_level")
        body.append(
            [
                str(row["rank"]),
                str(row["model"]),
                str(row["variant"]),
                _num(row["quality_pct"], 1),
                levels.get(level, level) if level else _NONE,
                ko,
                ", ".join(row["red_flagged"]) or _NONE,
                _num(row["mean_answer_score"]),
                f"{row['n_scored']}/{row['n_unscored']}/{row['n_judge_errors']}",
                _num(row["ttft_p50_s"], 3) + _load_mark(row),
                _num(row["ttft_p95_s"], 3),
                _num(row["decode_tps_median"], 1),
                _num(row["e2e_p50_s"], 3),
                _num(row["peak_ram_mb"], 0),
                _num(row["model_delta_mb"], 0),
            ]
        )
    return head, body


def ranking_table(card: Mapping[str, Any]) -> str:
    """The ranking as an aligned plain-text table (header, rule, one line per row)."""
    head, body = _ranking_rows(card)
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    t, _ = _labels(card)
    title = f"{t['title']}: {card.get('pack_title', card['pack_id'])} "
    title += f"({card['pack_id']} v{card['pack_version']}); {t['judges']}: "
    title += ", ".join(card["judges"])
    lines = [title]
    if card.get("simulated"):
        lines.append(t["simulated"])
    lines += [line(head), line(["-" * w for w in widths]), *(line(r) for r in body)]
    return "\n".join(lines)


def _table(head: Sequence[str], body: Sequence[Sequence[str]]) -> Table:
    return Table(tuple(head), tuple(tuple(cell(c) for c in row) for row in body))


def _categories(card: Mapping[str, Any], t: dict[str, str]) -> Table:
    section = card.get("categories") or {}
    names: dict[str, str] = section.get("names", {})
    head = [t["model"], t["variant"], *(f"{cid} {name}" for cid, name in names.items())]
    body = [
        [r["model"], r["variant"], *(_num(r["means"].get(cid)) for cid in names)]
        for r in section.get("rows", [])
    ]
    return _table(head, body)


def _dimensions(card: Mapping[str, Any], t: dict[str, str]) -> Table:
    dims = card.get("dimensions") or []
    head = [t["model"], t["variant"], *(f"{d['id']} {d['name']} ×{d['weight']}" for d in dims)]
    body = [
        [r["model"], r["variant"], *(_num(r["dim_scores"].get(d["id"]), 1) for d in dims)]
        for r in card["rows"]
    ]
    return _table(head, body)


def _variant_ab(card: Mapping[str, Any], t: dict[str, str]) -> Table:
    head = [t["model"], "A", "B", t["diff"], t["ci"], t["sign_p"], t["pairs"], t["e2e_diff"]]
    head.append(t["note"])
    body = []
    for c in card.get("variant_ab", []):
        ci = (
            f"[{_num(c['ci_low'])}, {_num(c['ci_high'])}]" if c.get("ci_low") is not None else _NONE
        )
        body.append(
            [
                c["model"],
                c["variant_a"],
                c["variant_b"],
                _num(c["mean_diff"]),
                ci,
                _num(c["sign_test_p"], 3),
                str(c["n_pairs"]),
                _num(c["e2e_median_diff_s"], 3),
                c.get("warning") or "",
            ]
        )
    return _table(head, body)


def _stat(stat: Mapping[str, Any], t: dict[str, str]) -> str:
    if stat.get("value") is None:
        return f"{t['undefined']} ({stat.get('reason')})"
    return f"{stat['value']:.3f} (n = {stat.get('n_items')})"


def _agreement(card: Mapping[str, Any], t: dict[str, str]) -> Bullets:
    agreement = card.get("agreement") or {}
    items: list[tuple[Inline, ...]] = []
    for dim, stat in (agreement.get("dimension_alpha") or {}).items():
        items.append((f"{t['alpha']}, {dim}: {_stat(stat, t)}",))
    kappa = agreement.get("red_flag_kappa")
    if kappa:
        items.append((f"{t['kappa']} ({kappa.get('method')}): {_stat(kappa, t)}",))
    for pair, stat in (agreement.get("ranking_tau") or {}).items():
        items.append((f"{t['tau']}, {pair}: {_stat(stat, t)}",))
    return Bullets(tuple(items))


def scorecard_document(card: Mapping[str, Any]) -> Document:
    """``scorecard.md`` as a document of the report's writer (:mod:`touchstone_ray.report`):
    title, ranking, dimensions, categories, variant A/B, agreement."""
    t, _ = _labels(card)
    head, body = _ranking_rows(card)
    title = f"{t['title']}: {card.get('pack_title', card['pack_id'])}"
    vote = (card.get("agreement") or {}).get("red_flag_vote", "")
    meta: tuple[Inline, ...] = (
        Code(str(card["pack_id"])),
        f" v{card['pack_version']} · {t['judges']}: ",
        *(part for i, j in enumerate(card["judges"]) for part in ((", " if i else ""), Code(j))),
        f" · {t['vote']} {vote}",
    )
    blocks: list[Block] = [Heading(1, title), Para(meta)]
    if card.get("simulated"):
        blocks.append(Callout("warning", t["simulated"], collapsed=False))
    if card.get("aborted_judges"):
        blocks.append(Para((f"{t['aborted']}: " + ", ".join(card["aborted_judges"]),)))
    blocks += [Heading(2, t["ranking"]), _table(head, body)]
    blocks += [Heading(2, t["dimensions"]), _dimensions(card, t)]
    blocks += [Heading(2, t["categories"]), _categories(card, t)]
    if card.get("variant_ab"):
        blocks += [Heading(2, t["ab"]), _variant_ab(card, t)]
    if len(card["judges"]) > 1:
        blocks += [Heading(2, t["agreement"]), _agreement(card, t)]
    front: dict[str, object] = {
        "pack": card["pack_id"],
        "pack_version": card["pack_version"],
        "judges": list(card["judges"]),
        "simulated": bool(card.get("simulated")),
    }
    return Document(
        title=title, lang=str(card.get("language", "en")), frontmatter=front, blocks=blocks
    )


def render_markdown(card: Mapping[str, Any]) -> str:
    """``scorecard.md``: :func:`scorecard_document` through the writer of ``report.md``
    (:func:`touchstone_ray.doc.render_markdown`: YAML frontmatter, Obsidian
    tables, every text escaped)."""
    return write_markdown(scorecard_document(card))
