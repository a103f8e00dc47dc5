"""The preflight content probe (issue 28 item 3): each model's warm-up answer classified by the
same detectors as every answer (:func:`~touchstone_ray.answers.answer_flags`), and one warning
line per model whose warm-up shows a misconfigured server.

Only :data:`PROBE_FLAGS` count here. The warm-up asks for :data:`WARMUP_MAX_TOKENS` tokens with
one short German prompt whatever the pack, so ``cut_at_limit`` (the tiny budget),
``cut_in_reasoning`` and ``reasoning_only`` (a reasoning model spends 16 tokens thinking) and
``wrong_language`` (the prompt's language is not the pack's) say nothing about the server.
Measured on the real llama.cpp server with Gemma 3 270M and its ChatML fallback template
(``shared/engine-notes.md``), the 16-token warm-up answer was
``'Antworte mit einem Wort: bereit?<|im_end|>\\n<'``: ``template_leak`` and ``prompt_echo``.
"""

from __future__ import annotations

from touchstone_ray.bundle import WarmupProbe

__all__ = [
    "EXAMPLE_CHARS",
    "PROBE_FIXES",
    "PROBE_FLAGS",
    "WARMUP_MAX_TOKENS",
    "WARMUP_PROMPT",
    "probe_answer",
    "probe_reason",
    "probe_warning",
]

WARMUP_PROMPT = "Antworte mit einem Wort: bereit?"
"""The untimed warm-up request's user message."""

WARMUP_MAX_TOKENS = 16
"""The warm-up request's ``max_tokens`` (tokens)."""

PROBE_FLAGS: tuple[str, ...] = ("template_leak", "prompt_echo", "repetition_loop", "empty")
"""The flags of a warm-up answer that name a server problem (module docstring), in
:data:`~touchstone_ray.answers.ANSWER_FLAGS` order."""

TEMPLATE_FIX = (
    "serve the model with its own chat template (llama.cpp: --chat-template NAME, or --jinja "
    "with a GGUF that carries its template; Ollama: the Modelfile's TEMPLATE)"
)

PROBE_FIXES: dict[str, str] = {
    "template_leak": TEMPLATE_FIX,
    "prompt_echo": TEMPLATE_FIX,
    "repetition_loop": (
        "check the chat template and the sampling settings (a repeat penalty, temperature 0 "
        "on a small model)"
    ),
    "empty": (
        "check the server's log: the model stopped at once (often an end token of a chat "
        "template that does not fit)"
    ),
}
"""Flag → the likely fix the warning names (the first flag of an answer decides)."""

EXAMPLE_CHARS = 120
"""The most characters of the warm-up answer a warning quotes (one line, ``repr``)."""


def probe_answer(
    content: str, reasoning: str, finish_reason: str | None, template_fix: str | None = None
) -> WarmupProbe:
    """The probe of one warm-up answer (``content`` and ``reasoning`` as received,
    ``finish_reason`` as sent): its :data:`PROBE_FLAGS`, its first :data:`EXAMPLE_CHARS`
    characters and, when flagged, the likely fix: ``pass <template_fix>`` where the template
    check named the server flag (``--chat-template gemma``) and the flag is a template one, else
    :data:`PROBE_FIXES` of the first flag. The detectors (and numpy) load on first use, as
    for every answer in the client actor."""
    from touchstone_ray.answers import answer_flags

    flags = answer_flags(content, reasoning, finish_reason, WARMUP_PROMPT, None, None)
    found = [f for f in flags if f in PROBE_FLAGS]
    probe = WarmupProbe(flags=found, example=content[:EXAMPLE_CHARS])
    if found:
        template = found[0] in ("template_leak", "prompt_echo")
        probe.fix = f"pass {template_fix}" if template_fix and template else PROBE_FIXES[found[0]]
    return probe


def probe_reason(probe: WarmupProbe) -> str:
    """``warm-up answer shows template_leak, prompt_echo``: what a flagged probe found (the
    reason a model stopped under ``--strict-preflight``)."""
    return f"warm-up answer shows {', '.join(probe.flags)}"


def probe_warning(host: str, label: str, probe: WarmupProbe) -> str | None:
    """One line for a flagged warm-up answer, ``None`` for a clean one::

    <host>: <label>: warm-up answer shows template_leak, prompt_echo
    ('Antworte mit einem Wort: bereit?<|im_end|>\\n<'): likely fix: pass --chat-template gemma
    """
    if not probe.flags:
        return None
    return f"{host}: {label}: {probe_reason(probe)} ({probe.example!r}): likely fix: {probe.fix}"
