"""The engine data contracts: :class:`ChatRequest` in, :class:`ChatResult` out, and the
:class:`EngineSettings` of one endpoint (re-exported by :mod:`touchstone_ray.engines.base`).

:class:`ChatResult` is defined with the records (:mod:`touchstone_ray.records`): it is the
answer-and-timing part of every :class:`~touchstone_ray.records.EvalResponse`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from touchstone_ray.records import ChatResult

__all__ = ["ChatRequest", "ChatResult", "EngineSettings"]


class ChatRequest(BaseModel):
    """One chat completion to run (immutable)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    model: str
    """The model name the server knows."""
    messages: list[dict[str, Any]]
    """Chat messages in OpenAI's shape: ``{"role": "system"|"user"|"assistant", "content":
    str}``; an assistant message may carry ``tool_calls`` (``[{"id", "type": "function",
    "function": {"name", "arguments": <JSON text>}}]``, ``content`` then may be ``None``) and
    its reasoning as ``reasoning_content`` and/or ``reasoning``; a tool result is ``{"role":
    "tool", "tool_call_id", "content", "name"?}``. Sent as given to OpenAI-compatible servers;
    the Ollama engine translates them (:func:`touchstone_ray.engines._tools.ollama_messages`)."""
    tools: list[dict[str, Any]] | None = None
    """Tools the model may call, in OpenAI's shape ``[{"type": "function", "function":
    {"name", "description", "parameters": <JSON Schema>}}]`` (Ollama takes the same);
    ``None`` = not sent."""
    tool_choice: str | dict[str, Any] | None = None
    """``"auto"`` | ``"none"`` | ``"required"`` | ``{"type": "function", "function": {"name"}}``
    (OpenAI's values); ``None`` = not sent (the server's default, ``auto`` when tools are
    given). Ollama has no such field: it is not sent there."""
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
    engine_down_timeout_s: float = Field(default=300.0, ge=0)
    """How long a call waits for an endpoint that refuses connections (an engine restarting)
    from the endpoint's first refusal, without spending attempts (s); past it the call fails
    as ``connect``."""
    down_probe_s: float = Field(default=2.0, gt=0)
    """Interval between connects to an endpoint that refuses them (s)."""
    backoff_base_s: float = Field(default=0.5, ge=0)
    """First backoff (s); doubles per attempt, jittered."""
    backoff_max_s: float = Field(default=30.0, ge=0)
    """Backoff cap (s)."""
    prompt_cache: bool = True
    """Let the server reuse cached prompt prefixes; ``False`` asks servers that support it not
    to (llama.cpp ``cache_prompt: false``)."""
