"""The language tables: every text touchstone shows or sends, one module per pack language
(SPEC §10: reports speak the pack's ``language``; :mod:`.de`, :mod:`.en`).

Each language module holds ``SCORECARD`` (scorecard labels), ``REPORT`` (labels only the report
and the web UI use), ``LEVELS`` (rubric levels), ``GLOSSARY`` (metric definitions and units),
``JUDGE`` (the judge templates' wording), ``UI`` (the web UI's own labels), ``LINES`` (the
CLI's end-of-run lines, the judge checks' warnings), ``TOOLS`` (the tools bench's report,
``tools-compare`` and UI labels) and ``PLURALS`` (nouns for counts), with
the same keys in every language. An unknown language falls back to English.

The glossary is the one source of what a figure means: :func:`header_tip` gives the tooltip of
a column head (a scorecard, report or UI label named in :data:`METRIC_TERMS`) from it. Glossary
entries line up by position in every language (a test pins it), so an entry is named by its
English term.
"""

from __future__ import annotations

from types import ModuleType

from touchstone_ray.lang import de, en

__all__ = [
    "LANGUAGES",
    "METRIC_TERMS",
    "count",
    "glossary",
    "glossary_entry",
    "header_tip",
    "judge_texts",
    "labels",
    "levels",
    "lines",
    "metric_tip",
    "scorecard_labels",
    "tools_labels",
    "ui_labels",
]

_TABLES: dict[str, ModuleType] = {"de": de, "en": en}

LANGUAGES: tuple[str, ...] = tuple(_TABLES)
"""The pack languages with a table."""


def _table(lang: str) -> ModuleType:
    return _TABLES.get(lang, en)


def scorecard_labels(lang: str) -> dict[str, str]:
    """The scorecard's labels in ``lang``."""
    table: dict[str, str] = _table(lang).SCORECARD
    return table


def labels(lang: str) -> dict[str, str]:
    """The scorecard labels and the report labels of ``lang`` (one dict; no key is in both)."""
    return {**scorecard_labels(lang), **_table(lang).REPORT}


def levels(lang: str) -> dict[str, str]:
    """Rubric level (contract form ``hoch`` …) → label in ``lang``."""
    table: dict[str, str] = _table(lang).LEVELS
    return table


def glossary(lang: str) -> tuple[tuple[str, str, str], ...]:
    """The glossary in ``lang``: (term, definition, unit) per metric."""
    table: tuple[tuple[str, str, str], ...] = _table(lang).GLOSSARY
    return table


def judge_texts(lang: str) -> dict[str, str]:
    """The judge templates' wording in ``lang``."""
    table: dict[str, str] = _table(lang).JUDGE
    return table


def lines(lang: str) -> dict[str, str]:
    """The CLI's end-of-run lines and the judge checks' warnings in ``lang``
    (``str.format`` templates)."""
    table: dict[str, str] = _table(lang).LINES
    return table


def ui_labels(lang: str) -> dict[str, str]:
    """The web UI's own labels in ``lang`` (nav, overview, live, compare, judges, packs,
    bundle files)."""
    table: dict[str, str] = _table(lang).UI
    return table


def tools_labels(lang: str) -> dict[str, str]:
    """The tools bench's labels in ``lang``: its report, ``tools-compare`` and its UI pages;
    ``d_<key>`` holds the definition of the figure labelled ``<key>``."""
    table: dict[str, str] = _table(lang).TOOLS
    return table


def count(lang: str, n: int, noun: str) -> str:
    """``n`` and the noun in ``lang``, singular for exactly 1: ``1 host``, ``2 hosts``,
    ``1 Variante``. ``noun`` is a key of the language's ``PLURALS`` (``variant``, ``host``,
    ``cell``, ``judge``, ``answer``, ``row``, ``item``); raises :class:`KeyError` for another."""
    one, many = _table(lang).PLURALS[noun]
    return f"{n} {one if n == 1 else many}"


METRIC_TERMS: dict[str, str] = {
    # scorecard labels
    "quality": "Quality %",
    "sustainable_rps": "Sustainable rate",
    "level": "Level",
    "ko": "K.-o.",
    "red_flags": "Red flag / green flag",
    "mean": "Mean answer",
    "counts": "Scored / unscored / errors",
    "ttft_p50": "TTFT",
    "ttft_p95": "TTFT",
    "tps": "Decode tok/s",
    "e2e_p50": "E2E",
    "peak_ram": "Peak RAM",
    "delta": "Model delta",
    "diff": "Variant A/B (B − A)",
    "ci": "95 % CI",
    "sign_p": "Sign test",
    "pairs": "Variant A/B (B − A)",
    "e2e_diff": "Variant A/B (B − A)",
    "alpha": "Krippendorff's α",
    "kappa": "κ (Cohen / Fleiss)",
    "tau": "Kendall's τ-b",
    # report labels
    "ttfa_p50": "TTFA",
    "e2e_p95": "E2E",
    "tpot": "TPOT",
    "itl_p50": "ITL",
    "prefill_tps": "Prefill tok/s",
    "cv_ttft": "CV % TTFT",
    "ttft_cold": "TTFT cold",
    "measured": "Under load (c = N)",
    "concurrency": "Under load (c = N)",
    "cold_short": "Cold start",
    "cached_short": "Prompt-cache hit",
    "trunc_short": "Truncated",
    "input_cut": "Prompt cut",
    "gpu_mem": "GPU memory",
    "gpu_delta": "GPU memory",
    "engine_gpu_mem": "GPU memory",
    "throttled_cells": "Throttling",
    "pressure": "Memory pressure",
    "delta_gb": "Model delta",
    "model_delta": "Model delta",
    "engine_rss_peak": "Engine RSS / engine delta",
    "engine_rss_delta": "Engine RSS / engine delta",
    "memory_mb": "Engine RSS / engine delta",
    "engine_cpu": "Engine CPU / foreign CPU",
    "contended_cells": "Engine CPU / foreign CPU",
    "pareto": "Pareto front",
    "median": "Dimension score",
    "a_better": "Sign test",
    "b_better": "Sign test",
    "ties": "Sign test",
    "tok_diff": "Variant A/B (B − A)",
    "chars": "Variant A/B (B − A)",
    "band_accuracy": "Band accuracy",
    "red_flag_recall": "Red-flag recall",
    "score_gap": "Score gap",
    "n_calibration": "Calibration",
    "unknown_flags": "Unknown flags",
    "judge_errors": "Scored / unscored / errors",
    "spread_mean": "Judge spread",
    "spread_max": "Judge spread",
    "mean_abs_delta": "Outside rater",
    "ko_concordance": "Outside rater",
    "quality_diff": "Outside rater",
    "fill_quality": "Quality %",
    "cells": "Cell",
    "failed_cells": "Cell",
    "failed_short": "Cell",
    "verdicts": "Scored / unscored / errors",
    "scored": "Scored / unscored / errors",
    "qualified": "Calibration",
    "counted": "Calibration",
    "tpl_a": "Template A/B",
    "tpl_b": "Template A/B",
    "tpl_delta": "Template A/B",
    "rate": "Rubric rate",
    "wilson_ci": "Rubric rate",
    "n_rated": "Rubric rate",
    "jq_delta": "Outside rater",
    "outliers": "Outside rater",
    "quality_local": "Quality %",
    "quality_outside": "Quality %",
    "quality_delta": "Outside rater",
    # web UI labels
    "h_quality": "Quality %",
    "h_best": "Level",
    "h_band": "Band accuracy",
    "h_recall": "Red-flag recall",
    "h_gap": "Score gap",
    "h_spread": "Quality spread",
    "h_agreement": "Krippendorff's α",
    "h_branch": "K.-o.",
    "h_flagged": "Red flag / green flag",
    "h_uncurated": "Red flag / green flag",
    "eta": "ETA",
    "in_flight": "In flight",
    "q_h_duration": "Entry duration",
}
"""Label key (of :func:`labels` or :func:`ui_labels`) → the English term of the glossary entry
that explains the figure under that label."""


def glossary_entry(lang: str, term: str) -> tuple[str, str, str]:
    """The glossary entry ``(term, definition, unit)`` in ``lang`` of the English ``term``;
    raises :class:`KeyError` for a term the glossary does not define."""
    terms = [entry[0] for entry in en.GLOSSARY]
    if term not in terms:
        raise KeyError(f"no glossary entry {term!r}")
    return glossary(lang)[terms.index(term)]


def metric_tip(lang: str, term: str) -> str:
    """The tooltip of the English glossary ``term`` in ``lang``: ``<term>: <definition>
    (<unit label>: <unit>)``. Raises :class:`KeyError` like :func:`glossary_entry`."""
    name, definition, unit = glossary_entry(lang, term)
    return f"{name}: {definition} ({ui_labels(lang)['tip_unit']}: {unit})"


def header_tip(lang: str, text: str, extra: dict[str, str] | None = None) -> str | None:
    """The tooltip of a column head shown as ``text`` on a page in ``lang``: the glossary
    entry of the label whose text it is (:data:`METRIC_TERMS`), else of ``extra`` (head text
    → English term, for heads built from a pack: dimensions, categories); ``None`` for a
    head that names no figure."""
    shown = {**labels(lang), **ui_labels(lang)}
    for key, term in METRIC_TERMS.items():
        if shown.get(key) == text:
            return metric_tip(lang, term)
    if extra and text in extra:
        return metric_tip(lang, extra[text])
    return None
