"""The language tables: one module per language, the same tables and keys in each."""

from __future__ import annotations

import pytest

from touchstone_ray import lang
from touchstone_ray.lang import de, en

TABLES = ("SCORECARD", "REPORT", "LEVELS", "GLOSSARY", "JUDGE")


def test_every_language_has_the_same_tables_and_keys() -> None:
    assert lang.LANGUAGES == ("de", "en")
    for name in ("SCORECARD", "REPORT", "LEVELS", "JUDGE", "UI", "PLURALS"):
        assert set(getattr(de, name)) == set(getattr(en, name)), name
    assert [term for term, _, _ in de.GLOSSARY][:3] == [term for term, _, _ in en.GLOSSARY][:3]
    assert len(de.GLOSSARY) == len(en.GLOSSARY)


def test_scorecard_and_report_labels_never_share_a_key() -> None:
    for module in (de, en):
        assert set(module.SCORECARD).isdisjoint(module.REPORT)
        assert len(lang.labels(module.__name__[-2:])) == len(module.SCORECARD) + len(module.REPORT)


def test_lookups_fall_back_to_english() -> None:
    assert lang.labels("fr") == lang.labels("en")
    assert lang.levels("de")["ungenügend"] == "ungenügend"
    assert lang.levels("en")["hoch"] == "high"
    assert lang.scorecard_labels("de")["ranking"] == "Rangliste"
    assert lang.judge_texts("de") is de.JUDGE
    assert lang.glossary("xx") is en.GLOSSARY


def test_glossary_entries_line_up_by_position() -> None:
    pairs = {
        "Dimension score": ("Dimensionspunkte", "Punkte 1–5"),
        "Band accuracy": ("Band-Treffer", "0…1"),
        "Judge spread": ("Judge-Streuung", "Punkte"),
        "ETA": ("Restzeit", "min, s"),
        "Cell": ("Zelle", "Zellen"),
        "Capacity": ("Kapazität", "Nutzer"),
        "Excluded": ("Ausgeschlossen", "Anfragen"),
        "Entry duration": ("Dauer des Eintrags", "s"),
    }
    for term, (german, unit) in pairs.items():
        name, _, shown = lang.glossary_entry("de", term)
        assert (name, shown) == (german, unit), term
    assert lang.glossary_entry("en", "Entry duration") == en.GLOSSARY[-1]


def test_every_metric_label_names_one_label_and_one_glossary_entry() -> None:
    for module in (de, en):
        assert set(module.UI).isdisjoint(module.SCORECARD)
        assert set(module.UI).isdisjoint(module.REPORT)
    terms = {term for term, _, _ in en.GLOSSARY}
    shown = {**en.SCORECARD, **en.REPORT, **en.UI}
    for key, term in lang.METRIC_TERMS.items():
        assert key in shown, key
        assert term in terms, term


def test_a_head_gets_the_tooltip_of_its_label_in_the_pages_language() -> None:
    assert lang.header_tip("de", "Qualität %") == (
        "Qualität %: Σ(Punkte_d × Gewicht_d) / (5 × Σ Gewicht_d) × 100 über die holistischen "
        "Dimensionspunkte (Median der Judges). (Einheit: %)"
    )
    assert lang.header_tip("en", "TTFT p95 s") == (
        "TTFT: Time to the first token on any channel (reasoning or answer), from sending the "
        "request; role-only chunks, empty strings and SSE comments do not count. (unit: s)"
    )
    assert lang.header_tip("en", "Model") is None
    assert lang.header_tip("en", "Q1 ×3") is None
    assert lang.header_tip("en", "Q1 ×3", {"Q1 ×3": "Dimension score"}) == (
        "Dimension score: A judge's holistic score of a model variant on one dimension; with "
        "several judges the median of theirs. (unit: points 1–5)"
    )


def test_unknown_glossary_term_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="no glossary entry 'Latency'"):
        lang.metric_tip("en", "Latency")


def test_counts_say_one_in_the_singular() -> None:
    assert lang.count("en", 1, "host") == "1 host"
    assert lang.count("en", 2, "variant") == "2 variants"
    assert lang.count("de", 1, "variant") == "1 Variante"
    assert lang.count("de", 0, "judge") == "0 Judges"
    assert lang.count("fr", 1, "item") == "1 calibration item"
