"""The judge-free answer checks (SPEC §3 ``checks``): each type's pass, fail and not-measured
shapes with the exact outcome, the word counter and the sentence splitter on real answer
shapes, and a prompt's list run on one answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from touchstone_ray.answers import (
    DETAIL_MAX_CHARS,
    LANGUAGE_MIN_WORDS,
    NOT_MEASURED_REASONING_ONLY,
    CheckOutcome,
    answer_check,
    answer_checks,
    contains_check,
    count_words,
    extract_json,
    json_schema_check,
    language_check,
    max_sentences_check,
    max_words_check,
    not_contains_check,
    regex_check,
    split_sentences,
)
from touchstone_ray.pack import load_pack

GERMAN = (
    "Hallo zusammen,\n\nunser Teammeeting am Donnerstag fällt leider aus. Wir treffen uns "
    "stattdessen am Freitag um 10 Uhr im gewohnten Raum. Die Tagesordnung bleibt gleich, "
    "bitte bringt die Quartalszahlen mit.\n\nViele Grüße"
)
ENGLISH = (
    "Hi everyone, our team meeting on Thursday is cancelled. We will meet on Friday at ten "
    "instead, in the usual room. The agenda stays the same, so please bring the quarterly "
    "figures with you. Thanks and best regards."
)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["betreff", "termin"],
    "properties": {
        "betreff": {"type": "string", "maxLength": 40},
        "termin": {"type": "string", "format": "date"},
    },
    "additionalProperties": False,
}


# --- regex ---------------------------------------------------------------------------------


def test_regex_passes_on_a_match_anywhere() -> None:
    assert regex_check(r"\b10 Uhr\b", GERMAN) == (True, "")


def test_regex_fails_without_a_match_and_is_case_sensitive_unless_the_pattern_says() -> None:
    assert regex_check(r"10 UHR", GERMAN) == (False, "no match for '10 UHR'")
    assert regex_check(r"(?i)10 UHR", GERMAN) == (True, "")


def test_a_regex_that_does_not_compile_is_not_measured() -> None:
    assert answer_check("r", "regex", "[", GERMAN) == CheckOutcome(
        id="r",
        type="regex",
        ok=None,
        detail="could not run: error: unterminated character set at position 0",
    )


# --- contains / not_contains -----------------------------------------------------------------


def test_contains_is_case_insensitive() -> None:
    assert contains_check("FREITAG", GERMAN) == (True, "")
    assert contains_check("grüsse", GERMAN) == (True, "")  # casefold: ß == ss
    assert contains_check("Montag", GERMAN) == (False, "'Montag' not found")


def test_not_contains_quotes_where_it_found_the_text() -> None:
    assert not_contains_check("Montag", GERMAN) == (True, "")
    assert answer_check("n", "not_contains", "donnerstag", GERMAN) == CheckOutcome(
        id="n",
        type="not_contains",
        ok=False,
        detail="'donnerstag' found: …nser Teammeeting am Donnerstag fällt leider aus. W…",
    )
    # casefolding makes "ß" two letters: the quote still starts and ends where it should
    text = "Straße und Grüße und mehr"
    assert not_contains_check("GRÜSSE", text) == (
        False,
        "'GRÜSSE' found: …Straße und Grüße und mehr…",
    )
    assert not_contains_check("und mehr", "ß" * 30 + " und mehr") == (
        False,
        "'und mehr' found: …" + "ß" * 19 + " und mehr…",
    )


# --- json_schema ---------------------------------------------------------------------------


def test_json_schema_passes_on_the_whole_answer_as_json() -> None:
    assert json_schema_check(SCHEMA, ' {"betreff": "Termin", "termin": "2025-03-07"}\n') == (
        True,
        "",
    )


def test_json_schema_reads_the_first_fenced_block() -> None:
    answer = (
        "Hier die Daten:\n\n```json\n"
        '{"betreff": "Termin", "termin": "2025-03-07"}\n```\n\nUnd noch:\n```\n[1]\n```'
    )
    assert json_schema_check(SCHEMA, answer) == (True, "")


@pytest.mark.parametrize(
    ("answer", "detail"),
    [
        ('{"betreff": "Termin"}', "$: 'termin' is a required property"),
        ('{"betreff": "T", "termin": "2025-13-07"}', "$.termin: '2025-13-07' is not a 'date'"),
        (
            '{"betreff": "T", "termin": "2025-03-07", "ort": "A"}',
            "$: Additional properties are not allowed ('ort' was unexpected)",
        ),
        ('["Termin"]', "$: ['Termin'] is not of type 'object'"),
        ("Der Termin ist am 7. März.", "the answer is not JSON and has no fenced block"),
        (
            "```json\n{betreff: 1}\n```",
            "the first fenced block is not JSON: Expecting property name enclosed in double "
            "quotes: line 1 column 2 (char 1)",
        ),
    ],
)
def test_json_schema_fails_with_the_first_error_and_where(answer: str, detail: str) -> None:
    assert json_schema_check(SCHEMA, answer) == (False, detail)


def test_extract_json_whole_then_fenced() -> None:
    assert extract_json('{"a": 1}') == ({"a": 1}, "")
    assert extract_json("Text\n```\n[1, 2]\n```") == ([1, 2], "")
    assert extract_json("```json\n[1,") == (
        None,
        "the first fenced block is not JSON: Expecting value: line 1 column 4 (char 3)",
    )


# --- max_words / max_sentences ---------------------------------------------------------------


def test_count_words_counts_words_not_markup() -> None:
    assert count_words(GERMAN) == 32
    assert count_words("- **E-Mail** an z.B. Herrn O'Neil: 3.5 % — fertig!") == 7
    assert count_words("| --- | *** |\n\n---") == 0


def test_max_words_at_its_edge() -> None:
    assert max_words_check(32, GERMAN) == (True, "")
    assert max_words_check(31, GERMAN) == (False, "32 words > 31")


def test_sentences_of_a_mail() -> None:
    assert split_sentences(GERMAN) == [
        "Hallo zusammen,",
        "unser Teammeeting am Donnerstag fällt leider aus.",
        "Wir treffen uns stattdessen am Freitag um 10 Uhr im gewohnten Raum.",
        "Die Tagesordnung bleibt gleich, bitte bringt die Quartalszahlen mit.",
        "Viele Grüße",
    ]


def test_abbreviations_initials_ordinals_and_lower_case_do_not_end_a_sentence() -> None:
    text = (
        "Frau Dr. Weber kommt am 3. Mai, z. B. mit Herrn A. Kurz. Das gilt ca. drei Wochen, "
        "d. h. bis Ende Mai! Passt das? Wir melden uns… Bis dann."
    )
    assert split_sentences(text) == [
        "Frau Dr. Weber kommt am 3. Mai, z. B. mit Herrn A. Kurz.",
        "Das gilt ca. drei Wochen, d. h. bis Ende Mai!",
        "Passt das?",
        "Wir melden uns…",
        "Bis dann.",
    ]


def test_list_items_headings_and_table_rows_are_blocks_and_code_is_left_out() -> None:
    text = (
        "## Ergebnis\n"
        "Die Zahlen\nsind da.\n"
        "- erster Punkt\n  geht weiter. Zweiter Satz.\n"
        "2) letzter Punkt\n\n"
        "| Name | Wert |\n|---|---|\n| A | 1 |\n\n"
        "```python\nprint('Kein Satz. Auch keiner.')\n```\n"
        "„Zitat.“ Ende."
    )
    assert split_sentences(text) == [
        "Ergebnis",
        "Die Zahlen sind da.",
        "erster Punkt geht weiter.",
        "Zweiter Satz.",
        "letzter Punkt",
        "Name | Wert |",
        "A | 1 |",
        "„Zitat.“",
        "Ende.",
    ]


def test_max_sentences_at_its_edge() -> None:
    assert max_sentences_check(5, GERMAN) == (True, "")
    assert max_sentences_check(4, GERMAN) == (False, "5 sentences > 4")
    assert max_sentences_check(1, "") == (True, "")


# --- language --------------------------------------------------------------------------------


def test_language_passes_fails_and_is_not_measured_when_short() -> None:
    assert language_check("de", GERMAN) == (True, "")
    assert language_check("en", ENGLISH) == (True, "")
    assert language_check("en", GERMAN) == (False, "language de (p = 1.00), not en")
    short = "Alles klar, bis Freitag."
    assert language_check("de", short) == (
        None,
        f"too short to tell the language (4 of {LANGUAGE_MIN_WORDS} words)",
    )


def test_language_is_not_measured_when_the_detector_is_unsure() -> None:
    # half German, half English: the detector leans one way but not at 0.95
    mixed = (
        "Hallo zusammen, the meeting on Thursday is cancelled, wir treffen uns am Freitag "
        "instead, please bring the figures, danke und viele Grüße"
    )
    ok, detail = language_check("fr", mixed)
    assert ok is None
    assert detail.startswith("unsure: ") and detail.endswith(" < 0.95")


# --- a prompt's list -------------------------------------------------------------------------

CHECKS: list[tuple[str, str, Any]] = [
    ("kurz", "max_words", 32),
    ("saetze", "max_sentences", 3),
    ("termin", "contains", "freitag"),
    ("kein_montag", "not_contains", "Montag"),
    ("json", "json_schema", SCHEMA),
    ("deutsch", "language", "de"),
    ("gruss", "regex", r"(?m)^Viele Grüße$"),
]


def test_a_prompts_checks_on_one_answer_in_pack_order() -> None:
    assert [(o.id, o.type, o.ok, o.detail) for o in answer_checks(CHECKS, GERMAN)] == [
        ("kurz", "max_words", True, ""),
        ("saetze", "max_sentences", False, "5 sentences > 3"),
        ("termin", "contains", True, ""),
        ("kein_montag", "not_contains", True, ""),
        ("json", "json_schema", False, "the answer is not JSON and has no fenced block"),
        ("deutsch", "language", True, ""),
        ("gruss", "regex", True, ""),
    ]


def test_a_reasoning_only_answer_is_not_measured() -> None:
    outcomes = answer_checks(CHECKS, "  \n", reasoning="Der Nutzer fragt nach …")
    assert {(o.ok, o.detail) for o in outcomes} == {(None, NOT_MEASURED_REASONING_ONLY)}
    assert [o.id for o in outcomes] == [c[0] for c in CHECKS]


def test_an_empty_answer_is_checked_like_any_other() -> None:
    assert [(o.id, o.ok) for o in answer_checks(CHECKS, "")] == [
        ("kurz", True),
        ("saetze", True),
        ("termin", False),
        ("kein_montag", True),
        ("json", False),
        ("deutsch", None),
        ("gruss", False),
    ]


def test_the_callers_reason_makes_every_check_not_measured() -> None:
    outcomes = answer_checks(CHECKS[:2], GERMAN, not_measured="prompt cut\nby the server")
    assert outcomes == [
        CheckOutcome(id="kurz", type="max_words", ok=None, detail="prompt cut by the server"),
        CheckOutcome(id="saetze", type="max_sentences", ok=None, detail="prompt cut by the server"),
    ]


def test_an_unknown_type_or_unusable_value_is_not_measured_never_raised() -> None:
    assert answer_check("x", "word_count", 3, GERMAN) == CheckOutcome(
        id="x", type="word_count", ok=None, detail="unknown check type 'word_count'"
    )
    bad = answer_check("x", "max_words", "viele", GERMAN)
    assert (bad.ok, bad.detail) == (
        None,
        "could not run: TypeError: '<=' not supported between instances of 'int' and 'str'",
    )


def test_a_detail_is_one_short_line() -> None:
    long_needle = "Donnerstag " * 30
    outcome = answer_check("n", "contains", long_needle, GERMAN)
    assert outcome.ok is False
    assert "\n" not in outcome.detail
    assert len(outcome.detail) <= DETAIL_MAX_CHARS


# --- the shipped packs' checks ---------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]

GOOD_ANSWERS = {
    ("buero", "A3"): (
        "1. Neu ab April: Dienstreisen über TravelDesk abrechnen\n"
        "2. Online-Schulung TravelDesk am 18. März\n"
        "3. Bitte bis 11. März zur TravelDesk-Schulung anmelden\n"
    ),
    ("buero", "A5"): (
        "Sehr geehrte Damen und Herren,\n\n"
        "vielen Dank für Ihre Anfrage vom 12. Mai. Gerne senden wir Ihnen das gewünschte\n"
        "Angebot zu. Die Lieferzeit beträgt wie besprochen drei Wochen ab Auftragseingang.\n"
        "Bitte beachten Sie, dass unser Angebot bis zum 30. Juni gültig ist. Für Rückfragen\n"
        "stehen wir Ihnen jederzeit zur Verfügung.\n\n"
        "Mit freundlichen Grüßen\nIhr Vertriebsteam"
    ),
    ("buero", "B4"): (
        "| Name | Firma | Telefon | Anliegen |\n|---|---|---|---|\n"
        "| Herr Peters | Kessler GmbH | 0431 558219 | Offene Rechnung |\n"
        "| Frau Dr. Aydin | Praxis am Markt | 0431 771045 | Wartungstermin verschieben |\n"
        "| Herr Lange | – | 0176 43981207 | Ist die Stelle im Lager noch frei? |\n"
        "| Frau Brandt | Brandt & Söhne | – | Reklamation |"
    ),
    ("buero", "C5"): (
        "## Ausgangslage\nDer Drucker im 2. OG fällt ständig aus. Im IT-Budget für Q3 sind "
        "noch 1.400 € frei.\n\n## Optionen\n"
        "- A: Reparatur für 480 €; hält laut Techniker vielleicht noch ein Jahr.\n"
        "- B: Neugerät mieten für 39 € im Monat inkl. Wartung, Laufzeit 36 Monate.\n"
        "- C: Neugerät kaufen für 1.150 €, Wartung extra.\n\n## Empfehlung\n"
        "Option B, weil die Wartung enthalten ist und die Kosten planbar sind.\n\n"
        "## Nächster Schritt\nMietangebote von zwei Anbietern einholen."
    ),
    ("ndassist", "C4"): (
        "1. Füße fest auf den Boden stellen.\n2. Fünfmal langsam ausatmen.\n"
        "3. Kaltes Wasser über die Hände laufen lassen.\n4. Fünf Dinge benennen, die ich sehe.\n"
        "5. Eine vertraute Person anrufen oder ihr schreiben."
    ),
    ("ndassist", "E4"): (
        "- Anliegen vorher auf einen Zettel oder ins Handy schreiben\n"
        "- Zettel zum Termin mitnehmen und vorlesen\n"
        "- Antworten der Ärztin direkt notieren"
    ),
}
BAD_ANSWERS = {
    # an introduction, a fourth line and quotes
    ("buero", "A3"): (
        'Hier meine Vorschläge:\n1. "TravelDesk kommt"\n2. „Schulung am 18. März“\n3. b\n4. c',
        ["drei_zeilen", "ohne_anfuehrung", "ohne_anfuehrung_gerade"],
    ),
    # a note before the letter, "das" and "ihnen" left as they were
    ("buero", "A5"): (
        "Hier ist der korrigierte Text mit allen Änderungen, die ich vorgenommen habe:\n\n"
        + GOOD_ANSWERS[("buero", "A5")]
        .replace("Sie, dass", "sie das")
        .replace("Rückfragen\nstehen wir Ihnen", "Rückfragen\nstehen wir ihnen"),
        ["dass", "nur_text"],
    ),
    # text after the table, the columns in another order, Herr Lange's number mistyped
    ("buero", "B4"): (
        GOOD_ANSWERS[("buero", "B4")]
        .replace("| Name | Firma | Telefon |", "| Name | Telefon | Firma |")
        .replace("0176 43981207", "0176 4398120")
        + "\n\nSag Bescheid, wenn ich noch etwas ergänzen soll.",
        ["spalten", "nur_tabelle", "nummer_lange"],
    ),
    # the sections out of order, and far too many sentences
    ("buero", "C5"): (
        "## Empfehlung\nOption B.\n\n## Ausgangslage\n" + "Der Drucker fällt aus. " * 15,
        ["abschnitte", "kurz"],
    ),
    ("ndassist", "C4"): (
        GOOD_ANSWERS[("ndassist", "C4")] + "\n\nDu schaffst das!",
        ["fuenf_schritte"],
    ),
    ("ndassist", "E4"): (
        "- Anliegen vorher auf einen Zettel oder ins Handy schreiben, am besten schon einige "
        "Tage vor dem Termin\n- Zettel mitnehmen\n- Antworten notieren",
        ["drei_punkte"],
    ),
}


def _shipped(name: str, prompt_id: str) -> list[tuple[str, str, Any]]:
    prompt = load_pack(REPO / "packs" / f"{name}.yaml").prompt(prompt_id)
    return [(c.id, c.type, c.value) for c in prompt.checks]


def test_the_shipped_packs_carry_checks_on_their_format_strict_prompts() -> None:
    for name in ("buero", "ndassist"):
        pack = load_pack(REPO / "packs" / f"{name}.yaml")
        with_checks = sorted((name, p.id) for p in pack.prompts() if p.checks)
        assert with_checks == sorted(k for k in GOOD_ANSWERS if k[0] == name)
        assert all(p.format_strict for p in pack.prompts() if p.checks)
        assert not any(c.knock_out for p in pack.prompts() for c in p.checks)


@pytest.mark.parametrize("where", sorted(GOOD_ANSWERS))
def test_a_good_answer_passes_every_shipped_check(where: tuple[str, str]) -> None:
    outcomes = answer_checks(_shipped(*where), GOOD_ANSWERS[where])
    assert [(o.id, o.ok, o.detail) for o in outcomes] == [(o.id, True, "") for o in outcomes]


@pytest.mark.parametrize("where", sorted(BAD_ANSWERS))
def test_a_typical_bad_answer_fails_the_checks_it_should(where: tuple[str, str]) -> None:
    answer, failing = BAD_ANSWERS[where]
    outcomes = answer_checks(_shipped(*where), answer)
    assert [o.id for o in outcomes if o.ok is False] == failing
    assert all(o.ok for o in outcomes if o.id not in failing)
