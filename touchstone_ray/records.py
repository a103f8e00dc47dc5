"""The bundle's record types (SPEC §7, a Contract): what eval writes and judge reads.

Times are seconds (float), memory MB (float), timestamps epoch seconds of the host that
served the cell. ``None`` always means "not measurable here", never 0. Generation fills
:class:`EvalResponse`; judging fills :class:`Verdict` and :class:`HolisticReport` (seed 002).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from touchstone_ray.errors import ErrorKind

SCHEMA_VERSION = 1
"""Version of the bundle layout and record schemas."""

ReasoningSource = Literal["reasoning_content", "reasoning", "thinking", "think_tag"]
TokenCountSource = Literal["server", "estimated", "missing"]
MemPressure = Literal["normal", "warn", "critical"]
VerdictStatus = Literal[
    "scored",
    "unscored_reasoning_only",
    "unscored_generation_failed",
    "unscored_input_truncated",
    "judge_error",
]


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)


def cell_key(model: str, variant: str, prompt_id: str, repeat: int) -> str:
    """The record key ``model|variant|prompt_id|repeat`` (repeat counts from 1)."""
    return f"{model}|{variant}|{prompt_id}|{repeat}"


class EvalResponse(_Record):
    """One answer (or one failed cell): a line of ``responses/<model>.jsonl``."""

    # identity
    key: str
    """``model|variant|prompt_id|repeat``."""
    pack_id: str
    pack_version: int
    model: str
    engine: str
    """``ollama`` | ``openai`` | ``llamacpp`` | ``vllm`` | ``lmstudio`` | ``simulated`` (as
    configured)."""
    engine_version: str | None = None
    """What the server reported (e.g. ``ollama 0.5.7``, ``vllm 0.8.1``), else ``None``."""
    host: str
    node_id: str | None = None
    """Ray node id where the cell really ran."""
    variant: str
    category: str
    prompt_id: str
    repeat: int
    attempt: int = 1
    """Attempts used (1 = first try succeeded)."""
    request: dict[str, Any] = {}
    """Sampling params actually sent (temperature, seed, max_tokens, extra_body; no secrets)."""
    # answer
    response_text: str = ""
    reasoning_text: str = ""
    reasoning_source: ReasoningSource | None = None
    content_empty: bool = True
    reasoning_only: bool = False
    finish_reason: str | None = None
    """As received from the server, never defaulted."""
    truncated: bool = False
    # timing
    t_start: float | None = None
    """Epoch s when the HTTP request was sent."""
    t_end: float | None = None
    queue_wait_s: float | None = None
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
    is_cold_start: bool = False
    # outcome
    ok: bool
    error: str | None = None
    error_kind: ErrorKind | None = None
    # server truth (SPEC §7 new): what the server itself reported, beside what we measured
    cached_tokens: int | None = None
    """Prompt tokens the server took from its prompt cache (``usage.prompt_tokens_details.
    cached_tokens`` or llama.cpp ``timings.cache_n``); ``None`` = the server did not say."""
    prompt_cached: bool = False
    """The server took a real part of the prompt from its cache (at least 2 tokens and 5 % of
    the prompt: llama.cpp reports the one start token it always keeps): TTFT and prefill of
    this cell are not cold figures."""
    server_timings: dict[str, float | int | None] | None = None
    """The server's own timings as sent (``{prompt_n, prompt_ms, predicted_n, predicted_ms,
    cache_n}``; ms and token counts), or ``None`` when the server sends none."""
    context_tokens: int | None = None
    """Context the model had for this cell (tokens): configured ``context_tokens`` or the
    server's own limit (llama.cpp ``n_ctx`` per slot, vLLM ``max_model_len``); ``None``
    unknown."""
    input_truncated: bool | None = None
    """The server saw far fewer prompt tokens than were sent (< 0.8×), or exactly the context
    limit: the answer is to a cut prompt. ``None`` = not checkable (no counts)."""
    # engine footprint (finalize, SPEC §7 new)
    engine_rss_mb: float | None = None
    """Peak RSS of the serving process and its children in the cell's window (MB)."""
    engine_rss_delta_mb: float | None = None
    """``engine_rss_mb`` − the engine's RSS at the model's baseline tick (MB)."""
    engine_cpu_pct: float | None = None
    """Mean CPU of the serving process tree in the window (% of one core, psutil style)."""
    engine_gpu_mem_mb: float | None = None
    """Peak GPU memory of the serving processes in the window (MB, NVML per process)."""
    foreign_cpu_pct: float | None = None
    """Mean host CPU used by processes other than the engine and touchstone's own during the
    cell (% of one core)."""
    host_contended: bool | None = None
    """``foreign_cpu_pct`` above the contention threshold: speed figures of this cell are not
    comparable and it is left out of speed aggregates."""
    # resources (finalize)
    sys_used_mb: float | None = None
    sys_used_baseline_mb: float | None = None
    sys_used_delta_mb: float | None = None
    swap_delta_mb: float | None = None
    mem_pressure_max: MemPressure | None = None
    throttled: bool | None = None
    gpu_mem_used_mb: float | None = None
    gpu_mem_delta_mb: float | None = None
    gpu_util_pct: float | None = None
    gpu_temp_c_max: float | None = None
    gpu_power_w: float | None = None
    gpu_throttle_reasons: list[str] | None = None
    n_samples: int | None = None


class GpuSample(_Record):
    """One GPU in a :class:`HostSample`; fields ``None`` where NVML does not support them."""

    index: int
    name: str | None = None
    mem_used_mb: float | None = None
    mem_total_mb: float | None = None
    util_pct: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
    throttle_reasons: list[str] | None = None


class EngineProcessSample(_Record):
    """The serving process tree of one endpoint in a :class:`HostSample` (SPEC §7 new)."""

    endpoint: str
    """The endpoint's base URL as configured."""
    pid: int | None = None
    """The root process found for the endpoint (listening on its port, or by name)."""
    rss_mb: float | None = None
    """RSS of the process and its children (MB)."""
    cpu_pct: float | None = None
    """CPU of the process and its children since the last tick (% of one core)."""
    gpu_mem_mb: float | None = None
    """GPU memory of those processes over all GPUs (MB, NVML); ``None`` unsupported."""


class HostSample(_Record):
    """One telemetry tick of a host: a line of ``hosts/<host>.jsonl``."""

    ts: float
    host: str
    node_id: str | None = None
    baseline: bool = False
    model: str | None = None
    """Set on baseline ticks: the model about to start."""
    sys_used_mb: float | None = None
    sys_available_mb: float | None = None
    swap_used_mb: float | None = None
    cpu_pct: float | None = None
    psi_mem_some_avg10: float | None = None
    mem_pressure: MemPressure | None = None
    cgroup_mem_used_mb: float | None = None
    cgroup_mem_limit_mb: float | None = None
    cpu_throttle_count: int | None = None
    temp_c_max: float | None = None
    gpus: list[GpuSample] | None = None
    engines: list[EngineProcessSample] | None = None
    """Per endpoint served from this host, its serving process tree (SPEC §7 new); only the
    endpoints whose process was found (``bundle.json`` ``hosts.<h>.engines`` says why not)."""
    foreign_cpu_pct: float | None = None
    """Host CPU since the previous tick used by processes other than the engines and
    touchstone's own (% of one core; see :mod:`touchstone_ray.telemetry.engines`)."""


class Verdict(_Record):
    """One judge's verdict on one answer: a line of ``judgements/<judge>/verdicts.jsonl``."""

    key: str
    model: str
    variant: str
    prompt_id: str
    repeat: int
    category: str
    judge: str
    score: int | None = None
    """1..5, or ``None`` when unscored or a judge error."""
    red_flag: bool = False
    red_flags_hit: list[str] = []
    green_flags_hit: list[str] = []
    unknown_flags: list[str] = []
    """Flags the judge named that are not the prompt's (dropped from the two lists above)."""
    rationale: str = ""
    status: VerdictStatus
    raw: str | None = None
    """The judge's raw reply (kept for judge errors and audits)."""
    safety_critical: bool = False


class HolisticReport(_Record):
    """One judge's holistic report on a (model, variant): ``judgements/<judge>/reports.jsonl``."""

    model: str
    variant: str
    judge: str
    dim_scores: dict[str, int] = {}
    dim_rationales: dict[str, str] = {}
    cited_prompts: dict[str, list[str]] = {}
    status: Literal["ok", "degraded"] = "ok"
