"""The preflight content probe (issue 28 item 3) on warm-up answers as servers sent them: the
first is the real llama.cpp server's 16-token answer with Gemma 3 270M behind its ChatML
fallback template (measured 2026-12-05)."""

from __future__ import annotations

from touchstone_ray.fleet.probe import PROBE_FIXES, probe_answer, probe_warning

GEMMA_CHATML = "Antworte mit einem Wort: bereit?<|im_end|>\n<"


def test_the_leaking_echo_names_both_flags_and_the_template_checks_fix() -> None:
    probe = probe_answer(GEMMA_CHATML, "", "length", "--chat-template gemma")
    assert probe.flags == ["template_leak", "prompt_echo"]
    assert probe.fix == "pass --chat-template gemma"
    assert probe_warning("local", "gemma3-270m", probe) == (
        "local: gemma3-270m: warm-up answer shows template_leak, prompt_echo "
        "('Antworte mit einem Wort: bereit?<|im_end|>\\n<'): likely fix: pass "
        "--chat-template gemma"
    )


def test_without_a_template_check_the_general_template_fix_is_named() -> None:
    probe = probe_answer(GEMMA_CHATML, "", "length")
    assert probe.fix == PROBE_FIXES["template_leak"]
    assert probe.fix.startswith("serve the model with its own chat template (llama.cpp: ")


def test_a_clean_answer_and_the_warmups_own_budget_give_no_warning() -> None:
    for content, reasoning, finish in (
        ("Bereit.", "", "stop"),
        ("Ja, ich bin bereit, was kann ich", "", "length"),  # cut_at_limit: the 16 tokens
        ("", "Okay, the user wants one word", "length"),  # a reasoning model's 16 tokens
        ("Ready.", "", "stop"),  # wrong_language: the warm-up prompt is German
    ):
        probe = probe_answer(content, reasoning, finish, "--chat-template gemma")
        assert (probe.flags, probe.fix) == ([], None), content
        assert probe_warning("h", "m", probe) is None


def test_an_empty_answer_names_the_servers_log() -> None:
    probe = probe_answer("", "", "stop")
    assert probe.flags == ["empty"] and probe.fix == PROBE_FIXES["empty"]
    assert probe.example == ""


def test_a_loop_is_named_with_its_own_fix_even_with_a_template_fix() -> None:
    loop = "und dann und dann und dann " * 8
    probe = probe_answer(loop, "", "length", "--chat-template gemma")
    assert probe.flags == ["repetition_loop"] and probe.fix == PROBE_FIXES["repetition_loop"]
    assert probe.example == loop[:120]
