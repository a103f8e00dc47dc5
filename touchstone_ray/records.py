"""The bundle's record types (SPEC §7, a Contract): what eval writes and judge reads.

Times are seconds (float), memory MB (float), timestamps epoch seconds of the host that
served the cell. ``None`` always means "not measurable here", never 0. Generation fills
:class:`EvalResponse` from its parts: :class:`CellIdentity` (the client), :class:`ChatOutcome`
(what the engine returned, less a :class:`ChatResult`'s tool calls), :class:`CellConditions`
(the client, around the call) and :class:`CellResources` (finalize, later); on disk it is flat,
in :data:`EVAL_RESPONSE_FIELDS` order. Judging fills :class:`Verdict` and
:class:`HolisticReport` (seed 002).
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler
from pydantic_core import core_schema

from touchstone_ray.errors import ErrorKind

SCHEMA_VERSION = 1
"""Version of the bundle layout and record schemas."""

ReasoningSource = Literal["reasoning_content", "reasoning", "thinking", "think_tag"]
TokenCountSource = Literal["server", "estimated", "missing"]
MemPressure = Literal["normal", "warn", "critical"]
AnswerFlag = Literal[
    "template_leak",
    "prompt_echo",
    "repetition_loop",
    "cut_at_limit",
    "cut_in_reasoning",
    "empty",
    "reasoning_only",
    "wrong_language",
]
"""The names of SPEC §7 ``answer_flags``, in the order :func:`touchstone_ray.answers.answer_flags`
lists them (each flag's detector is documented there)."""
AnswerCheckType = Literal[
    "regex",
    "contains",
    "not_contains",
    "json_schema",
    "max_words",
    "max_sentences",
    "language",
]
"""The judge-free check types a quality pack's prompt may carry (SPEC §3 ``checks``; each
one's rule is documented in :mod:`touchstone_ray.answers`)."""
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


class CheckOutcome(_Record):
    """One judge-free check run on an answer: a check of a quality pack's prompt (SPEC §7
    ``checks``) or of a tools item (SPEC §7c)."""

    id: str
    """The check's id in the pack."""
    type: str
    """The check type (``regex``, ``max_words``, …; SPEC §3; ``calls``, ``schema_valid``, …;
    SPEC §3b)."""
    ok: bool | None
    """Passed, failed, or ``None``: not measured (the check could not run; see ``detail``)."""
    detail: str = ""
    """Why it failed or could not run, in one line; ``""`` for a pass."""


class CellIdentity(_Record):
    """Which cell a record is: the pack, the model and endpoint, and where it ran."""

    key: str
    """``model|variant|prompt_id|repeat`` (:func:`cell_key`); unique per bundle."""
    pack_id: str
    """``id`` of the pack the prompt comes from (``perf`` in perf bundles)."""
    pack_version: int
    """``version`` of that pack (0 in perf bundles)."""
    model: str
    """The model's label in the fleet config (shard name ``responses/<slug(model)>.jsonl``)."""
    engine: str
    """``ollama`` | ``openai`` | ``llamacpp`` | ``vllm`` | ``lmstudio`` | ``simulated`` (as
    configured)."""
    host: str
    """The fleet host the model is pinned to (a key of ``bundle.json`` ``hosts``)."""
    node_id: str | None = None
    """Ray node id where the cell really ran; ``None`` when not known."""
    variant: str
    """Prompt variant id (e.g. ``baseline``), the pack's ``prompt_variants``."""
    category: str
    """Category id of the prompt in the pack."""
    prompt_id: str
    """Prompt id in the pack (e.g. ``B3``)."""
    repeat: int
    """Repeat number, from 1."""


class ToolCall(_Record):
    """One tool call as the model made it, assembled from the stream."""

    id: str | None = None
    """The call id the server sent; ``None`` when it sent none (Ollama, some templates)."""
    name: str
    """The tool's name as the model wrote it (may name no offered tool)."""
    arguments: Any = None
    """The arguments parsed from JSON (an object for a well-formed call); the raw string when
    it is not valid JSON (``schema_valid`` then fails), ``None`` when none were sent."""
    arguments_valid_json: bool = True
    """The arguments the server sent parsed as JSON (Ollama sends an object: always true)."""


class ChatOutcome(_Record):
    """One chat call's outcome, the answer-and-timing part of an :class:`EvalResponse` (SPEC §9
    definitions): the answer, the timing of the last attempt, the server's own figures and the
    outcome. Times are seconds measured on the client from when the HTTP request was sent;
    timestamps are epoch seconds; token counts are tokens. What an engine returns is a
    :class:`ChatResult`: this plus the tool calls, which eval records do not carry.
    """

    engine_version: str | None = None
    """What the server reported (e.g. ``ollama 0.5.7``, ``vllm 0.8.1``, ``llama.cpp b4500``,
    ``sim``); ``None`` unknown."""
    attempt: int = 1
    """Attempts used (1 = first try succeeded)."""
    request: dict[str, Any] = {}
    """Sampling params actually sent (temperature, seed, max_tokens/num_predict, extra_body,
    keep_alive); never headers or keys."""
    # answer
    response_text: str = ""
    """The answer, ``<think>`` reasoning split off; what the judge sees."""
    reasoning_text: str = ""
    """The reasoning, from whichever channel carried it (``reasoning_source``); ``""`` none."""
    reasoning_source: ReasoningSource | None = None
    """Where the reasoning came from (``reasoning_content`` | ``reasoning`` | ``thinking`` |
    ``think_tag``); ``None`` when there was none."""
    content_empty: bool = True
    """The answer has no text but whitespace (also true for a failed call)."""
    reasoning_only: bool = False
    """No answer text but some reasoning: unscored, left out of all means (SPEC §10)."""
    finish_reason: str | None = None
    """As received from the server (Ollama ``done_reason``), never defaulted; ``None`` when it
    sent none."""
    truncated: bool = False
    """The server stopped at the token cap (``finish_reason == "length"``)."""
    # timing (SPEC §9)
    t_start: float | None = None
    """Epoch s when the (last attempt's) HTTP request was sent."""
    t_end: float | None = None
    """Epoch s when its stream ended or it failed."""
    ttft_s: float | None = None
    """Time to first token (s): first chunk with a non-empty token on any channel."""
    ttfa_s: float | None = None
    """Time to first answer token (s), after the reasoning; ``None`` without an answer."""
    e2e_s: float | None = None
    """Request sent to end of stream (s)."""
    tpot_s: float | None = None
    """Time per output token (s): ``(e2e − ttft) / (completion_tokens − 1)``; ``None`` for at
    most one token."""
    itl_p50_s: float | None = None
    """Median gap between consecutive token-carrying chunks (s, linear interpolation)."""
    itl_p95_s: float | None = None
    """95th percentile of those gaps (s)."""
    decode_tps: float | None = None
    """Decode speed (tok/s): ``(completion_tokens − 1) / (e2e − ttft)`` = 1 / ``tpot_s``."""
    prefill_tps: float | None = None
    """Prefill speed (tok/s): ``(prompt_tokens − cached_tokens) / ttft`` (all prompt tokens
    when the server does not report a cache)."""
    prompt_tokens: int | None = None
    """Prompt tokens (tokens), from the server or estimated (``token_count_source``)."""
    completion_tokens: int | None = None
    """Generated tokens, reasoning included (tokens)."""
    reasoning_tokens: int | None = None
    """Of those, reasoning tokens (tokens); ``None`` when not reported and no reasoning."""
    token_count_source: TokenCountSource = "missing"
    """``server`` (counts as sent by the server), ``estimated`` (any count estimated from
    chunks and characters) or ``missing`` (a failed call)."""
    load_duration_s: float | None = None
    """Model load time the server reported (s, Ollama ``load_duration``); ``None`` elsewhere."""
    engine_down_s: float | None = None
    """Time the call waited for its endpoint while it refused connections (an engine
    restarting; s, from the call's first refused connect; not counted in ``attempt``);
    ``None`` when it was never refused."""
    reasoning_s: float | None = None
    """Time from the first reasoning token to the first answer token (s); ``None`` without
    reasoning or without an answer (a budget spent inside the reasoning)."""
    reasoning_tps: float | None = None
    """Reasoning speed (tok/s): ``reasoning_tokens / reasoning_s`` (the first answer token
    comes one token interval after the last reasoning token, so ``reasoning_s`` spans
    ``reasoning_tokens`` intervals); ``None`` where either is ``None``."""
    # outcome
    ok: bool
    """The call produced an answer stream (even an empty one); ``False`` = a failed cell."""
    error: str | None = None
    """One line, when ``ok`` is false."""
    error_kind: ErrorKind | None = None
    """``timeout`` | ``http_4xx`` | ``http_5xx`` | ``connect`` | ``protocol`` | ``node_lost`` |
    ``config`` | ``context`` when ``ok`` is false; else ``None``."""
    # server truth: what the server itself reported, beside what we measured
    cached_tokens: int | None = None
    """Prompt tokens the server took from its prompt cache (``usage.prompt_tokens_details.
    cached_tokens`` or llama.cpp ``timings.cache_n``); ``None`` = the server did not say."""
    prompt_cached: bool = False
    """The server took a real part of the prompt from its cache (at least 2 tokens and 5 % of
    the prompt, :func:`~touchstone_ray.engines.normalize.is_prompt_cached`: llama.cpp reports
    the one start token it always keeps): TTFT and prefill of this cell are not cold figures."""
    server_timings: dict[str, float | int | None] | None = None
    """The server's own timings as sent (``{prompt_n, prompt_ms, predicted_n, predicted_ms,
    cache_n}``; ms and token counts), or ``None`` when the server sends none."""


class ChatResult(ChatOutcome):
    """What an engine returns for one chat call
    (:meth:`touchstone_ray.engines.base.Engine.chat`): the :class:`ChatOutcome` and the tool
    calls the model made. An :class:`EvalResponse` takes the outcome only (eval requests
    offer no tools), so response lines never carry the two tool fields."""

    tool_calls: list[ToolCall] = []
    """The calls the model made, in the order they began (parsed arguments; SPEC §7c
    ``tool_calls``); ``[]`` when it made none or the call failed."""
    tool_calls_raw: list[dict[str, Any]] = []
    """The same calls as the server sent them, assembled: OpenAI-compatible ``{"index", "id",
    "type", "function": {"name", "arguments": <the concatenated argument text>}}``, Ollama's
    call objects as received (arguments an object); ``[]`` when none."""


class CellConditions(_Record):
    """What the client knew about a cell around its call: queueing, cold start, context, and
    what it saw in the answer (:attr:`answer_flags`)."""

    queue_wait_s: float | None = None
    """Time the cell waited on the client for a free request slot of its endpoint (s)."""
    is_cold_start: bool = False
    """The first timed request of its model on its host in this run (after the warm-up, if
    any): left out of latency aggregates."""
    context_tokens: int | None = None
    """Context the model had for this cell (tokens): configured ``context_tokens`` or the
    server's own limit (llama.cpp ``n_ctx`` per slot, vLLM ``max_model_len``); ``None``
    unknown."""
    input_truncated: bool | None = None
    """The server saw far fewer prompt tokens than were sent (< 0.8×), or exactly the context
    limit: the answer is to a cut prompt (:func:`touchstone_ray.fleet.prompts.input_truncated`).
    ``None`` = not checkable (no counts, or a failed call)."""
    answer_flags: list[str] = []
    """What the answer shows besides its quality, in :data:`touchstone_ray.answers.ANSWER_FLAGS`
    order (``template_leak``, ``prompt_echo``, ``repetition_loop``, ``cut_at_limit``,
    ``cut_in_reasoning``, ``empty``, ``reasoning_only``, ``wrong_language``;
    :func:`touchstone_ray.answers.answer_flags`); ``[]`` when clean, for a failed call and in
    records written before the field existed."""
    max_tokens_sent: int | None = None
    """The completion budget the request carried (tokens): the prompt's ``max_tokens`` plus the
    model's ``reasoning_headroom_tokens``; ``None`` when no cap was sent, and in records
    written before the field existed."""
    checks: list[CheckOutcome] = []
    """The prompt's judge-free ``checks`` run on the answer (SPEC §3, §7), in pack order:
    ``{id, type, ok, detail}``, ``ok`` ``None`` where the check could not run
    (:func:`touchstone_ray.answers.answer_checks`); ``[]`` for a prompt without checks, for a
    failed call and in records written before the field existed."""


class CellResources(_Record):
    """Host and engine figures of a cell's time window, filled by finalize
    (:mod:`touchstone_ray.telemetry.finalize` defines each); all ``None`` until then, and
    where the host has no samples."""

    # engine footprint
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
    # host resources
    sys_used_mb: float | None = None
    """Peak host memory in use in the window (MB)."""
    sys_used_baseline_mb: float | None = None
    """Host memory in use at the model's baseline tick, before its first cell (MB)."""
    sys_used_delta_mb: float | None = None
    """``sys_used_mb`` − ``sys_used_baseline_mb``: the model delta (MB)."""
    swap_delta_mb: float | None = None
    """Peak swap in use in the window − the baseline's (MB)."""
    mem_pressure_max: MemPressure | None = None
    """Worst memory pressure level in the window (``normal`` < ``warn`` < ``critical``)."""
    throttled: bool | None = None
    """CPU throttling rose in the window, or a GPU throttle reason other than ``gpu_idle``
    was set; ``None`` when neither is measurable."""
    gpu_mem_used_mb: float | None = None
    """Peak over the window of the host's GPU memory in use, all GPUs summed (MB)."""
    gpu_mem_delta_mb: float | None = None
    """``gpu_mem_used_mb`` − the baseline tick's sum (MB)."""
    gpu_util_pct: float | None = None
    """Highest GPU utilisation over the window and GPUs (%)."""
    gpu_temp_c_max: float | None = None
    """Highest GPU temperature over the window and GPUs (°C)."""
    gpu_power_w: float | None = None
    """Highest host GPU power draw in the window, all GPUs summed (W)."""
    gpu_throttle_reasons: list[str] | None = None
    """Sorted union of the GPU throttle reason names seen in the window (``gpu_idle``
    included); ``None`` unsupported."""
    n_samples: int | None = None
    """Host samples the figures come from (1 for the nearest-sample fallback; count)."""


EVAL_RESPONSE_FIELDS: tuple[str, ...] = (
    # identity
    "key", "pack_id", "pack_version", "model", "engine", "engine_version", "host", "node_id",
    "variant", "category", "prompt_id", "repeat", "attempt", "request",
    # answer
    "response_text", "reasoning_text", "reasoning_source", "content_empty", "reasoning_only",
    "finish_reason", "truncated",
    # timing
    "t_start", "t_end", "queue_wait_s", "ttft_s", "ttfa_s", "e2e_s", "tpot_s", "itl_p50_s",
    "itl_p95_s", "decode_tps", "prefill_tps", "prompt_tokens", "completion_tokens",
    "reasoning_tokens", "token_count_source", "load_duration_s", "is_cold_start",
    # outcome
    "ok", "error", "error_kind",
    # server truth
    "cached_tokens", "prompt_cached", "server_timings", "context_tokens", "input_truncated",
    # engine footprint
    "engine_rss_mb", "engine_rss_delta_mb", "engine_cpu_pct", "engine_gpu_mem_mb",
    "foreign_cpu_pct", "host_contended",
    # resources
    "sys_used_mb", "sys_used_baseline_mb", "sys_used_delta_mb", "swap_delta_mb",
    "mem_pressure_max", "throttled", "gpu_mem_used_mb", "gpu_mem_delta_mb", "gpu_util_pct",
    "gpu_temp_c_max", "gpu_power_w", "gpu_throttle_reasons", "n_samples",
    # added later, each at the end so the keys before it keep their places
    "answer_flags", "engine_down_s", "reasoning_s", "reasoning_tps", "max_tokens_sent", "checks",
)  # fmt: skip
"""Every :class:`EvalResponse` field in its on-disk order (SPEC §7, a Contract: the order of
the keys in a response line)."""


class EvalResponse(CellIdentity, ChatOutcome, CellConditions, CellResources):
    """One answer (or one failed cell): a line of ``responses/<model>.jsonl``.

    Composed of its parts: :class:`CellIdentity` (which cell), :class:`ChatOutcome` (what the
    engine returned: answer, timing, outcome, server truth; not the tool calls of a
    :class:`ChatResult`), :class:`CellConditions` (queueing,
    cold start, context) and :class:`CellResources` (finalize). On disk it is one flat JSON
    object, keys in :data:`EVAL_RESPONSE_FIELDS` order; a subclass's own fields follow them.
    """

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[BaseModel], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """The model's schema with its fields in on-disk order, so pydantic itself dumps them in
        that order (no per-record cost); ``model_fields`` keeps the order of the parts."""
        schema = handler(source)
        part: Any = schema
        while part.get("type") != "model-fields":
            if "schema" not in part:
                raise TypeError(f"{cls.__name__}: no model fields in its core schema")
            part = part["schema"]
        fields = part["fields"]
        part["fields"] = {**{n: fields[n] for n in EVAL_RESPONSE_FIELDS if n in fields}, **fields}
        return schema

    @classmethod
    def on_disk_fields(cls) -> list[str]:
        """Field names in their on-disk order (:data:`EVAL_RESPONSE_FIELDS`, then a subclass's
        own fields in declaration order)."""
        return [*EVAL_RESPONSE_FIELDS, *(n for n in cls.model_fields if n not in _EVAL_FIELD_SET)]

    @classmethod
    def from_chat(cls, cell: CellIdentity, result: ChatOutcome, **fields: Any) -> Self:
        """The record of ``cell`` from an engine's ``result`` plus the other parts' ``fields``
        (:class:`CellConditions`, and a subclass's own); a :class:`ChatResult`'s tool calls
        are left out."""
        outcome = result.model_dump(exclude=_TOOL_FIELDS)
        return cls(**cell.model_dump(), **outcome, **fields)


_EVAL_FIELD_SET = frozenset(EVAL_RESPONSE_FIELDS)
_TOOL_FIELDS: set[str] = {"tool_calls", "tool_calls_raw"}


def on_disk_order(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` (an :class:`EvalResponse` as a dict, or a record with some of its fields)
    with its keys in on-disk order: the fields of :data:`EVAL_RESPONSE_FIELDS` it has, in that
    order, then its other keys in their own order. Values are not touched or copied.

    The resume scan relies on it (:func:`~touchstone_ray.bundle.key_and_ok`): ``key`` comes
    first and ``ok`` right before ``error`` in every line a response shard's writer writes,
    whatever order the dict arrived in (a client actor, a failed-cell record, finalize's
    merge). About 5 µs per record.
    """
    ordered = {name: record[name] for name in EVAL_RESPONSE_FIELDS if name in record}
    if len(ordered) < len(record):
        ordered.update((k, v) for k, v in record.items() if k not in _EVAL_FIELD_SET)
    return ordered


class GpuSample(_Record):
    """One GPU in a :class:`HostSample` (NVML, :mod:`touchstone_ray.telemetry.nvml`); a field
    is ``None`` where NVML does not support it on this GPU or its reading failed this tick."""

    index: int
    """NVML device index on the host (0-based)."""
    name: str | None = None
    """Device name as NVML reports it (e.g. ``NVIDIA H200``)."""
    mem_used_mb: float | None = None
    """GPU memory in use on the device, all processes (MB)."""
    mem_total_mb: float | None = None
    """Total memory of the device (MB)."""
    util_pct: float | None = None
    """Share of the driver's last sample period in which a kernel ran (%, 0..100)."""
    temp_c: float | None = None
    """GPU die temperature (°C)."""
    power_w: float | None = None
    """Power draw of the device (W)."""
    throttle_reasons: list[str] | None = None
    """Clock throttle reasons set this tick, as names (``gpu_idle``, ``sw_thermal`` …,
    :data:`~touchstone_ray.telemetry.nvml.THROTTLE_BITS`); ``[]`` when none is set."""


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
    """One telemetry tick of a host: a line of ``hosts/<host>.jsonl`` (sources per field in
    :mod:`touchstone_ray.telemetry.sampler`); a measured field is ``None`` where the host
    cannot measure it (its capability in ``bundle.json`` says why), never 0."""

    ts: float
    """Epoch s (the host's clock) when the tick was taken."""
    host: str
    """The fleet host (a key of ``bundle.json`` ``hosts``; file ``hosts/<slug(host)>.jsonl``)."""
    node_id: str | None = None
    """Ray node id of the monitor that took the tick; ``None`` when not known."""
    baseline: bool = False
    """A baseline tick, taken just before ``model``'s first cell on this host (the reference
    of the ``*_delta_mb`` figures)."""
    model: str | None = None
    """Set on baseline ticks: the model about to start."""
    sys_used_mb: float | None = None
    """Host memory in use: total − available (MB)."""
    sys_available_mb: float | None = None
    """Host memory available to new allocations without swapping (MB; the host's, not the
    container's)."""
    swap_used_mb: float | None = None
    """Swap in use (MB; 0 is a real reading on a host without swap)."""
    cpu_pct: float | None = None
    """Host CPU use since the previous tick, all cores together (%, 0..100)."""
    psi_mem_some_avg10: float | None = None
    """Linux PSI ``some avg10``: share of the last 10 s in which a task stalled on memory
    (%, 0..100)."""
    mem_pressure: MemPressure | None = None
    """Memory pressure level (``normal`` | ``warn`` | ``critical``): the worse of PSI and the
    available share (:mod:`touchstone_ray.telemetry.linux`), or macOS's own level."""
    cgroup_mem_used_mb: float | None = None
    """Memory in use by the node's cgroup (its container) (MB)."""
    cgroup_mem_limit_mb: float | None = None
    """Memory limit of that cgroup (MB); ``None`` when no limit is set."""
    cpu_throttle_count: int | None = None
    """Thermal throttle events of all cores since boot (count; a rise between ticks means
    throttling)."""
    temp_c_max: float | None = None
    """Hottest temperature sensor of the host (°C)."""
    gpus: list[GpuSample] | None = None
    """One entry per GPU, by NVML index; ``None`` when GPU sampling is off or unavailable."""
    engines: list[EngineProcessSample] | None = None
    """Per endpoint served from this host, its serving process tree (SPEC §7 new); only the
    endpoints whose process was found (``bundle.json`` ``hosts.<h>.engines`` says why not)."""
    foreign_cpu_pct: float | None = None
    """Host CPU since the previous tick used by processes other than the engines and
    touchstone's own (% of one core; see :mod:`touchstone_ray.telemetry.engines`)."""


class Verdict(_Record):
    """One judge's verdict on one answer: a line of ``judgements/<judge>/verdicts.jsonl``."""

    key: str
    """The answer's record key ``model|variant|prompt_id|repeat`` (:func:`cell_key`); a
    calibration verdict's is ``calibration|<variant>|<prompt_id>|<item index>``."""
    model: str
    """The model's label in the fleet config (``calibration`` for a calibration verdict)."""
    variant: str
    """Prompt variant id of the answer."""
    prompt_id: str
    """Prompt id in the pack."""
    repeat: int
    """Repeat number of the answer, from 1 (a calibration item's 0-based index)."""
    category: str
    """Category id of the prompt in the pack."""
    judge: str
    """Id of the judge that gave the verdict (its folder ``judgements/<judge>/``)."""
    score: int | None = None
    """1..5, or ``None`` when unscored or a judge error."""
    red_flag: bool = False
    """The judge (or the empty-answer rule on a safety-critical prompt) raised a red flag."""
    red_flags_hit: list[str] = []
    """The prompt's red flags the judge named, in its order (plus a manipulation finding)."""
    green_flags_hit: list[str] = []
    """The prompt's green flags the judge named, in its order."""
    unknown_flags: list[str] = []
    """Flags the judge named that are not the prompt's (dropped from the two lists above)."""
    rationale: str = ""
    """The judge's one-paragraph reason for the score (a rule's reason for a rule-based
    verdict); ``""`` when none was given."""
    status: VerdictStatus
    """``scored`` | ``unscored_reasoning_only`` | ``unscored_generation_failed`` |
    ``unscored_input_truncated`` | ``judge_error`` (SPEC §10)."""
    raw: str | None = None
    """The judge's raw reply (kept for judge errors and audits)."""
    safety_critical: bool = False
    """The prompt is ``safety_critical`` in the pack (copied so the K.-o. rule needs no pack)."""


class HolisticReport(_Record):
    """One judge's holistic report on a (model, variant): ``judgements/<judge>/reports.jsonl``."""

    model: str
    """The model's label in the fleet config."""
    variant: str
    """The prompt variant id."""
    judge: str
    """Id of the judge (an outside rater's name for an ingested reply)."""
    dim_scores: dict[str, int] = {}
    """Rubric dimension id → score 1..5; a dimension the judge did not score is absent."""
    dim_rationales: dict[str, str] = {}
    """Dimension id → the judge's reason for its score."""
    cited_prompts: dict[str, list[str]] = {}
    """Dimension id → prompt ids the reason cites (given by the judge, else found in the text)."""
    status: Literal["ok", "degraded"] = "ok"
    """``degraded`` when a dimension is missing or the call failed; else ``ok``."""
