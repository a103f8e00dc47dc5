"""German: the lines the CLI prints at the end of a run and the judge checks' warnings (kept
in ``scorecard.json`` and shown by the report), in the pack's language."""

from __future__ import annotations

LINES: dict[str, str] = {
    # judge checks (SPEC §10): warnings
    "no_calibration": (
        "keine Kalibrierungsantworten: der Judge wurde nicht an bekannten Antworten geprüft"
    ),
    "band_low": "Band-Treffer {band} < {minimum} bei {items}",
    "missed_flags": "erwartete Red Flag verfehlt bei {missed} von {items} ({ids})",
    "same_score": "gleiche Punktzahl {score} bei {share} Antworten",
    "short_rationale": "Begründung unter {chars} Zeichen bei {share}",
    "repeated_rationale": "Begründung {text} wörtlich wiederholt bei {share} Antworten",
    "uncited": "ganzheitliche Begründung nennt keine Prompt-ID bei {share} Dimensionen",
    "unknown_flags": "{n} genannte Flags gehören nicht zum Prompt (in unknown_flags aufbewahrt)",
    "share": "{part} von {whole} ({pct} %)",
    # judge checks: the line per judge
    "qualified": "qualifiziert",
    "not_qualified": "NICHT qualifiziert",
    "counted_anyway": "trotzdem gezählt (--allow-unqualified)",
    "not_counted": "nicht gezählt",
    "check_line": (
        "Judge {judge}: {state} (Band-Treffer {band}, Red-Flag-Recall {recall}, Abstand "
        "{gap}, {items})"
    ),
    "warnings": "Warnungen",
    "n_a": "k. A.",
    # the judge run's end
    "judge_end": "judge {state}: {judges}, {answers}, {rows}{lead} in {elapsed} s",
    "judge_done": "fertig",
    "judge_aborted": "abgebrochen",
    "rank_1": "; Rang 1: {model} / {variant}",
    "no_qualified": (
        "kein qualifizierter Judge: {judges} bei der Kalibrierung durchgefallen; ihre Urteile "
        "sind gespeichert; mit --allow-unqualified erneut starten, um sie trotzdem zu zählen"
    ),
    # each judge's last line
    "judge_summary": (
        "Judge {judge}: {state}: {scored} bewertet, {unscored} unbewertet, {errors}; {reports} "
        "({degraded} eingeschränkt); {calls}"
    ),
    "summary_aborted": "abgebrochen ({reason})",
    "no_scorecard": (
        "keine neue Scorecard: kein Judge hat vollständige Urteile{kept} ({elapsed} s)"
    ),
    "scorecard_kept": " (die Scorecard eines früheren Laufs bleibt)",
    # the eval run's end
    "eval_end": (
        "eval {state}: {ok} ok, {failed} fehlgeschlagen{kinds}, {reused} wiederverwendet in "
        "{elapsed} s"
    ),
    "eval_done": "fertig",
    "eval_failed": "fehlgeschlagen",
    "host_stopped": "; {host} vor seinen Zellen angehalten: {reason}",
    # the eval plan (--dry-run)
    "plan_host": "Host {host}:",
    "plan_model": (
        "  {order}. {label} ({engine}, Parallelität {concurrency}): {cells} = {variants} × "
        "{per} Zellen/Variante"
    ),
    "plan_done": ", {n} fertig",
    "plan_total": "{cells} auf {hosts}",
}
"""End-of-run lines and judge-check warnings (``str.format`` fields as named)."""
