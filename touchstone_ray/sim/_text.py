"""Deterministic answer text for the simulated engine.

Everything here is a pure function of its inputs: the same (seed, model, messages, sampling)
always gives the same tokens. A token is one German-ish filler word with its leading whitespace
(1 word = 1 token), so counts are exact: the server reports as ``completion_tokens`` /
``eval_count`` exactly the tokens it wrote, and as prompt tokens the whitespace-separated word
count of all message texts.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from typing import Any

_WORD_TEXT = (
    "und der die das ist nicht auch eine einen Schritt Aufgabe Plan Zeit heute morgen kurz "
    "klar ruhig zuerst danach dann vielleicht wichtig hilfreich genau einfach kleine kleinen "
    "Liste Punkt Frage Antwort Beispiel Termin Pause Woche Ziel Idee Notiz Hinweis Weg "
    "sinnvoll möglich gemeinsam konkret freundlich geduldig prüfen schreiben planen ordnen "
    "beginnen erledigen merken überlegen helfen sagen fragen bleiben gehen machen Ordnung "
    "Struktur Überblick Reihenfolge Entlastung Ruhe Energie Rückmeldung Absprache Grenze "
    "Situation Gespräch Gefühl Bedürfnis Umgebung Licht Geräusch Timer Kalender Erinnerung"
)
_THINK_TEXT = (
    "Der Nutzer fragt nach also zuerst prüfen was gemeint ist dann eine Antwort mit kurzen "
    "Schritten formulieren Ton freundlich halten keine Diagnose stellen Annahmen nennen "
    "Kontext beachten Länge begrenzen Format einhalten Fakten nicht erfinden"
)
_WORDS = tuple(_WORD_TEXT.split())
_THINK_WORDS = tuple(_THINK_TEXT.split())

_MARKER_RE = re.compile(r"⟦sim q=([0-9]*\.?[0-9]+)⟧")


def digest(*parts: Any) -> str:
    """SHA-256 hex of the canonical JSON of ``parts`` (sorted keys, UTF-8)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def rng_for(*parts: Any) -> random.Random:
    """A PRNG seeded from :func:`digest` of ``parts``: independent of ``PYTHONHASHSEED``."""
    return random.Random(int(digest(*parts)[:16], 16))


def request_key(model: str, messages: list[Any]) -> str:
    """The stats key of a request: SHA-256 of (model, messages), independent of the seed."""
    return digest("key", model, messages)


def message_text(content: Any) -> str:
    """Text of a chat message ``content``: a string, or OpenAI content parts ``[{"type":
    "text", "text": …}]`` (non-text parts are ignored)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
        return "\n".join(texts)
    return ""


def prompt_token_count(messages: list[Any]) -> int:
    """Prompt tokens: whitespace-separated words of all message texts."""
    return sum(len(message_text(m.get("content")).split()) for m in messages if isinstance(m, dict))


def last_user_text(messages: list[Any]) -> str:
    """Text of the last ``role: user`` message ('' when there is none)."""
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            return message_text(m.get("content"))
    return ""


def quality_marker(quality: float) -> str:
    """The marker ending every simulated answer, e.g. ``⟦sim q=0.70⟧``."""
    return f"⟦sim q={quality:.2f}⟧"


def find_marker(text: str) -> float | None:
    """Quality of the LAST marker in ``text`` (the real one ends the answer), clipped to 0..1."""
    found = _MARKER_RE.findall(text)
    if not found:
        return None
    return min(1.0, max(0.0, float(found[-1])))


def split_tokens(text: str) -> list[str]:
    """Split text into tokens, each a run of non-space characters with its leading whitespace;
    ``"".join(split_tokens(t)) == t`` for any ``t`` that does not end in whitespace."""
    return re.findall(r"\s*\S+", text)


def filler_tokens(rng: random.Random, n: int, words: tuple[str, ...]) -> list[str]:
    """``n`` tokens of sentence-like filler: capitalised starts, full stops, paragraphs."""
    tokens: list[str] = []
    until_stop = rng.randint(6, 14)
    sentences = 0
    for i in range(n):
        word = rng.choice(words)
        start = i == 0 or tokens[-1].endswith(".")
        if start:
            word = word[:1].upper() + word[1:]
        until_stop -= 1
        if until_stop == 0 or i == n - 1:
            word += "."
            until_stop = rng.randint(6, 14)
            sentences += 1
        if i == 0:
            sep = ""
        elif start and sentences % 3 == 0:
            sep = "\n\n"
        else:
            sep = " "
        tokens.append(sep + word)
    return tokens


@dataclass(frozen=True)
class Completion:
    """The full planned completion: reasoning tokens, then answer tokens."""

    reasoning: list[str]
    answer: list[str]
    endless: bool = False
    """The reasoning does not end by itself: the completion counts as cut at the limit even
    where the limit is not reached (``SimModelKnobs.endless_reasoning``)."""

    def take(self, limit: int | None) -> tuple[list[str], list[str], bool]:
        """Reasoning and answer tokens within ``limit`` tokens, and whether it was cut."""
        total = len(self.reasoning) + len(self.answer)
        if limit is None or limit >= total:
            return self.reasoning, self.answer, self.endless
        reasoning = self.reasoning[:limit]
        return reasoning, self.answer[: limit - len(reasoning)], True


@dataclass(frozen=True)
class AnswerShape:
    """How a misbehaving model's answer looks (the ``SimModelKnobs`` of the same names):
    ``echo`` (text the answer begins with), ``leak`` (control text after it), ``loop_period``
    (tokens the filler repeats)."""

    echo: str = ""
    leak: str = ""
    loop_period: int | None = None


def system_text(messages: list[Any]) -> str:
    """Text of the first ``role: system`` message ('' when there is none)."""
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "system":
            return message_text(m.get("content"))
    return ""


def _spaced(tokens: list[str]) -> list[str]:
    """``tokens`` with whitespace before the first, to follow other text."""
    if tokens and not tokens[0][:1].isspace():
        return [("\n\n" + tokens[0]), *tokens[1:]]
    return tokens


def shaped_body(rng: random.Random, n: int, shape: AnswerShape) -> list[str]:
    """``n`` answer tokens before the quality marker: the echo, the leaked markers, then
    filler (repeating its first ``loop_period`` tokens); cut to ``n``."""
    head = split_tokens(shape.echo.strip())
    if shape.leak.strip():
        head += _spaced(split_tokens(shape.leak.strip()))
    filler = filler_tokens(rng, max(0, n - len(head)), _WORDS)
    if shape.loop_period is not None and filler:
        period = _spaced(filler[: shape.loop_period]) if head else filler[: shape.loop_period]
        again = [" " + t.lstrip() for t in period]
        filler = [*period, *(again * (len(filler) // len(period)))][: len(filler)]
    elif head:
        filler = _spaced(filler)
    return [*head, *filler][:n]


def sampling_key(temperature: Any, seed: Any) -> Any:
    """What sampling adds to the answer seed: nothing when greedy (temperature 0 or unset),
    else (temperature, request seed)."""
    if temperature is None or temperature == 0:
        return None
    return [temperature, seed]


def plan_completion(
    *,
    seed: int,
    model: str,
    messages: list[Any],
    sampling: Any,
    answer_tokens: int,
    reasoning_share: float,
    quality: float,
    think: bool,
    answer_override: str | None = None,
    shape: AnswerShape | None = None,
    endless_reasoning: bool = False,
) -> Completion:
    """Plan a completion of ``answer_tokens`` tokens, ``reasoning_share`` of them reasoning
    (none when ``think`` is false; all of them, never closed, with ``endless_reasoning``). The
    answer ends with the quality marker line, unless ``answer_override`` (a judge verdict
    document) replaces the answer text; ``shape`` shapes the text before the marker."""
    rng = rng_for("answer", seed, model, messages, sampling)
    if endless_reasoning and think and answer_override is None:
        return Completion(filler_tokens(rng, answer_tokens, _THINK_WORDS), [], endless=True)
    n_reason = round(answer_tokens * reasoning_share)
    n_answer = answer_tokens - n_reason
    reasoning = filler_tokens(rng, n_reason, _THINK_WORDS) if think else []
    if answer_override is not None:
        return Completion(reasoning, split_tokens(answer_override))
    if n_answer == 0:
        return Completion(reasoning, [])
    marker = quality_marker(quality)
    if shape is None or shape == AnswerShape():
        body = filler_tokens(rng, n_answer - 1, _WORDS)
    else:
        body = shaped_body(rng, n_answer - 1, shape)
    answer = [*body, ("\n\n" if n_answer > 1 else "") + marker]
    return Completion(reasoning, answer)
