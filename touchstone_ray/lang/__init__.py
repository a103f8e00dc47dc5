"""The language tables: every text touchstone shows or sends, one module per pack language
(SPEC §10: reports speak the pack's ``language``; :mod:`.de`, :mod:`.en`).

Each language module holds ``SCORECARD`` (scorecard labels), ``REPORT`` (labels only the report
and the web UI use), ``LEVELS`` (rubric levels), ``GLOSSARY`` (metric definitions and units)
and ``JUDGE`` (the judge templates' wording), with the same keys in every language. An unknown
language falls back to English.
"""

from __future__ import annotations

from types import ModuleType

from touchstone_ray.lang import de, en

__all__ = ["LANGUAGES", "glossary", "judge_texts", "labels", "levels", "scorecard_labels"]

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
