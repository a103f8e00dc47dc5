"""English: the lines the CLI prints at the end of a run and the judge checks' warnings (kept
in ``scorecard.json`` and shown by the report), in the pack's language."""

from __future__ import annotations

LINES: dict[str, str] = {
    # judge checks (SPEC §10): warnings
    "no_calibration": "no calibration items: the judge was not checked on known answers",
    "band_low": "band accuracy {band} < {minimum} on {items}",
    "missed_flags": "missed the expected red flag on {missed} of {items} ({ids})",
    "same_score": "same score {score} on {share} answers",
    "short_rationale": "rationale under {chars} characters on {share}",
    "repeated_rationale": "rationale {text} repeated verbatim on {share} answers",
    "uncited": "holistic rationale cites no prompt id on {share} dimensions",
    "unknown_flags": "{n} named flags are not the prompt's (kept in unknown_flags)",
    "share": "{part} of {whole} ({pct} %)",
    # judge checks: the line per judge
    "qualified": "qualified",
    "not_qualified": "NOT qualified",
    "counted_anyway": "counted anyway (--allow-unqualified)",
    "not_counted": "not counted",
    "check_line": (
        "judge {judge}: {state} (band accuracy {band}, red-flag recall {recall}, score gap "
        "{gap}, {items})"
    ),
    "warnings": "warnings",
    "n_a": "n/a",
    # the judge run's end
    "judge_end": "judge {state}: {judges}, {answers}, {rows}{lead} in {elapsed} s",
    "judge_done": "done",
    "judge_aborted": "aborted",
    "rank_1": "; rank 1: {model} / {variant}",
    "no_qualified": (
        "no qualified judge: {judges} failed calibration; their verdicts are stored; rerun "
        "with --allow-unqualified to count them anyway"
    ),
    # each judge's last line
    "judge_summary": (
        "judge {judge}: {state}: {scored} scored, {unscored} unscored, {errors}; {reports} "
        "({degraded} degraded); {calls}"
    ),
    "summary_aborted": "aborted ({reason})",
    "no_scorecard": "no new scorecard: no judge has complete judgements{kept} ({elapsed} s)",
    "scorecard_kept": " (the scorecard of an earlier run is kept)",
    # the eval run's end
    "eval_end": "eval {state}: {ok} ok, {failed} failed{kinds}, {reused} reused in {elapsed} s",
    "eval_done": "done",
    "eval_failed": "failed",
    "host_stopped": "; {host} stopped before its cells: {reason}",
    # the eval plan (--dry-run)
    "plan_host": "host {host}:",
    "plan_model": (
        "  {order}. {label} ({engine}, concurrency {concurrency}): {cells} = {variants} × "
        "{per} cells/variant"
    ),
    "plan_done": ", {n} done",
    "plan_total": "{cells} on {hosts}",
}
"""End-of-run lines and judge-check warnings (``str.format`` fields as named)."""
