"""One stream normalizer for every protocol: deltas in, SPEC §9 answer and timing fields out.

Protocol parsers (:mod:`.ollama`, :mod:`.openai`) turn wire chunks into two kinds of events:

* :meth:`StreamNormalizer.delta` ``(t, content, reasoning, reasoning_source)`` once per chunk,
  where ``t`` is ``time.perf_counter()`` taken when the socket read that brought the chunk's
  bytes returned (before HTTP and JSON parsing), and ``content``/``reasoning`` are the raw
  deltas (``None`` when absent);
  a chunk's tool calls come with it (``tool_calls``: OpenAI fragments, or Ollama's whole calls
  with ``whole_calls``) and are assembled by :class:`~touchstone_ray.engines._tools.
  ToolCallAssembler`;
* :meth:`StreamNormalizer.finish` with the finish reason and the server's token counts, as
  often as they arrive (OpenAI may send usage only in a trailing chunk with ``choices: []``).

:meth:`StreamNormalizer.result` then computes, exactly as SPEC §9 defines them (seconds):

* the clock starts at ``t0``, when the HTTP request is sent;
* ``ttft_s``: first chunk with a non-empty delta on any channel: answer, reasoning, or a tool
  call (a fragment with a non-empty id, name or arguments piece; so a turn that only calls
  tools has a TTFT). Role-only chunks, empty strings, ``null`` and SSE comments never reach or
  never count here;
* ``ttfa_s``: first chunk carrying answer text that is not whitespace (so the ``"\\n\\n"``
  that follows ``</think>`` is not "the answer"), after ``<think>`` splitting;
* ``reasoning_s``: from the first reasoning token (the first reasoning-channel chunk, or the
  first content chunk when the reasoning is a ``<think>`` block) to the answer's first chunk;
  ``reasoning_tps = reasoning_tokens / reasoning_s`` (the answer's first token comes one token
  interval after the last reasoning token); both ``None`` without reasoning or without answer;
* ``itl_p50_s``/``itl_p95_s``: gaps between consecutive token-carrying chunks, percentiles
  with linear interpolation (numpy's default);
* ``e2e_s`` until the stream ended; ``tpot_s = (e2e - ttft) / (completion_tokens - 1)``
  (``None`` for ≤ 1 token); ``decode_tps = (completion_tokens - 1) / (e2e - ttft)`` = 1 / TPOT
  (SPEC §9, changed: the first token arrives at TTFT, so ``e2e - ttft`` spans n − 1 token
  intervals; llama.cpp's own ``predicted_per_second`` is the same (n − 1) / ``predicted_ms``);
  ``prefill_tps = (prompt_tokens - cached_tokens) / ttft``, the prompt tokens the server really
  processed; all prompt tokens when the server does not say how many came from its cache.

Server truth is kept beside the measurement: ``cached_tokens`` (prompt tokens served from the
server's prompt cache; ``None`` when the server does not say, never 0 by default),
``prompt_cached`` (:func:`is_prompt_cached`) and ``server_timings`` (the server's own
``{prompt_n, prompt_ms, predicted_n, predicted_ms, cache_n}``, ms and tokens, or ``None``).

``<think>…</think>`` inside content is split on the whole text at the end, so tags split across
chunks (``</thi`` + ``nk>``), both tags in one chunk, a lone ``</think>`` (everything before it
was reasoning: templates that put ``<think>`` in the prompt) and an unclosed ``<think>`` (a
length stop inside reasoning) all come out right, and the answer's first chunk is known.

Token counts come from the server when it sends them (``token_count_source="server"``); any
count it did not send is estimated (``"estimated"``) as ``max(token-carrying chunks,
ceil(chars / 4))``: every chunk carries at least one token (a lower bound), and four characters
per token is the usual rule of thumb for when servers batch several tokens into one chunk; the
characters of tool-call names and arguments count with the text.

Tool calls are answer too: a turn with calls and no text has ``content_empty`` true (no text)
but is never ``reasoning_only``.
"""

from __future__ import annotations

import bisect
import itertools
import math
from typing import Any

from touchstone_ray.descriptive import percentile
from touchstone_ray.engines._tools import ToolCallAssembler
from touchstone_ray.records import ReasoningSource

_OPEN = "<think>"
_CLOSE = "</think>"


def estimate_tokens(chars: int, chunks: int = 0) -> int:
    """Estimated token count: ``max(chunks, ceil(chars / 4))`` (see the module docstring)."""
    return max(chunks, math.ceil(chars / 4))


def split_think(text: str) -> tuple[str, str, int | None, bool]:
    """Split ``<think>`` reasoning out of answer ``text``.

    Returns ``(reasoning, answer, answer_offset, found)``: ``answer_offset`` is the index in
    ``text`` of the answer's first non-whitespace character (``None`` when there is none) and
    ``found`` whether a tag was recognised. An opening tag counts only at the start (after
    whitespace); a closing tag without one means everything before it was reasoning; an
    unclosed opening tag makes the rest reasoning. Leading whitespace of the answer after a
    tag is dropped; only the first think block is split.
    """
    lead = len(text) - len(text.lstrip())
    if text.startswith(_OPEN, lead):
        start = lead + len(_OPEN)
        end = text.find(_CLOSE, start)
        if end < 0:
            return text[start:].strip(), "", None, True
        reasoning = text[start:end]
    else:
        end = text.find(_CLOSE)
        if end < 0:
            first = lead if lead < len(text) else None
            return "", text, first, False
        reasoning = text[:end]
    after = end + len(_CLOSE)
    answer = text[after:].lstrip()
    offset = len(text) - len(answer) if answer else None
    return reasoning.strip(), answer, offset, True


CACHE_HIT_MIN_SHARE = 0.05
"""Share of the prompt that must come from the server's cache for a cell to be a cache hit."""


def is_prompt_cached(cached_tokens: int | None, prompt_tokens: int | None) -> bool:
    """Whether a cell's prompt phase was shortened by the server's prompt cache.

    ``cached_tokens ≥ 2`` and ``≥ CACHE_HIT_MIN_SHARE × prompt_tokens`` (when the prompt count
    is known). A single cached token is no hit: llama.cpp keeps the start token of every slot
    and reports ``cache_n = 1`` for a prompt that shares nothing else (measured on the real
    server), also for a cache-busted one. ``cached_tokens`` itself is kept as the server sent
    it; ``prefill_tps`` subtracts it either way.
    """
    if not cached_tokens or cached_tokens < 2:
        return False
    return prompt_tokens is None or cached_tokens >= CACHE_HIT_MIN_SHARE * prompt_tokens


class StreamNormalizer:
    """Accumulates one response stream's deltas and computes its answer and timing fields.

    ``t0`` is ``time.perf_counter()`` when the request was sent; ``prompt_chars`` (the
    characters of all message texts) is used only to estimate prompt tokens when the server
    does not report them. Not thread-safe; one instance per attempt.
    """

    def __init__(self, t0: float, prompt_chars: int = 0) -> None:
        self.t0 = t0
        self.prompt_chars = prompt_chars
        self.token_times: list[float] = []
        """perf_counter times of the token-carrying chunks, in arrival order."""
        self._content: list[str] = []
        self._content_offsets: list[int] = []
        self._content_times: list[float] = []
        self._content_len = 0
        self._reasoning: list[str] = []
        self._reasoning_chunks = 0
        self._reasoning_t: float | None = None
        self._source: ReasoningSource | None = None
        self.finish_reason: str | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.reasoning_tokens: int | None = None
        self.load_duration_s: float | None = None
        self.cached_tokens: int | None = None
        self.server_timings: dict[str, float | int | None] | None = None
        self.tools = ToolCallAssembler()
        """The stream's tool calls."""

    def delta(
        self,
        t: float,
        content: str | None,
        reasoning: str | None,
        reasoning_source: ReasoningSource | None = None,
        tool_calls: Any = None,
        *,
        whole_calls: bool = False,
    ) -> None:
        """One chunk: ``content`` and/or ``reasoning`` delta (``None``/``""`` = nothing)
        arriving at perf_counter time ``t``; ``reasoning_source`` names the reasoning field;
        ``tool_calls`` the chunk's calls as sent (OpenAI ``delta.tool_calls`` fragments, or
        with ``whole_calls`` Ollama's ``message.tool_calls``)."""
        carried = False
        if tool_calls is not None:
            if whole_calls:
                carried = self.tools.add_whole(tool_calls)
            else:
                carried = self.tools.add_fragments(tool_calls)
        if content:
            self._content_offsets.append(self._content_len)
            self._content_times.append(t)
            self._content.append(content)
            self._content_len += len(content)
            carried = True
        if reasoning:
            self._reasoning.append(reasoning)
            self._reasoning_chunks += 1
            if self._reasoning_t is None:
                self._reasoning_t = t
            if self._source is None:
                self._source = reasoning_source
            carried = True
        if carried:
            self.token_times.append(t)

    def finish(
        self,
        *,
        finish_reason: str | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        reasoning_tokens: int | None = None,
        load_duration_s: float | None = None,
        cached_tokens: int | None = None,
        server_timings: dict[str, float | int | None] | None = None,
    ) -> None:
        """The finish/usage event; may come more than once, a non-``None`` value wins.
        ``cached_tokens``: prompt tokens the server took from its cache; ``server_timings``:
        the server's own ``{prompt_n, prompt_ms, predicted_n, predicted_ms, cache_n}``."""
        if finish_reason is not None:
            self.finish_reason = finish_reason
        if prompt_tokens is not None:
            self.prompt_tokens = prompt_tokens
        if completion_tokens is not None:
            self.completion_tokens = completion_tokens
        if reasoning_tokens is not None:
            self.reasoning_tokens = reasoning_tokens
        if load_duration_s is not None:
            self.load_duration_s = load_duration_s
        if cached_tokens is not None:
            self.cached_tokens = cached_tokens
        if server_timings is not None:
            self.server_timings = server_timings

    @property
    def has_tokens(self) -> bool:
        """Whether any token-carrying chunk arrived."""
        return bool(self.token_times)

    def result(self, t_end: float) -> dict[str, Any]:
        """The ChatResult answer and timing fields for a stream that ended at perf_counter
        ``t_end`` (a dict keyed by EvalResponse field names; ``ok`` is not included)."""
        content = "".join(self._content)
        tag_reasoning, answer, offset, found = split_think(content)
        reasoning = "".join(self._reasoning)
        source = self._source
        if found:
            reasoning = f"{reasoning}\n{tag_reasoning}" if reasoning else tag_reasoning
            source = source or "think_tag"
        ttfa: float | None = None
        reasoning_s: float | None = None
        if offset is not None:
            idx = bisect.bisect_right(self._content_offsets, offset) - 1
            ttfa = self._content_times[idx] - self.t0
            starts = [self._reasoning_t, self._content_times[0] if tag_reasoning else None]
            first = min((t for t in starts if t is not None), default=None)
            if first is not None:
                reasoning_s = self._content_times[idx] - first
        ttft = self.token_times[0] - self.t0 if self.token_times else None
        e2e = t_end - self.t0
        gaps = [b - a for a, b in itertools.pairwise(self.token_times)]

        estimated = False
        completion = self.completion_tokens
        if completion is None:
            chars = len(content) + len(reasoning) + self.tools.chars
            completion = estimate_tokens(chars, len(self.token_times))
            estimated = True
        prompt = self.prompt_tokens
        if prompt is None:
            prompt = estimate_tokens(self.prompt_chars)
            estimated = True
        reasoning_tokens = self.reasoning_tokens
        if estimated and reasoning_tokens is None and reasoning:
            reasoning_tokens = estimate_tokens(len(reasoning), self._reasoning_chunks)

        decode_s = e2e - ttft if ttft is not None else None
        processed = prompt - min(self.cached_tokens or 0, prompt)
        has_answer = bool(answer.strip())
        calls, raw_calls = self.tools.calls()
        return {
            "response_text": answer,
            "reasoning_text": reasoning,
            "reasoning_source": source if reasoning else None,
            "content_empty": not has_answer,
            "reasoning_only": not has_answer and not calls and bool(reasoning.strip()),
            "finish_reason": self.finish_reason,
            "truncated": self.finish_reason == "length",
            "ttft_s": ttft,
            "ttfa_s": ttfa,
            "e2e_s": e2e,
            "tpot_s": decode_s / (completion - 1)
            if decode_s is not None and completion > 1
            else None,
            "itl_p50_s": percentile(gaps, 50),
            "itl_p95_s": percentile(gaps, 95),
            "decode_tps": (completion - 1) / decode_s if decode_s and completion > 1 else None,
            "prefill_tps": processed / ttft if ttft else None,
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "reasoning_tokens": reasoning_tokens,
            "reasoning_s": reasoning_s,
            "reasoning_tps": reasoning_tokens / reasoning_s
            if reasoning_tokens and reasoning_s
            else None,
            "token_count_source": "estimated" if estimated else "server",
            "load_duration_s": self.load_duration_s,
            "cached_tokens": self.cached_tokens,
            "prompt_cached": is_prompt_cached(self.cached_tokens, prompt),
            "server_timings": self.server_timings,
            "tool_calls": calls,
            "tool_calls_raw": raw_calls,
        }
