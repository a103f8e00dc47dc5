"""Prompts of a target token length, and the request body that forces the output length.

A prompt is one user message: a unique first line (the cache-bust nonce of
:func:`touchstone_ray.fleet.prompts.nonce_line`), one instruction line, then a passage of the
corpus (:mod:`.corpus`). Its length is fitted by bisection over the passage's word count so
that the prompt, chat template included, is as close to the target as possible without
exceeding it, counted by the server's tokenizer (``count_prompt_tokens``: llama.cpp
``/apply-template`` + ``/tokenize``) where it has one, else by the estimate of
:func:`touchstone_ray.fleet.prompts.estimate_prompt_tokens`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from touchstone_ray.fleet import estimate_prompt_tokens
from touchstone_ray.perf.corpus import passage

INSTRUCTION = "Continue this text in the same language and style:"
"""The line between the nonce and the passage."""
MAX_COUNTS = 24
"""Most token counts one fit may ask for (bisection over up to 2^24 words)."""

CountFn = Callable[[list[dict[str, str]]], Awaitable[int | None]]
"""``messages -> prompt tokens`` by the server, or ``None`` when it cannot count."""


def prompt_messages(nonce: str, n_words: int, offset: int = 0) -> list[dict[str, str]]:
    """The chat messages of a perf prompt: ``nonce``, the instruction, ``n_words`` words."""
    return [{"role": "user", "content": f"{nonce}\n{INSTRUCTION}\n\n{passage(n_words, offset)}"}]


@dataclass(frozen=True)
class FittedPrompt:
    """A prompt body fitted to a target: ``n_words`` of the corpus from ``offset`` give
    ``tokens`` prompt tokens (with the nonce used for counting), counted by ``source``."""

    target: int
    n_words: int
    offset: int
    tokens: int
    source: Literal["server", "estimated"]


async def fit_prompt(count: CountFn, target: int, nonce: str, offset: int = 0) -> FittedPrompt:
    """The largest word count whose prompt has at most ``target`` tokens (at least 1 word).

    ``count`` is asked about each candidate; once it returns ``None`` the estimate is used
    for the rest of the fit (``source`` ``estimated``)."""
    source: Literal["server", "estimated"] = "server"

    async def tokens_of(n: int) -> int:
        nonlocal source
        messages = prompt_messages(nonce, n, offset)
        if source == "server":
            got = await count(messages)
            if got is not None:
                return got
            source = "estimated"
        return estimate_prompt_tokens(messages).tokens

    lo, lo_tokens = 1, await tokens_of(1)
    hi = max(2, target)
    hi_tokens = await tokens_of(hi)
    asked = 2
    while hi_tokens <= target and asked < MAX_COUNTS:
        lo, lo_tokens, hi = hi, hi_tokens, hi * 2
        hi_tokens = await tokens_of(hi)
        asked += 1
    while hi - lo > 1 and asked < MAX_COUNTS:
        mid = (lo + hi) // 2
        mid_tokens = await tokens_of(mid)
        asked += 1
        if mid_tokens <= target:
            lo, lo_tokens = mid, mid_tokens
        else:
            hi = mid
    return FittedPrompt(target, lo, offset, lo_tokens, source)


FORCING: dict[str, dict[str, Any]] = {
    "llamacpp": {"ignore_eos": True},
    "vllm": {"ignore_eos": True, "min_tokens": None},
}
"""Per engine, the body keys that make the server generate exactly ``max_tokens`` tokens
(llama.cpp and vLLM ``ignore_eos``; vLLM ``min_tokens``, ``None`` = the output length).
Engines not listed cannot be forced; their records say ``output_forced: false``."""


COLD: dict[str, dict[str, Any]] = {"llamacpp": {"cache_prompt": False}}
"""Per engine, the body keys that keep a cache-busted request entirely out of the prompt
cache. A nonce first line alone leaves llama.cpp one cached token (the BOS: ``cache_n`` 1
measured on every cold request), which marks the request ``prompt_cached`` and drops it from
the TTFT figures; vLLM's prefix cache works in blocks, which the nonce already breaks."""


def cold_body(engine: str) -> dict[str, Any]:
    """Extra body keys for a cold (cache-busted) request on ``engine``; ``{}`` when none."""
    return dict(COLD.get(engine, {}))


def forced_output(engine: str, output_tokens: int) -> tuple[dict[str, Any], bool]:
    """``(extra body, forced)`` for ``output_tokens`` completion tokens on ``engine``."""
    keys = FORCING.get(engine)
    if keys is None:
        return {}, False
    return {k: output_tokens if v is None else v for k, v in keys.items()}, True
