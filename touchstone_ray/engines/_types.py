"""The engine data contracts: :class:`ChatRequest` in, :class:`ChatResult` out, and the
:class:`EngineSettings` of one endpoint (re-exported by :mod:`touchstone_ray.engines.base`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from touchstone_ray.errors import ErrorKind
from touchstone_ray.records import ReasoningSource, TokenCountSource


class ChatRequest(BaseModel):
    """One chat completion to run (immutable)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    model: str
    """The model name the server knows."""
    messages: list[dict[str, str]]
    """Chat messages ``[{"role": "system"|"user"|"assistant", "content": str}]``."""
    temperature: float | None = None
    """Sampling temperature; ``None`` = not sent (server default)."""
    seed: int | None = None
    """Sampling seed; ``None`` = not sent."""
    max_tokens: int | None = None
    """Completion token cap (OpenAI ``max_tokens``, Ollama ``options.num_predict``)."""
    extra_body: dict[str, Any] = {}
    """Merged verbatim into the request body; for Ollama a nested ``options`` dict merges into
    ``options`` (e.g. ``{"think": false, "options": {"num_ctx": 8192}}``)."""
    keep_alive: str | int | None = None
    """Ollama only: how long the model stays loaded (``"30m"``, ``0`` unloads after)."""
    json_schema: dict[str, Any] | None = None
    """Structured output (judges): OpenAI ``response_format`` json_schema (strict), Ollama
    ``format``."""
    context_tokens: int | None = None
    """Context to give the model (tokens): Ollama ``options.num_ctx`` (an explicit
    ``extra_body.options.num_ctx`` wins); other protocols have no per-request context."""


class ChatResult(BaseModel):
    """One chat call's outcome: exactly the EvalResponse answer/timing/outcome fields
    (same names, types and defaults; SPEC §7, §9) plus ``engine_version``."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    response_text: str = ""
    reasoning_text: str = ""
    reasoning_source: ReasoningSource | None = None
    content_empty: bool = True
    reasoning_only: bool = False
    finish_reason: str | None = None
    """As received (Ollama ``done_reason``), never defaulted."""
    truncated: bool = False
    t_start: float | None = None
    """Epoch s when the (last attempt's) HTTP request was sent."""
    t_end: float | None = None
    """Epoch s when its stream ended or it failed."""
    ttft_s: float | None = None
    ttfa_s: float | None = None
    e2e_s: float | None = None
    tpot_s: float | None = None
    itl_p50_s: float | None = None
    itl_p95_s: float | None = None
    decode_tps: float | None = None
    prefill_tps: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    token_count_source: TokenCountSource = "missing"
    load_duration_s: float | None = None
    cached_tokens: int | None = None
    """Prompt tokens the server took from its prompt cache (``usage.prompt_tokens_details.
    cached_tokens`` or llama.cpp ``timings.cache_n``); ``None`` = the server did not say."""
    prompt_cached: bool = False
    """A real part of the prompt came from the server's cache (:func:`~touchstone_ray.engines.
    normalize.is_prompt_cached`): TTFT and prefill of this call are not cold figures."""
    server_timings: dict[str, float | int | None] | None = None
    """The server's own timings (``{prompt_n, prompt_ms, predicted_n, predicted_ms,
    cache_n}``; ms and token counts), or ``None`` when the server sends none."""
    attempt: int = 1
    """Attempts used (1 = first try succeeded)."""
    request: dict[str, Any] = {}
    """Sampling params actually sent (temperature, seed, max_tokens/num_predict, extra_body,
    keep_alive); never headers or keys."""
    ok: bool
    error: str | None = None
    """One line, when ``ok`` is false."""
    error_kind: ErrorKind | None = None
    engine_version: str | None = None
    """e.g. ``ollama 0.5.7``, ``vllm 0.8.1``, ``llama.cpp b4500``, ``sim``; ``None`` unknown."""


class EngineSettings(BaseModel):
    """How to reach one endpoint, and the deadline and retry budget of each call."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    base_url: str
    """Ollama: ``http://host:11434``; OpenAI-compatible: ``http://host:8000/v1``."""
    api_key: str | None = Field(default=None, repr=False, exclude=True)
    """Sent as ``Authorization: Bearer``; never in repr, dumps, logs or records."""
    timeout_s: float = Field(default=600.0, gt=0)
    """Deadline of one attempt, connect to last byte (s); a stalled stream ends here."""
    connect_timeout_s: float = Field(default=10.0, gt=0)
    """TCP connect timeout (s)."""
    load_timeout_s: float = Field(default=900.0, ge=0)
    """Budget for retrying HTTP 503 while the model loads, from the first attempt (s)."""
    max_attempts: int = Field(default=3, ge=1)
    """Attempts per call for retryable errors (5xx, timeout, connect, cut stream)."""
    backoff_base_s: float = Field(default=0.5, ge=0)
    """First backoff (s); doubles per attempt, jittered."""
    backoff_max_s: float = Field(default=30.0, ge=0)
    """Backoff cap (s)."""
    prompt_cache: bool = True
    """Let the server reuse cached prompt prefixes; ``False`` asks servers that support it not
    to (llama.cpp ``cache_prompt: false``)."""
