"""Knobs of the simulated engine (SPEC §11): one pydantic model, validated, documented.

A :class:`SimConfig` holds the server-wide knobs; every per-model knob lives on
:class:`SimModelKnobs`, which ``SimConfig`` extends. ``model_overrides`` maps a model name to a
*partial* ``SimModelKnobs``: only the fields written in it (pydantic's ``model_fields_set``)
override the server-wide values, so one server can serve a fast weak model and a slow strong one.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ReasoningChannel = Literal["reasoning_content", "reasoning", "think_tag", "thinking"]
"""Where reasoning tokens go on the OpenAI protocol: ``delta.reasoning_content`` (vLLM,
DeepSeek), ``delta.reasoning`` (OpenRouter, newer vLLM), ``<think>…</think>`` inside
``delta.content`` (raw Qwen3/DeepSeek-R1 templates), or ``thinking`` (Ollama's name; on the
OpenAI protocol it is sent as ``delta.reasoning_content``). Ollama always uses
``message.thinking``."""


ToolCallShape = Literal[
    "ok", "wrong_types", "empty_args", "json_in_json", "extra_call", "no_call", "cut"
]
"""How the simulated model's tool calls go wrong (``SimModelKnobs.tool_call_shape``)."""


class SimToolCall(BaseModel):
    """One scripted tool call of a simulated turn."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    name: str | None = None
    """The tool called (any name, offered or not); None = the first tool the request offers;
    default None."""

    arguments: dict[str, Any] | None = None
    """The call's arguments; None = built from the tool's parameter schema, one value per
    property in schema order (string ``"wert"`` or the first ``enum`` value, integer 1, number
    1.5, boolean true, array [], object {}, null); default None."""


class SimModelKnobs(BaseModel):
    """Per-model knobs: speed, length, reasoning, quality and failure injection."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    ttft_ms: float = Field(default=100.0, ge=0)
    """Time to first token in milliseconds, from request arrival to the first token; default 100."""

    tps: float = Field(default=100.0, gt=0)
    """Decode speed in tokens per second after the first token; default 100."""

    answer_tokens: int = Field(default=200, ge=1)
    """Completion tokens per request on both channels (reasoning + answer, quality marker
    included), before ``max_tokens``/``num_predict`` cut it; default 200."""

    reasoning_share: float = Field(default=0.0, ge=0, le=1)
    """Fraction (0..1) of ``answer_tokens`` sent on the reasoning channel before the answer;
    1 gives a reasoning-only reply; default 0."""

    reasoning_channel: ReasoningChannel = "reasoning_content"
    """OpenAI-protocol reasoning channel: reasoning_content | reasoning | think_tag | thinking
    (Ollama always uses ``message.thinking``); default reasoning_content."""

    slots: int | None = Field(default=None, ge=1)
    """At most this many requests of the model generate at once; the rest wait for a free
    slot, and the wait is part of their TTFT (llama.cpp ``--parallel``); count; default None
    (no limit)."""

    batch_slowdown: float = Field(default=0.0, ge=0)
    """Decode slowdown per extra request generating at once: each token of a request takes
    ``(1 + batch_slowdown × (n − 1)) / tps`` s while ``n`` requests of the model generate;
    default 0 (each request decodes at ``tps`` whatever the batch)."""

    embed_tps: float = Field(default=20_000.0, gt=0)
    """Embedding speed (``/v1/embeddings``): input tokens (words) per second; a request
    answers after ``ttft_ms`` + its tokens / embed_tps; default 20000."""

    fail_rate: float = Field(default=0.0, ge=0, le=1)
    """Probability (0..1) that a request gets HTTP 500 before streaming; default 0."""

    fail_first_n: int = Field(default=0, ge=0)
    """The first N chat requests per model get HTTP 500 (for retry tests); count; default 0."""

    load_s: float = Field(default=0.0, ge=0)
    """Seconds a model takes to load: until load_s after its first request, chat requests get
    HTTP 503 ``model is loading``; default 0."""

    stall_rate: float = Field(default=0.0, ge=0, le=1)
    """Probability (0..1) that a stream stops after some tokens and hangs until the client gives
    up; default 0."""

    disconnect_rate: float = Field(default=0.0, ge=0, le=1)
    """Probability (0..1) that the connection is cut mid-stream (incomplete chunked body);
    default 0."""

    error_event_rate: float = Field(default=0.0, ge=0, le=1)
    """Probability (0..1) of an ``{"error": …}`` object inside a 200 stream after some tokens,
    which then ends; default 0."""

    garbage_rate: float = Field(default=0.0, ge=0, le=1)
    """Probability (0..1) that one non-JSON line is written into the stream after some tokens
    (the stream then continues); default 0."""

    comment_rate: float = Field(default=0.0, ge=0, le=1)
    """Per-chunk probability (0..1) of an SSE comment line ``: keep-alive`` before the chunk
    (OpenAI protocol only); default 0."""

    quality: float = Field(default=0.7, ge=0, le=1)
    """Answer quality (0..1) written into each answer's marker ``⟦sim q=0.70⟧``, which the
    simulated judge turns into a score ≈ 1 + 4q; default 0.7."""

    echo_prompt: Literal["user", "system"] | None = None
    """Answer shape of a model behind the wrong chat template: the answer begins with this
    prompt's text (the last user message, or the system message; nothing without one) before
    its filler; default None (no echo)."""

    leak_markers: str = ""
    """Chat-template control text written into every answer after its echo (if any) and before
    its filler, e.g. ``<|im_end|>\n<|im_start|>user``: a server whose template does not fit
    the model; each whitespace-separated piece is one token; default "" (none)."""

    loop_period: int | None = Field(default=None, ge=1)
    """A repetition loop: the answer's filler repeats its first ``loop_period`` tokens until the
    answer's budget ends (the quality marker still closes it); tokens; default None (no
    loop)."""

    endless_reasoning: bool = False
    """A reasoning budget spent before the answer: when the request allows thinking, all
    ``answer_tokens`` (or the request's ``max_tokens``, if fewer) go to the reasoning channel,
    which never closes, no answer follows and ``finish_reason`` is ``length``; default False."""

    context_length: int | None = Field(default=None, ge=1)
    """The model's own context length (tokens) as the server reports it: Ollama ``/api/show``
    ``model_info["sim.context_length"]``, OpenAI ``/v1/models`` ``max_model_len``; default
    None (not reported)."""

    default_num_ctx: int | None = Field(default=None, ge=1)
    """Ollama protocol: the context (tokens) of a request without ``options.num_ctx``, as
    Ollama's own default. A prompt longer than the request's context is cut from the front to
    it, silently: ``prompt_eval_count`` is the context and the answer ends ``stop`` as usual;
    default None (no default context: nothing cut without ``num_ctx``)."""

    tool_calls: list[SimToolCall] | None = None
    """Tool calls of each calling turn of a request that offers ``tools`` (several = parallel
    calls in one turn, in this order); None = one call of the first offered tool with
    schema-built arguments; default None."""

    tool_call_shape: ToolCallShape = "ok"
    """How the calls go wrong: ``ok`` (as scripted), ``wrong_types`` (each argument value of
    the wrong JSON type: a string becomes its length, a number or boolean its text, an array or
    object its JSON text), ``empty_args`` (``{}``), ``json_in_json`` (OpenAI: the arguments text
    is a JSON string holding the object's JSON; Ollama, whose arguments are an object: each
    value is replaced by its JSON text), ``extra_call`` (the last call made once more), ``no_call``
    (a plain answer although tools are offered), ``cut`` (the last call's arguments stop after
    half their pieces and the turn ends ``length``; on Ollama the partial call comes as
    content, without ``tool_calls``); default ok."""

    tool_turns: int = Field(default=1, ge=0)
    """Turns that call tools before the model answers in text: a request offering tools whose
    messages after the last user message already hold this many assistant turns with
    ``tool_calls`` gets a plain answer, so a tool loop ends; count; default 1."""

    tool_answer: str | None = None
    """The text answer of a request that offers tools (after the calling turns, or with
    ``no_call``): exactly this text, no quality marker; None = the usual filler answer;
    default None."""

    judge_constant_score: int | None = Field(default=None, ge=1, le=5)
    """Judge mode only: a degenerate judge that gives every answer this score (1..5), no red
    flag and the rationale ``"ok"``, whatever it reads; default None (scores follow the
    answer's quality marker)."""


class SimConfig(SimModelKnobs):
    """All knobs of one simulated server; ``extra="forbid"`` so a typo is an error."""

    seed: int = 0
    """Seed of every pseudo-random choice (answer text, verdict noise, failure injection);
    default 0."""

    models: list[str] = Field(default_factory=list)
    """Served model names; empty serves any name asked for (unknown names get 404 otherwise);
    default []."""

    model_overrides: dict[str, SimModelKnobs] = Field(default_factory=dict)
    """Per-model partial knobs: only the keys written for a model override the values above;
    default {}."""

    trace_limit: int = Field(default=10_000, ge=0)
    """How many request traces ``/sim/trace`` keeps (oldest dropped, memory stays flat);
    count; default 10000."""

    def for_model(self, model: str) -> SimModelKnobs:
        """The effective knobs for ``model``: server-wide values with its override applied."""
        base: dict[str, Any] = {name: getattr(self, name) for name in SimModelKnobs.model_fields}
        override = self.model_overrides.get(model)
        if override is not None:
            base.update({name: getattr(override, name) for name in override.model_fields_set})
        return SimModelKnobs(**base)

    def serves(self, model: str) -> bool:
        """Whether ``model`` is served: any name when ``models`` is empty."""
        return not self.models or model in self.models

    def listed_models(self, seen: list[str]) -> list[str]:
        """Names for ``/api/tags`` and ``/v1/models``: ``models``, else overrides and ``seen``."""
        if self.models:
            return list(self.models)
        return sorted(set(self.model_overrides) | set(seen))
