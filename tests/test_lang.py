"""The language tables: one module per language, the same tables and keys in each."""

from __future__ import annotations

from touchstone_ray import lang
from touchstone_ray.lang import de, en

TABLES = ("SCORECARD", "REPORT", "LEVELS", "GLOSSARY", "JUDGE")


def test_every_language_has_the_same_tables_and_keys() -> None:
    assert lang.LANGUAGES == ("de", "en")
    for name in ("SCORECARD", "REPORT", "LEVELS", "JUDGE"):
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
