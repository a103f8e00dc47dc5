"""The tools bench's labels: the same keys and placeholders in every language, and a label for
every definition."""

from __future__ import annotations

import string

from touchstone_ray.lang import de, en, tools_labels


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_language_has_the_same_keys_and_placeholders() -> None:
    assert set(de.TOOLS) == set(en.TOOLS)
    for key, text in en.TOOLS.items():
        assert fields(de.TOOLS[key]) == fields(text), key


def test_every_definition_has_its_label() -> None:
    for key in en.TOOLS:
        if key.startswith("d_"):
            assert key[2:] in en.TOOLS, key


def test_the_table_follows_the_language_and_falls_back_to_english() -> None:
    assert tools_labels("de")["title"] == "Werkzeug-Bericht"
    assert tools_labels("fr") is en.TOOLS
