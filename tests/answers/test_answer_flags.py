"""The per-answer detectors: each flag's pass and fail shapes with the exact flag list, the
thresholds at their edges, and no false flag on 50 clean German and 50 clean English answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from touchstone_ray.answers import (
    ANSWER_FLAGS,
    LANGUAGE_MIN_WORDS,
    LANGUAGE_PREFIX_CHARS,
    TEMPLATE_MARKERS,
    answer_flags,
    detect_language,
    leaked_markers,
    loop_cover,
    ngram_hashes,
    prompt_echo,
    repetition_loop,
    template_leak,
    word_hashes,
    wrong_language,
)

HERE = Path(__file__).parent
REPO = HERE.parents[1]

SYSTEM = (
    "Du bist ein professioneller Büro-Assistent. Halte Format, Länge, Ton und Sprache genau so "
    "ein, wie sie verlangt werden."
)
PROMPT = (
    "Mach aus diesen Stichpunkten eine kurze, freundliche Mail an mein Team: das Teammeeting "
    "am Donnerstag fällt aus, neuer Termin ist Freitag um 10 Uhr."
)
ANSWER = (
    "Hallo zusammen,\n\nunser Teammeeting am Donnerstag fällt leider aus. Wir treffen uns "
    "stattdessen am Freitag um 10 Uhr im gewohnten Raum. Die Tagesordnung bleibt gleich, "
    "bitte bringt die Quartalszahlen mit.\n\nViele Grüße"
)
ENGLISH = (
    "Hi everyone, our team meeting on Thursday is cancelled. We will meet on Friday at ten "
    "instead, in the usual room. The agenda stays the same, so please bring the quarterly "
    "figures with you. Thanks and best regards."
)


def flags(content: str, reasoning: str = "", finish: str | None = "stop", **kw: Any) -> list[str]:
    args: dict[str, Any] = {"prompt": PROMPT, "system_prompt": SYSTEM, "language": "de"} | kw
    return answer_flags(content, reasoning, finish, **args)


def test_a_clean_answer_has_no_flag() -> None:
    assert flags(ANSWER) == []
    assert flags(ENGLISH, language="en") == []


# template_leak


@pytest.mark.parametrize(
    "marker", [m for family in TEMPLATE_MARKERS.values() for m in family], ids=repr
)
def test_every_listed_marker_is_a_leak(marker: str) -> None:
    assert flags(f"{ANSWER}{marker}") == ["template_leak"]
    assert leaked_markers(f"{marker}{ANSWER}") == [marker]


def test_the_chatml_fallback_shape_names_both_markers_in_table_order() -> None:
    content = f"{ANSWER}<|im_end|>\n<|im_start|>user\n<|im_end|>"
    assert leaked_markers(content) == ["<|im_start|>", "<|im_end|>"]
    assert template_leak(content) is True


def test_the_families_are_named_and_hold_the_common_templates() -> None:
    assert {
        "<|im_start|>",
        "<|im_end|>",
        "<start_of_turn>",
        "<end_of_turn>",
        "<|eot_id|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "[INST]",
        "[/INST]",
        "</s>",
        "<|endoftext|>",
        "<|end|>",
        "<|user|>",
        "<|assistant|>",
    } <= {m for family in TEMPLATE_MARKERS.values() for m in family}
    assert "Gemma" in TEMPLATE_MARKERS and TEMPLATE_MARKERS["Gemma"] == (
        "<start_of_turn>",
        "<end_of_turn>",
    )


@pytest.mark.parametrize(
    "content",
    [
        "Nutze <b>fett</b> und [einen Link](https://example.org) sowie [Platzhalter].",
        "Der alte Preis war <s>49 €</s>, jetzt 39 €.",  # strike-through markup, not an EOS
        "Die Tags heißen im_start und end_of_turn, ohne spitze Klammern.",
        "<|IM_END|> in Großbuchstaben ist kein Marker",  # markers are case-sensitive
    ],
)
def test_markup_and_near_misses_are_no_leak(content: str) -> None:
    assert template_leak(content) is False
    assert flags(content, language=None) == []


def test_an_end_of_sequence_without_its_opening_tag_is_a_leak() -> None:
    assert leaked_markers("Antwort fertig.</s>") == ["</s>"]
    assert leaked_markers("<s>alt</s> und dann noch </s>") == []  # one opener covers both


# prompt_echo


def test_an_answer_that_begins_with_the_user_prompt_is_an_echo() -> None:
    assert flags(f"{PROMPT}\n\n{ANSWER}") == ["prompt_echo"]
    assert prompt_echo(f"{PROMPT} Und dann noch etwas ganz anderes.", PROMPT, None) is True


def test_an_answer_that_begins_with_the_system_prompt_is_an_echo() -> None:
    assert flags(f"{SYSTEM}\n{ANSWER}") == ["prompt_echo"]
    assert prompt_echo(SYSTEM, None, SYSTEM) is True


def test_the_echo_may_start_after_a_role_name() -> None:
    assert flags(f"model\n{PROMPT}") == ["prompt_echo"]
    assert flags(f"user\nmodel\n{PROMPT}") == ["prompt_echo"]  # 2 words of slack
    # 3 words before it: not the start, and the answer is not mostly the prompt either
    assert flags(f"du bist gut: {PROMPT}\n\n{ANSWER}") == []


def test_the_gemma_shape_is_an_echo_and_a_leak() -> None:
    content = f"<start_of_turn>user\n{PROMPT}<end_of_turn>\n<start_of_turn>model\n{PROMPT}"
    assert flags(content) == ["template_leak", "prompt_echo"]


def test_an_answer_mostly_made_of_the_prompts_is_an_echo() -> None:
    # starts elsewhere, but more than half of its 4-grams are the prompts' and it holds the
    # system prompt's opening
    content = f"Gerne. {SYSTEM} {PROMPT}"
    assert prompt_echo(content, PROMPT, SYSTEM) is True
    assert flags(content) == ["prompt_echo"]


def test_quoting_the_prompts_material_without_its_instruction_is_no_echo() -> None:
    # the spelling task of packs/buero.yaml A5: the answer is the prompt's letter, corrected
    letter = (
        "Sehr geehrte Damen und Herren, vielen dank für ihre Anfrage vom 12. Mai. Gerne "
        "senden wir ihnen das gewünschte Angebot zu. Die Lieferzeit beträgt wie besprochen "
        "drei Wochen ab Auftragseingang."
    )
    prompt = f"Korrigiere in diesem Text nur Rechtschreibung und Grammatik.\n\n{letter}"
    answer = letter.replace("dank", "Dank").replace("ihre", "Ihre").replace("ihnen", "Ihnen")
    shared = ngram_hashes(word_hashes(answer))
    assert len(shared) > 20
    assert prompt_echo(answer, prompt, None) is False
    assert answer_flags(answer, "", "stop", prompt, None, "de") == []


def test_short_prompts_are_never_looked_for() -> None:
    assert prompt_echo("Hallo! Wie kann ich helfen?", "Hallo", "Sei kurz.") is False
    assert prompt_echo("Sei kurz. Das bin ich.", None, "Sei kurz.") is False  # 2 words
    assert prompt_echo("Sei bitte kurz. Gern.", None, "Sei bitte kurz.") is True  # 3 words


def test_no_prompt_no_echo() -> None:
    assert prompt_echo(PROMPT, None, None) is False
    assert flags(PROMPT, prompt=None, system_prompt=None) == []


# repetition_loop


def test_a_sentence_repeated_to_the_end_is_a_loop() -> None:
    content = ANSWER + " " + "Bitte bringt die Quartalszahlen mit. " * 30
    assert flags(content) == ["repetition_loop"]
    assert repetition_loop(content) is True


def test_the_loop_share_counts_the_longest_repeated_run() -> None:
    five = "eins zwei drei vier fünf "
    # said k times: the run covers all but the first saying (1 - 1/k of the words)
    assert loop_cover(20, ngram_hashes(word_hashes(five * 4))) == 0.75
    assert loop_cover(30, ngram_hashes(word_hashes(five * 6))) == pytest.approx(5 / 6)
    assert loop_cover(20, ngram_hashes(word_hashes(" ".join(str(i) for i in range(20))))) == 0


def test_a_text_said_twice_is_no_loop_three_times_is() -> None:
    twice = ANSWER + "\n\n" + ANSWER
    thrice = twice + "\n\n" + ANSWER
    assert repetition_loop(twice) is False  # covers exactly 1/2: not more than half
    assert repetition_loop(thrice) is True
    assert flags(thrice) == ["repetition_loop"]


def test_short_answers_are_never_a_loop() -> None:
    assert repetition_loop("ja ja ja ja ja ja ja ja ja ja ja ja ja ja ja ja ja ja ja") is False
    assert repetition_loop("ja " * 20) is True  # 20 words: long enough


def test_a_loop_at_the_end_of_a_long_answer_that_covers_little_is_no_loop() -> None:
    content = ANSWER * 1 + " " + ENGLISH + " Danke. Danke. Danke. Danke. Danke. Danke."
    assert repetition_loop(content) is False


# cut_at_limit, cut_in_reasoning, empty, reasoning_only


def test_an_answer_cut_at_max_tokens() -> None:
    assert flags(ANSWER, finish="length") == ["cut_at_limit"]
    assert flags(ANSWER, finish="stop") == []
    assert flags(ANSWER, finish=None) == []  # the server sent none


def test_a_budget_spent_inside_the_reasoning() -> None:
    assert flags("", "Der Nutzer fragt nach einer Mail, also zuerst", "length") == [
        "cut_at_limit",
        "cut_in_reasoning",
        "reasoning_only",
    ]


def test_reasoning_that_ended_without_an_answer() -> None:
    assert flags("  \n", "Der Nutzer fragt nach einer Mail.", "stop") == ["reasoning_only"]


def test_an_empty_answer() -> None:
    assert flags("", "", "stop") == ["empty"]
    assert flags(" \n\t", "  ", "stop") == ["empty"]
    assert flags("", "", "length") == ["cut_at_limit", "empty"]


# wrong_language


def test_an_english_answer_to_a_german_pack() -> None:
    assert flags(ENGLISH, language="de") == ["wrong_language"]
    assert wrong_language(ENGLISH, "de") is True


def test_a_german_answer_to_an_english_pack() -> None:
    assert flags(ANSWER, language="en") == ["wrong_language"]


def test_another_language_altogether() -> None:
    french = (
        "Bonjour à tous, notre réunion d'équipe de jeudi est annulée. Nous nous retrouverons "
        "vendredi à dix heures dans la salle habituelle. L'ordre du jour reste le même."
    )
    assert detect_language(french) is not None
    assert detect_language(french)[0] == "fr"  # type: ignore[index]
    assert flags(french) == ["wrong_language"]


def test_answers_too_short_to_judge_are_skipped() -> None:
    short = "Thanks, see you on Friday at ten in the usual room then."
    assert len(short.split()) < LANGUAGE_MIN_WORDS
    assert detect_language(short) is None
    assert flags(short) == []


def test_code_blocks_are_not_judged() -> None:
    lines = "".join(f"def send_{i}(team, subject, body):\n    return {i}\n" for i in range(20))
    code = f"```python\n{lines}```"
    assert detect_language(code) is None
    assert flags(ANSWER + "\n\n" + code) == []


def test_only_a_bounded_prefix_is_classified() -> None:
    # the English tail after the first LANGUAGE_PREFIX_CHARS characters is not read
    german = " ".join(row[2] for row in CLEAN[:3])[:LANGUAGE_PREFIX_CHARS]
    assert len(german) == LANGUAGE_PREFIX_CHARS
    english = " ".join(row[2] for row in CLEAN[50:56])
    assert flags(german + " " + english, language="de") == []
    assert flags(english + " " + german, language="de") == ["wrong_language"]


def test_no_language_or_an_unknown_one_is_not_checked() -> None:
    assert flags(ENGLISH, language=None) == []
    assert wrong_language(ENGLISH, "xx") is False


# all together


def test_flags_come_in_the_documented_order() -> None:
    content = f"{PROMPT}<|im_end|> " + "Bitte bringt die Quartalszahlen mit. " * 20
    assert flags(content, finish="length", language="en") == [
        "template_leak",
        "prompt_echo",
        "repetition_loop",
        "cut_at_limit",
        "wrong_language",
    ]
    assert ANSWER_FLAGS == (
        "template_leak",
        "prompt_echo",
        "repetition_loop",
        "cut_at_limit",
        "cut_in_reasoning",
        "empty",
        "reasoning_only",
        "wrong_language",
    )


# clean answers of both languages


def _pack_prompts() -> dict[tuple[str, str], tuple[str, str]]:
    """(pack, prompt id) → (prompt, the baseline variant's system prompt)."""
    out = {}
    for name in ("buero", "ndassist"):
        pack = yaml.safe_load((REPO / "packs" / f"{name}.yaml").read_text(encoding="utf-8"))
        system = pack["prompt_variants"][0]["system_prompt"]
        for category in pack["categories"]:
            for p in category["prompts"]:
                out[(name, p["id"])] = (p["prompt"], system)
    return out


def _clean_answers() -> list[tuple[str, str, str, str, str]]:
    """(id, language, answer, prompt, system prompt) of every clean answer."""
    prompts = _pack_prompts()
    rows = []
    for i, e in enumerate(yaml.safe_load((HERE / "clean_de.yaml").read_text(encoding="utf-8"))):
        prompt, system = prompts[(e["pack"], e["prompt"])]
        rows.append((f"de{i}-{e['pack']}-{e['prompt']}", "de", e["answer"], prompt, system))
    en = yaml.safe_load((HERE / "clean_en.yaml").read_text(encoding="utf-8"))
    for i, e in enumerate(en["answers"]):
        rows.append((f"en{i}", "en", e["answer"], e["prompt"], en["system_prompt"]))
    return rows


CLEAN = _clean_answers()


def test_there_are_50_clean_answers_per_language_covering_both_shipped_packs() -> None:
    assert [lang for _, lang, *_ in CLEAN].count("de") == 50
    assert [lang for _, lang, *_ in CLEAN].count("en") == 50
    assert {row[0].split("-")[1] for row in CLEAN if row[1] == "de"} == {"buero", "ndassist"}
    assert all(len(row[2].split()) >= 10 for row in CLEAN)


@pytest.mark.parametrize(
    ("language", "answer", "prompt", "system"), [r[1:] for r in CLEAN], ids=[r[0] for r in CLEAN]
)
def test_no_clean_answer_gets_a_flag(language: str, answer: str, prompt: str, system: str) -> None:
    assert answer_flags(answer, "", "stop", prompt, system, language) == []
    assert answer_flags(answer, "", "stop", prompt, None, language) == []  # variant "none"
