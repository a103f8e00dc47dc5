"""Flags a judge names are checked against the prompt's (1-based labels R1/G1 or exact text
after whitespace/case normalisation); everything else lands in unknown_flags."""

from __future__ import annotations

from judging_factories import make_pack

from touchstone_ray.judging.flags import check_flags
from touchstone_ray.judging.prompts import answer_prompt

RED = ("Erfindet eine Zahl", "Nennt eine Quelle, die es nicht gibt")
GREEN = ("Sagt, was fehlt",)


def test_labels_text_and_unknown() -> None:
    out = check_flags(
        ["R1", "  nennt eine QUELLE,  die es nicht gibt ", "<Red Flag>", "1", "G1", "R3", ""],
        ["g1", "2", "R1: Erfindet eine Zahl", "G1. Sagt, was fehlt"],
        RED,
        GREEN,
    )
    assert out.red_flags_hit == ["Erfindet eine Zahl", "Nennt eine Quelle, die es nicht gibt"]
    assert out.green_flags_hit == ["Sagt, was fehlt"]
    assert out.unknown_flags == ["<Red Flag>", "G1", "R3", "2", "R1: Erfindet eine Zahl"]


def test_label_with_wrong_text_is_unknown() -> None:
    out = check_flags(["R2: Erfindet eine Zahl"], [], RED, GREEN)
    assert (out.red_flags_hit, out.unknown_flags) == ([], ["R2: Erfindet eine Zahl"])


def test_prompt_numbers_flags_like_the_check() -> None:
    pack = make_pack()
    text = answer_prompt(pack, pack.prompt("A1"), pack.variant("baseline"), "x").messages[1][
        "content"
    ]
    assert "G1. grün A1" in text and "R1. rot A1" in text
    assert check_flags(["R1"], ["G1"], ("rot A1",), ("grün A1",)).red_flags_hit == ["rot A1"]
