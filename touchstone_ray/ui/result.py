"""The result page (issue item 3): the report's own sections, rendered live from the bundle.

The page is :func:`touchstone_ray.report.build_document` of the bundle (judged when it has a
``scorecard.json``, else the rating-task version) through the report's HTML writer; only its
answers section is replaced by the same per-answer blocks (the report's ``answer_blocks``:
verdicts with rationales, flags hit, speed and resource figures) for the answers that pass
the filters ``prompt``, ``model``, ``variant``, ``score`` (exact 1..5 in any verdict),
``red_flag`` (``1``: a verdict raised one) and ``check_failed`` (``1``: one of the answer's
judge-free checks failed; offered where some answer had a check). Each answer shows its
flags and check outcomes beside its verdicts. A K.-o. block on top names, per row, whether the
rule passed, the branch that fired (the scorecard's ``ko_reason``), the red-flagged prompts
and the prompts where a judge raised a red flag outside ``red_flag_prompts`` (under
``curated`` these do not knock out; shown so they are not lost), under the pack's K.-o. rule
in the report's words (:func:`touchstone_ray.report.ko_rule_lines`).

Issue 31 items 4 and 5: the page speaks the pack's ``language`` throughout (the report's
labels, :func:`touchstone_ray.lang.ui_labels` around them), and every column head that names a
figure carries the glossary's definition and unit as its tooltip
(:func:`touchstone_ray.lang.header_tip`; the pack-built heads by :func:`report_tips`).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from touchstone_ray.doc import REPORT_CSS, Block, Heading, HtmlWriter
from touchstone_ray.errors import BundleError
from touchstone_ray.lang import header_tip, labels, ui_labels
from touchstone_ray.records import EvalResponse
from touchstone_ray.report import (
    ReportData,
    answer_blocks,
    build_document,
    ko_rule_lines,
    load_report_data,
)
from touchstone_ray.ui._page import e, th
from touchstone_ray.ui.judge_card import judge_card_html

__all__ = ["FILTERS", "filter_answers", "perf_result_html", "report_tips", "result_html"]

FILTERS = ("prompt", "model", "variant", "score", "red_flag", "check_failed")
"""Query parameters of the answers filter."""


def filter_answers(data: ReportData, filters: dict[str, str]) -> list[EvalResponse]:
    """The bundle's answers that pass ``filters`` (see the module docstring), in report
    order."""
    out = []
    score = filters.get("score", "")
    for r in data.responses:
        if filters.get("prompt") and r.prompt_id != filters["prompt"]:
            continue
        if filters.get("model") and r.model != filters["model"]:
            continue
        if filters.get("variant") and r.variant != filters["variant"]:
            continue
        verdicts = data.verdicts.get(r.key, [])
        if score.isdigit() and not any(v.score == int(score) for v in verdicts):
            continue
        if filters.get("red_flag") == "1" and not any(v.red_flag for v in verdicts):
            continue
        if filters.get("check_failed") == "1" and not any(c.ok is False for c in r.checks):
            continue
        out.append(r)
    return out


def _select(name: str, values: list[str], chosen: str, u: dict[str, str]) -> str:
    opts = [f'<option value="">{e(u["all"])}</option>'] + [
        f'<option value="{e(v)}"{" selected" if v == chosen else ""}>{e(v)}</option>'
        for v in values
    ]
    label = e(u[f"f_{name}"])
    return f'<label>{label}<br><select name="{name}">{"".join(opts)}</select></label>'


def _filter_form(data: ReportData, filters: dict[str, str], action: str) -> str:
    u = ui_labels(data.lang)
    red = " checked" if filters.get("red_flag") == "1" else ""
    prompts = [p.id for p in data.pack.prompts()]
    variants = [v.id for v in data.pack.prompt_variants]
    return (
        f'<form class="filters" id="answer-filters" method="get" action="{e(action)}">'
        + _select("prompt", prompts, filters.get("prompt", ""), u)
        + _select("model", sorted({r.model for r in data.responses}), filters.get("model", ""), u)
        + _select("variant", variants, filters.get("variant", ""), u)
        + _select("score", ["1", "2", "3", "4", "5"], filters.get("score", ""), u)
        + f'<label><input type="checkbox" name="red_flag" value="1"{red}> '
        f"{e(u['f_red_flag'])}</label>"
        + _check_filter(data, filters, u)
        + f'<button type="submit">{e(u["filter_answers"])}</button></form>'
    )


def _check_filter(data: ReportData, filters: dict[str, str], u: dict[str, str]) -> str:
    """The ``check_failed`` checkbox, where some answer of the bundle had a check."""
    if not any(r.checks for r in data.responses):
        return ""
    checked = " checked" if filters.get("check_failed") == "1" else ""
    return (
        f'<label><input type="checkbox" name="check_failed" value="1"{checked}> '
        f"{e(u['f_check_failed'])}</label>"
    )


def report_tips(data: ReportData) -> dict[str, str]:
    """The report's column heads built from the pack (head text → English glossary term):
    each dimension's ``<id> ×<weight>`` and each judge's column hold dimension scores, each
    category's ``<id> <name>`` the mean answer score (:mod:`touchstone_ray.report`'s
    ranking, per-judge and per-category tables)."""
    tips = {f"{d.id} ×{d.weight}": "Dimension score" for d in data.pack.dimensions}
    tips.update({judge: "Dimension score" for judge in data.judges})
    tips.update({f"{c.id} {c.name}": "Mean answer" for c in data.pack.categories})
    return tips


def _ko_block(data: ReportData) -> str:
    if not data.card:
        return ""
    t, u = labels(data.lang), ui_labels(data.lang)
    rows = []
    for (model, variant), row in data.card_rows.items():
        passed = row.ko_passed
        badge = (
            f'<span class="badge ko-pass">{e(t["passed"])}</span>'
            if passed
            else '<span class="badge ko-fail">K.-o.</span>'
        )
        flagged = ", ".join(row.red_flagged) or "—"
        raised = sorted(
            {
                v.prompt_id
                for r in data.responses
                if (r.model, r.variant) == (model, variant)
                for v in data.verdicts.get(r.key, [])
                if v.red_flag
            }
        )
        curated = set(data.pack.ko_rule.red_flag_prompts)
        other = ", ".join(p for p in raised if p not in curated) or "—"
        rows.append(
            f"<tr><td>{e(model)} · {e(variant)}</td><td>{badge}</td>"
            f'<td class="ko-reason">{e(row.ko_reason)}</td><td>{e(flagged)}</td>'
            f'<td class="uncurated">{e(other)}</td></tr>'
        )
    lang = data.lang
    rule = "".join(f"<li>{e(line)}</li>" for line in ko_rule_lines(data.pack, t))
    heads = (u["h_row"], t["ko"], u["h_branch"], u["h_flagged"], u["h_uncurated"])
    return (
        f'<section id="ko"><h2>{e(t["ko_rule"])}</h2><ol class="muted" id="ko-rule">{rule}</ol>'
        f"<table><thead><tr>{''.join(th(lang, h) for h in heads)}</tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def result_html(root: Path, filters: dict[str, str], action: str) -> tuple[str, str]:
    """``(title, body HTML)`` of the result page of the bundle ``root``.

    Raises :class:`BundleError` for a bundle the report cannot read.
    """
    try:
        data = load_report_data(root, judged=True)
    except BundleError:
        data = load_report_data(root, judged=False)
    t = labels(data.lang)
    doc = build_document(data)
    before: list[Block] = []
    after: list[Block] = []
    target = before
    for block in doc.blocks:
        if isinstance(block, Heading) and block.level == 2 and block.text == t["answers"]:
            target = []
        elif isinstance(block, Heading) and block.level == 2 and block.text == t["glossary"]:
            target = after
        target.append(block)
    shown = filter_answers(data, filters)
    answers: list[Block] = []
    for r in shown:
        answers += answer_blocks(data, r, t)
    w = HtmlWriter(partial(header_tip, data.lang, extra=report_tips(data)))
    count = ui_labels(data.lang)["answer_count"].format(shown=len(shown), total=len(data.responses))
    body = (
        f'<style>{REPORT_CSS}</style><div class="report">'
        + "".join(w.block(b) for b in before[:1])
        + _ko_block(data)
        + "".join(w.block(b) for b in before[1:])
        + f'<h2 id="answers">{e(t["answers"])}</h2>'
        + _filter_form(data, filters, action)
        + f'<p class="muted" id="answer-count">{e(count)}</p>'
        + f'<div id="answer-list">{"".join(w.block(b) for b in answers)}</div>'
        + "".join(w.block(b) for b in after)
        + "</div>"
        + judge_card_html(action.removeprefix("/run/"), data.lang)  # the judge card (issue 33)
    )
    return doc.title, body


def perf_result_html(root: Path) -> tuple[str, str]:
    """``(title, body HTML)`` of the result page of the perf bundle ``root``: the sections of
    its ``report.html`` (:func:`touchstone_ray.perf.report.perf_document`), rendered live.

    Raises :class:`BundleError` for a run still going (its summary is written when it ends)
    and for a perf bundle without a readable ``summary.json`` (one that died before).
    """
    from touchstone_ray.bundle import Bundle
    from touchstone_ray.perf.report import HEAD_TERMS, perf_document

    if Bundle(root).run_state() == "running":
        raise BundleError(
            f"{root.name}: the perf run is still going; its result is shown here when it ends"
        )
    doc = perf_document(root)
    w = HtmlWriter(partial(header_tip, doc.lang, extra=HEAD_TERMS))
    body = f'<style>{REPORT_CSS}</style><div class="report">'
    return doc.title, body + "".join(w.block(b) for b in doc.blocks) + "</div>"
