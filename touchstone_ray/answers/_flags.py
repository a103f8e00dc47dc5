"""The per-answer flags (SPEC §7 ``answer_flags``) and :func:`answer_flags`, which runs every
detector once.

Each flag is its own predicate, so they overlap where the shapes do: an answer cut inside its
reasoning is ``cut_at_limit``, ``cut_in_reasoning`` and ``reasoning_only`` at once.
"""

from __future__ import annotations

from typing import get_args

from touchstone_ray.answers._language import wrong_language
from touchstone_ray.answers._markers import leaked_markers
from touchstone_ray.answers._text import echo_of, is_loop, ngram_hashes, word_hashes
from touchstone_ray.records import AnswerFlag

ANSWER_FLAGS: tuple[AnswerFlag, ...] = get_args(AnswerFlag)
"""Every flag, in the order :func:`answer_flags` lists them."""

LENGTH_FINISH = "length"
"""The ``finish_reason`` of an answer that hit its ``max_tokens`` (Ollama ``done_reason``)."""


def cut_at_limit(finish_reason: str | None) -> bool:
    """The server stopped at the token budget (``finish_reason`` :data:`LENGTH_FINISH`)."""
    return finish_reason == LENGTH_FINISH


def cut_in_reasoning(content: str, reasoning: str, finish_reason: str | None) -> bool:
    """The budget ran out inside the reasoning: cut at the limit, reasoning, no content."""
    return cut_at_limit(finish_reason) and not content.strip() and bool(reasoning.strip())


def empty(content: str, reasoning: str) -> bool:
    """Neither content nor reasoning (whitespace only)."""
    return not content.strip() and not reasoning.strip()


def reasoning_only(content: str, reasoning: str) -> bool:
    """Reasoning but no content (whitespace only)."""
    return not content.strip() and bool(reasoning.strip())


def answer_flags(
    content: str,
    reasoning: str,
    finish_reason: str | None,
    prompt: str | None,
    system_prompt: str | None,
    language: str | None,
) -> list[str]:
    """The flags of one answer, in :data:`ANSWER_FLAGS` order; ``[]`` when clean.

    ``content`` is the answer the judge sees, ``reasoning`` its reasoning (``""`` none),
    ``finish_reason`` as the server sent it, ``prompt`` / ``system_prompt`` the cell's user and
    system prompt (``None`` none) and ``language`` the pack's (``de`` / ``en``; ``None`` skips
    ``wrong_language``). The text detectors look at the content only; the echo check ignores
    the leaked markers. Never raises for any text.
    """
    flags: list[str] = []
    has_content = bool(content.strip())
    if has_content:
        leaked = leaked_markers(content)
        if leaked:
            flags.append("template_leak")
        text = content
        for marker in leaked:
            text = text.replace(marker, " ")
        words = word_hashes(text)
        grams = ngram_hashes(words)
        prompts = [word_hashes(p) for p in (prompt, system_prompt) if p]
        if echo_of(words, grams, prompts):
            flags.append("prompt_echo")
        if is_loop(len(words), grams):
            flags.append("repetition_loop")
    if cut_at_limit(finish_reason):
        flags.append("cut_at_limit")
    if cut_in_reasoning(content, reasoning, finish_reason):
        flags.append("cut_in_reasoning")
    if empty(content, reasoning):
        flags.append("empty")
    if reasoning_only(content, reasoning):
        flags.append("reasoning_only")
    if has_content and wrong_language(content, language):
        flags.append("wrong_language")
    return flags
