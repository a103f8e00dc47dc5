"""The prompt a cell sends, whether it fits the model's context, and whether it was cut.

* Cache busting (``scheduling.cache_bust: true``): a nonce line first in the cell's first
  message (the system prompt when there is one, so the shared prefix is not served from a
  prompt cache either). The nonce is ``sha256(run id + cell key)``'s first 12 hex digits, so a
  cell sends the same prompt when the run is resumed, and no two cells share a prefix.
* Counting (before any request): the server's own tokenizer where it has one (llama.cpp,
  vLLM: ``source="server"``), else an estimate of :data:`CHARS_PER_TOKEN_HIGH` characters a
  token plus :data:`MESSAGE_OVERHEAD_TOKENS` per message for the chat template
  (``"estimated"``). German and English text runs 3.5–5 characters a token on current
  tokenizers; 3 errs toward too many tokens, so a prompt that really does not fit is not
  missed (a margin of 15–40 %).
* The context a server that takes it per request gets when nobody chose one:
  :func:`context_need`.
* After the call: :func:`input_truncated`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

CHARS_PER_TOKEN_HIGH = 3.0
"""Characters a token for the estimate that errs toward more tokens (fit check)."""
MESSAGE_OVERHEAD_TOKENS = 8
"""Template tokens a chat message adds (role markers, separators), estimated."""
TRUNCATED_SHARE = 0.8
"""A server that saw fewer than this share of the counted prompt tokens cut the prompt."""
ANSWER_ROOM_TOKENS = 4096
"""Room for the answer of a prompt without ``max_tokens`` (tokens) in :func:`context_need`: an
uncapped answer has no known length; this leaves room for a long one (some 3,000 words)."""


def nonce_line(run_id: str, key: str) -> str:
    """The cache-busting first line of cell ``key`` in run ``run_id`` (deterministic)."""
    digest = hashlib.sha256(f"{run_id}\n{key}".encode()).hexdigest()[:12]
    return f"[{digest}]"


def cell_messages(
    system_prompt: str | None, prompt: str, nonce: str | None = None
) -> list[dict[str, str]]:
    """The chat messages of a cell; ``nonce`` (a :func:`nonce_line`) goes first in the first
    message, on its own line."""
    messages = []
    if system_prompt is not None:
        messages.append({"role": "system", "content": system_prompt})
    messages.append({"role": "user", "content": prompt})
    if nonce is not None:
        messages[0] = {**messages[0], "content": f"{nonce}\n{messages[0]['content']}"}
    return messages


@dataclass(frozen=True)
class PromptCount:
    """Prompt tokens of a cell before it is sent: ``tokens``, and where the count came from."""

    tokens: int
    source: Literal["server", "estimated"]


def estimate_prompt_tokens(messages: list[dict[str, str]]) -> PromptCount:
    """The documented estimate (module docstring): ``ceil(chars / 3) + 8`` per message."""
    tokens = sum(
        math.ceil(len(m.get("content", "")) / CHARS_PER_TOKEN_HIGH) + MESSAGE_OVERHEAD_TOKENS
        for m in messages
    )
    return PromptCount(tokens, "estimated")


def fits(count: PromptCount, max_tokens: int | None, limit: int | None) -> bool:
    """Whether ``count`` prompt tokens plus ``max_tokens`` (0 when unset) fit ``limit`` tokens
    (``True`` when the limit is unknown)."""
    return limit is None or count.tokens + (max_tokens or 0) <= limit


def context_need(prompts: Iterable[tuple[int, int | None]]) -> int | None:
    """The context that every prompt fits (tokens): the largest ``prompt tokens + max_tokens``
    over ``(prompt tokens, max_tokens)`` pairs, a prompt without a cap counted with
    :data:`ANSWER_ROOM_TOKENS`; ``None`` for no prompts. The prompt counts are the fit check's
    (an estimate errs toward more tokens, so a prompt is not cut by a short count)."""
    return max((tokens + (cap or ANSWER_ROOM_TOKENS) for tokens, cap in prompts), default=None)


def input_truncated(
    server_prompt_tokens: int | None, count: PromptCount | None, limit: int | None
) -> bool | None:
    """Whether the server answered a cut prompt, from what it reports after the call.

    ``True`` when the server's prompt tokens reach the context ``limit`` or ``limit − 1`` (a
    server that cuts fills the context), or are below :data:`TRUNCATED_SHARE` × a count by the
    server's own tokenizer (llama.cpp and vLLM report the whole prompt in ``prompt_tokens``,
    cached part included). The share test is skipped for estimated counts: an estimate is not
    exact, and Ollama's ``prompt_eval_count`` leaves out a cached prefix. ``None`` when neither
    test can be made (no server count, or no limit and no tokenizer count).
    """
    if server_prompt_tokens is None:
        return None
    checked = False
    if limit is not None:
        checked = True
        if server_prompt_tokens >= limit - 1:
            return True
    if count is not None and count.source == "server":
        checked = True
        if server_prompt_tokens < TRUNCATED_SHARE * count.tokens:
            return True
    return False if checked else None
