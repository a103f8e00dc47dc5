"""The judge-free checks in the report (SPEC §3 ``checks``, §7 ``checks``): per (model,
variant) how many check outcomes passed, failed and were not measured, and which checks failed
(:func:`check_table`, shown only where some answer had a check), and per answer the line of
its outcomes beside its flags (:func:`answer_check_lines`). They come from the records, so the
unjudged report shows them too.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from touchstone_ray.doc import Block, Code, Heading, Inline, Para, Strong, Table, cell, num_cell
from touchstone_ray.pack import AnswerCheck, Prompt
from touchstone_ray.records import CheckOutcome, EvalResponse
from touchstone_ray.report._data import ReportData, RowKey

__all__ = [
    "answer_check_lines",
    "check_counts",
    "check_table",
    "check_text",
    "outcome_text",
    "prompt_check_line",
]


def check_counts(data: ReportData) -> dict[RowKey, tuple[int, int, int, int, Counter[str]]]:
    """Row → ``(answers with checks, outcomes passed, failed, not measured, failed
    "<prompt>/<check>" → answers)``; rows in the report's order, only rows whose answers
    had a check."""
    answers: Counter[RowKey] = Counter()
    passed: Counter[RowKey] = Counter()
    failed: Counter[RowKey] = Counter()
    unmeasured: Counter[RowKey] = Counter()
    which: dict[RowKey, Counter[str]] = defaultdict(Counter)
    for r in data.responses:
        if not r.checks:
            continue
        key = (r.model, r.variant)
        answers[key] += 1
        for o in r.checks:
            if o.ok is None:
                unmeasured[key] += 1
            elif o.ok:
                passed[key] += 1
            else:
                failed[key] += 1
                which[key][f"{r.prompt_id}/{o.id}"] += 1
    keys = list(dict.fromkeys([*data.rows, *answers]))
    return {
        k: (answers[k], passed[k], failed[k], unmeasured[k], which[k]) for k in keys if answers[k]
    }


def check_table(data: ReportData, t: dict[str, str]) -> list[Block]:
    """A heading, a note and per row: answers with checks, check outcomes, passed, failed,
    not measured and the failed checks (``E4/no_names ×2``, pack order); ``[]`` when no
    answer had a check."""
    counts = check_counts(data)
    if not counts:
        return []
    order = {
        f"{p.id}/{c.id}": i
        for i, (p, c) in enumerate((p, c) for p in data.pack.prompts() for c in p.checks)
    }
    rows = []
    for (model, variant), (n, ok, bad, unmeasured, which) in counts.items():
        names = sorted(which, key=lambda name: (order.get(name, len(order)), name))
        failed = ", ".join(f"{name} ×{which[name]}" if which[name] > 1 else name for name in names)
        total = ok + bad + unmeasured
        rows.append(
            (
                cell(Code(model)),
                cell(variant),
                num_cell(str(n), n),
                num_cell(str(total), total),
                num_cell(str(ok), ok),
                num_cell(str(bad), bad),
                num_cell(str(unmeasured), unmeasured),
                cell(failed or "–"),
            )
        )
    head = (
        t["model"],
        t["variant"],
        t["n_answers"],
        t["n_checks"],
        t["checks_ok"],
        t["checks_bad"],
        t["not_measured"],
        t["failed_checks"],
    )
    return [
        Heading(3, t["answer_checks"]),
        Para((t["answer_checks_note"],), small=True),
        Table(head, tuple(rows), sortable=True),
    ]


def outcome_text(o: CheckOutcome, knock_out: bool, t: dict[str, str]) -> str:
    """One outcome in words: ``✓ kurz``, ``✗ json (json_schema): <detail>``, ``– deutsch
    (language) not measured: <detail>``; ``[K.-o.]`` after the id of a ``knock_out`` check."""
    name = f"{o.id} [K.-o.]" if knock_out else o.id
    if o.ok:
        return f"✓ {name}"
    if o.ok is False:
        return f"✗ {name} ({o.type}): {o.detail}"
    return f"– {name} ({o.type}) {t['not_measured']}: {o.detail}"


def answer_check_lines(data: ReportData, r: EvalResponse, t: dict[str, str]) -> list[Block]:
    """The answer's flags (``answer_flags``) and its checks' outcomes, one small line each;
    ``[]`` for an answer with neither."""
    blocks: list[Block] = []
    if r.answer_flags:
        blocks.append(
            Para((Strong(f"{t['answer_flags']}: "), ", ".join(r.answer_flags)), small=True)
        )
    if r.checks:
        try:
            knock_out = {c.id for c in data.pack.prompt(r.prompt_id).checks if c.knock_out}
        except KeyError:
            knock_out = set()
        parts: list[Inline] = [Strong(f"{t['answer_checks']}: ")]
        parts.append(" · ".join(outcome_text(o, o.id in knock_out, t) for o in r.checks))
        blocks.append(Para(tuple(parts), small=True))
    return blocks


def check_text(check: AnswerCheck) -> str:
    """A pack check in words: ``kurz: max_words 80``, ``no_names: not_contains 'Müller'
    [K.-o.]``, ``json: json_schema`` (a schema is not spelled out)."""
    what: str
    if check.type == "json_schema":
        what = check.type
    elif isinstance(check.value, str):
        what = f"{check.type} {check.value!r}"
    else:
        what = f"{check.type} {check.value}"
    return f"{check.id}: {what}" + (" [K.-o.]" if check.knock_out else "")


def prompt_check_line(prompt: Prompt, t: dict[str, str]) -> list[Block]:
    """The prompt's checks in one line (:func:`check_text` each); ``[]`` without any."""
    if not prompt.checks:
        return []
    text = " · ".join(check_text(c) for c in prompt.checks)
    return [Para((Strong(f"{t['answer_checks']}: "), text))]
