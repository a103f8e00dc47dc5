"""Scorecard labels, one small table per pack language (SPEC §10: reports speak the pack's
language). Both tables have the same keys; ``LEVELS`` translates the rubric levels, which the
scorecard JSON keeps in their contract form (``hoch`` …)."""

from __future__ import annotations

_EN: dict[str, str] = {
    "title": "Scorecard",
    "simulated": (
        "Simulated: a simulated model or judge produced these numbers; they demonstrate the "
        "pipeline, they say nothing about real models."
    ),
    "judges": "Judges",
    "vote": "red flags by",
    "ranking": "Ranking",
    "rank": "#",
    "model": "Model",
    "variant": "Variant",
    "quality": "Quality %",
    "level": "Level",
    "ko": "K.-o.",
    "passed": "passed",
    "failed": "failed",
    "red_flags": "Red flags",
    "mean": "Mean answer",
    "counts": "scored/unscored/errors",
    "ttft_p50": "TTFT p50 s",
    "ttft_p95": "TTFT p95 s",
    "tps": "Decode tok/s",
    "e2e_p50": "E2E p50 s",
    "peak_ram": "Peak RAM MB",
    "delta": "Model Δ MB",
    "categories": "Mean answer score per category",
    "dimensions": "Dimension scores (median over judges)",
    "missing": "missing",
    "ab": "Variant A/B (paired per prompt, B − A)",
    "diff": "B − A",
    "ci": "95 % CI",
    "sign_p": "sign test p",
    "pairs": "pairs",
    "e2e_diff": "Δ E2E s",
    "note": "note",
    "agreement": "Judge agreement",
    "alpha": "Krippendorff's α (ordinal)",
    "kappa": "κ on red flags",
    "tau": "Kendall's τ-b between rankings",
    "undefined": "undefined",
    "aborted": "Judges aborted (not in these numbers)",
}

_DE: dict[str, str] = {
    "title": "Scorecard",
    "simulated": (
        "Simuliert: Ein simuliertes Modell oder ein simulierter Judge hat diese Zahlen erzeugt; "
        "sie zeigen den Ablauf und sagen nichts über echte Modelle."
    ),
    "judges": "Judges",
    "vote": "Red Flags per",
    "ranking": "Rangliste",
    "rank": "#",
    "model": "Modell",
    "variant": "Variante",
    "quality": "Qualität %",
    "level": "Stufe",
    "ko": "K.-o.",
    "passed": "bestanden",
    "failed": "nicht bestanden",
    "red_flags": "Red Flags",
    "mean": "Ø Antwort",
    "counts": "bewertet/unbewertet/Fehler",
    "ttft_p50": "TTFT p50 s",
    "ttft_p95": "TTFT p95 s",
    "tps": "Decode tok/s",
    "e2e_p50": "E2E p50 s",
    "peak_ram": "Peak-RAM MB",
    "delta": "Modell-Δ MB",
    "categories": "Ø Antwortpunkte je Kategorie",
    "dimensions": "Dimensionspunkte (Median über die Judges)",
    "missing": "fehlt",
    "ab": "Varianten-A/B (gepaart je Prompt, B − A)",
    "diff": "B − A",
    "ci": "95-%-KI",
    "sign_p": "Vorzeichentest p",
    "pairs": "Paare",
    "e2e_diff": "Δ E2E s",
    "note": "Hinweis",
    "agreement": "Übereinstimmung der Judges",
    "alpha": "Krippendorffs α (ordinal)",
    "kappa": "κ auf Red Flags",
    "tau": "Kendalls τ-b zwischen den Ranglisten",
    "undefined": "nicht definiert",
    "aborted": "Abgebrochene Judges (nicht in diesen Zahlen)",
}

LABELS: dict[str, dict[str, str]] = {"en": _EN, "de": _DE}
"""Language code → scorecard labels."""

LEVELS: dict[str, dict[str, str]] = {
    "en": {"hoch": "high", "solide": "solid", "teilweise": "partial", "ungenügend": "insufficient"},
    "de": {
        "hoch": "hoch",
        "solide": "solide",
        "teilweise": "teilweise",
        "ungenügend": "ungenügend",
    },
}
"""Language code → rubric level (contract form) → label."""
