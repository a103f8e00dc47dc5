"""``bundle.json``: the typed manifest of an eval or perf bundle (SPEC §7, §7b).

:class:`Manifest` and its parts (:class:`HostFacts`, :class:`ModelEntry`, :class:`PointEntry`,
:class:`PerfSettings`, :class:`ServerEntry` …) document every field the project writes; keys
they do not know (written by a newer version, or a section another stage adds) are kept, and a
read → write round trip keeps the keys in the order they were written
(:class:`~._kept.KeptObject`), so an unchanged manifest is written back byte for byte.
:func:`read_manifest` is the one reader; :func:`write_manifest` the one writer (atomic: temp
file, fsync, rename). Updates go through :meth:`touchstone_ray.bundle.Bundle.edit_manifest`
(read, modify, atomic write); a field set to a wrong type is found there, before anything is
written.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from touchstone_ray.bundle._kept import KeptObject, Number
from touchstone_ray.errors import BundleError, field_error
from touchstone_ray.storage import atomic_write_json

__all__ = [
    "ContextChoice",
    "EmbedSettings",
    "EngineFound",
    "Footprint",
    "HostFacts",
    "HostGpu",
    "Manifest",
    "ModelEntry",
    "PackRef",
    "PerfSettings",
    "PointEntry",
    "RayInfo",
    "ServerEntry",
    "TemplateCheck",
    "WarmupProbe",
    "edit_manifest",
    "read_manifest",
    "write_manifest",
]


class PackRef(KeptObject):
    """``pack``: which frozen ``pack.yaml`` an eval bundle ran."""

    id: str | None = None
    """The pack's ``id``."""
    version: int | None = None
    """The pack's ``version``."""
    sha256: str | None = None
    """sha256 hex of the frozen ``pack.yaml``'s bytes (resume and judge refuse another)."""


class ContextChoice(KeptObject):
    """``models[].context``: the context a model's cells had, as chosen at the start of the
    run (:mod:`touchstone_ray.eval.context`)."""

    tokens: int | None = None
    """The context a cell had (tokens); ``None``: not known (nothing checked or sent)."""
    source: str | None = None
    """``configured`` (``context_tokens``) | ``extra_body`` (``options.num_ctx``) | ``server``
    (its own per-request limit) | ``model`` (the model's context length the server reports,
    Ollama ``/api/show``) | ``prompts`` (the largest prompt count plus its ``max_tokens``);
    ``None`` with ``tokens``."""
    sent: bool | None = None
    """``tokens`` went out with every request (Ollama ``options.num_ctx``)."""


class ModelEntry(KeptObject):
    """One entry of ``models``: the label and the model's frozen fleet config entry (secrets
    redacted; the keys of :class:`~touchstone_ray.config.ModelSpec`, the ones below typed)."""

    model: str
    """The model's label (keys, shard names ``responses/<slug(model)>.jsonl``)."""
    id: str | None = None
    """The name the server knows (e.g. ``qwen3:8b``)."""
    engine: str | None = None
    """``ollama`` | ``openai`` | ``llamacpp`` | ``vllm`` | ``lmstudio`` | ``simulated``."""
    base_url: str | None = None
    """The endpoint's base URL as configured; ``None`` for a simulated model without one."""
    host: str | None = None
    """The fleet host the model is pinned to; ``None``: the driver's own node."""
    concurrency: int | None = None
    """Requests in flight to the endpoint at most (> 1: speed measured under load)."""
    extra_body: dict[str, Any] | None = None
    """Extra request body keys sent with every request (secret-looking values ``***``)."""
    timeout_s: Number | None = None
    """Per-request timeout (s)."""
    keep_alive: str | int | None = None
    """Ollama ``keep_alive`` (a duration such as ``30m``, or s)."""
    context_tokens: int | None = None
    """Context the model was given (tokens); ``None``: the server's default."""
    engine_process: str | None = None
    """Substring naming the serving process when it is not found by its port."""
    reasoning_headroom_tokens: int | None = None
    """Tokens added to every prompt's ``max_tokens`` for this model (absent in older
    bundles)."""
    sim: dict[str, Any] | None = None
    """Simulator knobs of a ``simulated`` model."""
    context: ContextChoice | None = None
    """As landed: the context its cells had, chosen at the start of the (latest) run."""


class HostGpu(KeptObject):
    """One GPU of a host's ``gpus`` (NVML at start)."""

    index: int | None = None
    """NVML device index (0-based)."""
    name: str | None = None
    """Device name (e.g. ``NVIDIA H200``)."""
    mem_total_mb: Number | None = None
    """Device memory (MB)."""

    @property
    def shown_name(self) -> str:
        """The name as reports show it: ``GPU`` when the entry has no ``name`` key (a
        ``null`` name reads ``None``, as it always has)."""
        return str(self.name) if "name" in self.model_fields_set else "GPU"

    @property
    def label(self) -> str:
        """``NVIDIA H200 (141 GB)``: :attr:`shown_name` and the memory in GB (MB / 1024)
        when known."""
        total = self.mem_total_mb
        return self.shown_name if total is None else f"{self.shown_name} ({total / 1024:.0f} GB)"


class EngineFound(KeptObject):
    """How one endpoint's serving process was found on a host (``hosts.<h>.engines``)."""

    pid: int | None = None
    """The root process of the serving tree; ``None`` when not found."""
    found_by: str | None = None
    """``port`` (listening on the endpoint's port) or ``engine_process`` (by name)."""
    reason: str | None = None
    """Why it was not found; ``None`` when it was."""


class Footprint(KeptObject):
    """touchstone's own memory on a host at the end of the run, and the harness's CPU over
    the run there (``touchstone_footprint``; the CPU from the host monitor's per-tick
    readings, :meth:`~touchstone_ray.telemetry.engines.EngineTracker.harness_cpu`)."""

    host: str | None = None
    """The fleet host."""
    node_id: str | None = None
    """Ray node id of the monitor that measured it."""
    monitor_pid: int | None = None
    """Pid of the host's monitor actor."""
    rss_mb: dict[str, Number | None] | None = None
    """Pid → RSS of that process (MB; ``None``: it was gone)."""
    total_rss_mb: Number | None = None
    """Sum of those RSS (MB)."""
    cpu_s: dict[str, Number | None] | None = None
    """Pid → CPU time (user + system, s) that process of touchstone's used over the run:
    from the monitor's first reading of it (from its start, when it started later) to the
    monitor's last tick; ``None``: never read. The same pids as :attr:`rss_mb`."""
    ray_cpu_s: dict[str, Number] | None = None
    """Pid → CPU time (s) of the run's Ray cluster's own processes on the host over the run,
    read the same way (raylet, GCS, dashboard, agents, idle and other ``ray::`` workers; not
    another Ray session on the same machine)."""
    total_cpu_s: Number | None = None
    """Sum of :attr:`cpu_s` and :attr:`ray_cpu_s` (s): the harness's CPU on the host."""
    span_s: Number | None = None
    """Seconds from the monitor's first tick to its last (the span of the CPU figures)."""
    cpu_pct_mean: Number | None = None
    """:attr:`total_cpu_s` / :attr:`span_s` × 100: the harness's mean CPU, in % of *one* core
    (200 = two cores busy the whole run)."""


class HostFacts(KeptObject):
    """One host of ``hosts``: what its client actor and monitor found, and how the run ended
    there. Every field is optional (a host that never joined has none)."""

    node_id: str | None = None
    """Ray node id the host resolved to."""
    hostname: str | None = None
    """The node's hostname."""
    ip: str | None = None
    """The node's IP address."""
    cpu: str | None = None
    """CPU model name."""
    cpu_count: int | None = None
    """Logical CPUs (count; the contention threshold scales with it)."""
    ram_gb: Number | None = None
    """Physical memory (GiB, one decimal)."""
    gpus: list[HostGpu | str] | None = None
    """The host's GPUs (NVML; a plain name in older bundles); ``[]`` without one."""
    os: str | None = None
    """``platform.platform()`` of the node."""
    capabilities: dict[str, Any] | None = None
    """What its monitor can measure: field → ``{supported, source | reason}``."""
    engines: dict[str, EngineFound] | None = None
    """Endpoint (:func:`~touchstone_ray.telemetry.engines.endpoint_of`) → how its engine
    process was found, or why not."""
    touchstone_footprint: Footprint | None = None
    """touchstone's own RSS on the host at the end of the run."""
    monitoring_lost_at: Number | None = None
    """Epoch s when the host's monitor was lost; ``None`` while it answered."""
    monitoring_lost_reason: str | None = None
    """Why the monitor was lost (one line)."""
    stopped_reason: str | None = None
    """Why the host stopped before its cells (``--strict-preflight``)."""

    def gpu_labels(self) -> list[str]:
        """Each GPU as :attr:`HostGpu.label` (a plain name as it is)."""
        return [g if isinstance(g, str) else g.label for g in self.gpus or []]

    def gpu_names(self) -> list[str]:
        """Each GPU's :attr:`HostGpu.shown_name` (a plain name as it is)."""
        return [g if isinstance(g, str) else g.shown_name for g in self.gpus or []]


class PointEntry(KeptObject):
    """Perf: one planned point of ``points`` (:class:`~touchstone_ray.perf.plan.Point`)."""

    model: str
    """The model's label."""
    host: str
    """The fleet host it runs on."""
    context: str | int
    """Context label: prompt tokens, with ``-cached`` for the cached variant (``1024-cached``)."""
    concurrency: int
    """Requests in flight."""
    runs: int
    """Requests planned (at least one per stream in flight)."""
    cached: bool | None = None
    """The cached variant (the same prompt each time)."""
    rate: Number | None = None
    """Open-loop point: offered rate (requests/s); ``None`` for a closed-loop one."""
    arrival: str | None = None
    """Open-loop point: ``constant`` or ``poisson``."""
    seed: int | None = None
    """Open-loop point: seed of the Poisson schedule."""
    max_in_flight: int | None = None
    """Open-loop point: requests out at once beyond which a due one is ``dropped``."""

    @property
    def prefix(self) -> str:
        """``model|host|context|concurrency`` (``r<rate>`` for an open-loop point): the request
        key without its run."""
        load = str(self.concurrency) if self.rate is None else f"r{self.rate:g}"
        return f"{self.model}|{self.host}|{self.context}|{load}"


class EmbedSettings(KeptObject):
    """Perf ``--embed``: the embedding requests after each model's points."""

    chunks: int | None = None
    """Chunks embedded per model."""
    chunk_tokens: int | None = None
    """Target tokens per chunk."""
    batch: int | None = None
    """Chunks per request."""


class PerfSettings(KeptObject):
    """Perf: the run settings (``settings``)."""

    output_tokens: int | None = None
    """Output tokens asked per request (tokens)."""
    runs: int | None = None
    """Requests per point (``--runs``), before ``max(runs, concurrency)``."""
    slo: dict[str, Number] | None = None
    """Metric → limit (``ttft``, ``tpot``, ``e2e`` … in s)."""
    contexts: list[int] | None = None
    """Prompt sizes planned (tokens)."""
    concurrency: list[int] | None = None
    """Concurrencies planned (requests in flight)."""
    capacity: bool | None = None
    """``--capacity``: search each model's users at once under the SLO."""
    schedule: str | None = None
    """``closed-loop`` | ``lockstep``; absent in bundles from before it (closed loop)."""
    embed: EmbedSettings | None = None
    """``--embed`` settings; absent without it."""
    open_loop: dict[str, Any] | None = None
    """``--rate`` / ``--sweep``: ``{rates (requests/s), arrival, duration_s, requests,
    max_in_flight, seed, sweep, sweep_points}``; absent without them."""


class TemplateCheck(KeptObject):
    """``servers.<model>.template``: the chat template the endpoint applies, read from the
    server before the run (llama.cpp ``/props``, Ollama ``/api/show``), and whether its control
    markers are tokens the served model knows (llama.cpp ``/tokenize``)."""

    source: str | None = None
    """Where the template came from (``/props``, ``/api/show``)."""
    template_sha256: str | None = None
    """sha256 hex of the template text as the server sent it (UTF-8)."""
    template_chars: int | None = None
    """Length of the template text (characters)."""
    caps: dict[str, Any] | list[Any] | None = None
    """The server's capability flags of the template as sent (llama.cpp
    ``chat_template_caps``; Ollama ``capabilities``); ``None``: not sent."""
    families: list[str] = Field(default_factory=list)
    """Marker families (:data:`~touchstone_ray.answers.TEMPLATE_MARKERS`) the template's text
    uses; ``[]``: none of the known ones."""
    marker_tokens: dict[str, int] | None = None
    """Marker → tokens it is by the served model's tokenizer, special tokens parsed (1: the
    model knows it), for every known marker; ``None``: the server has no tokenizer endpoint."""
    unknown_markers: list[str] | None = None
    """The template's markers that are not one token of the served model (the model will
    write them as text: ``template_leak``); ``None``: not checkable (no tokenizer)."""
    model_families: list[str] | None = None
    """Families all of whose markers are single tokens of the served model: its own template's
    family among them (a one-marker family may also be a plain token of its vocabulary, as
    ``</s>`` is for Gemma 3); ``None``: not checkable."""
    fix: str | None = None
    """The server flag to pass when markers are unknown (``--chat-template gemma``, or
    ``--jinja`` with a GGUF that carries its template); ``None``: nothing to fix or unknown."""
    error: str | None = None
    """Why the template could not be read or checked (one line); ``None`` when it was."""


class WarmupProbe(KeptObject):
    """``servers.<model>.warmup``: the preflight content probe, the warm-up answer classified
    by the same detectors as every answer (:func:`~touchstone_ray.answers.answer_flags`)."""

    flags: list[str] = Field(default_factory=list)
    """The warm-up answer's flags that say something about the server (``[]``: clean)."""
    example: str | None = None
    """The warm-up answer's start (at most 120 characters, one line)."""
    fix: str | None = None
    """The likely fix named in the warning line; ``None`` when clean."""


class ServerEntry(KeptObject):
    """One entry of ``servers`` (per model label, so per endpoint): what the preflight found
    about the server, and the content probe of its warm-up. Older bundles carry only the
    first two keys."""

    engine_kind: str | None = None
    """The ``engine:`` value the server's identity matches (``llamacpp``, ``vllm`` …)."""
    server_facts: dict[str, Any] | None = None
    """What the server says about itself and the model (:meth:`Engine.server_facts`)."""
    template: TemplateCheck | None = None
    """The chat-template check; absent where the server does not show its template."""
    warmup: WarmupProbe | None = None
    """The warm-up answer's probe; absent without a warm-up."""
    stopped_reason: str | None = None
    """Why the model stopped before its cells in the latest run (``--strict-preflight`` and a
    flagged warm-up answer); its cells have no record, so ``--resume`` runs them. ``None``
    (written as ``null`` once a later run went on) when it was not stopped."""


class RayInfo(KeptObject):
    """``ray``: the Ray cluster the run used."""

    version: str | None = None
    """Ray's version."""
    address: str | None = None
    """The address joined; ``None`` for a local Ray started by the driver."""
    dashboard_url: str | None = None
    """The dashboard's http URL; ``None`` without a dashboard."""


class AgentEntry(KeptObject):
    """``agents.<host>``: the standing host agent whose client the latest run used (issue 30,
    :mod:`touchstone_ray.fleet.agents`); absent where the run started its own client actor."""

    name: str | None = None
    """The agent's Ray actor name (``agent:<node id>``, namespace ``touchstone``)."""
    node_id: str | None = None
    """The Ray node it runs on."""
    pid: int | None = None
    """Its process id on that node."""
    version: str | None = None
    """Its code version (``<version>+<source hash>``), the driver's: checked on attach."""
    settings_hash: str | None = None
    """Its settings hash (Python, Ray, ``TOUCHSTONE_*`` variables), the driver's."""
    started_at: Number | None = None
    """Epoch s when the agent started."""
    reused: bool | None = None
    """The agent was up before this run (false: started for it)."""
    replaced: str | None = None
    """The line said when an agent of another version or settings was replaced, else null."""
    taken_from: str | None = None
    """The run whose dead driver still held the agent, else null."""


class Manifest(KeptObject):
    """The fields of ``bundle.json``; every one optional on read (older bundles lack some)."""

    schema_version: int | None = None
    """Record schema version of the bundle (``touchstone_ray.records.SCHEMA_VERSION``)."""
    kind: str | None = None
    """``perf`` for a perf bundle (SPEC §7b), ``tools`` for a tools bundle (§7c); absent for
    an eval bundle."""
    pack_fingerprint: str | None = None
    """Tools: sha256 hex of the pack, canonical JSON (``ToolsPack.fingerprint``)."""
    checks_fingerprint: str | None = None
    """Tools: sha256 hex of every item's checks (``ToolsPack.checks_fingerprint``); two tools
    bundles compare only where it is equal."""
    config_name: str | None = None
    """Perf: the name of the fleet config the bundle was started from."""
    pack: PackRef | None = None
    """Eval and tools: the frozen ``pack.yaml``."""
    models: list[ModelEntry] = Field(default_factory=list)
    """One entry per model, in fleet config order."""
    variants: list[str] | None = None
    """Eval: the pack's prompt variant ids, in pack order."""
    selection: dict[str, Any] | None = None
    """Eval: the prompts the latest run selected for a quick try, ``{"limit": N}`` (the first
    N of each category) or ``{"prompts": [ids]}``; ``None``: every prompt of the pack."""
    points: list[PointEntry] | None = None
    """Perf: the points planned, in run order."""
    settings: PerfSettings | None = None
    """Perf: the run settings."""
    hosts: dict[str, HostFacts] = Field(default_factory=dict)
    """Host name → its facts."""
    sampling: dict[str, Any] | None = None
    """Eval: the pack's sampling parameters as sent (temperature, max_tokens, seed …)."""
    ray: RayInfo | None = None
    """The Ray cluster the run used."""
    touchstone_version: str | None = None
    """Version of touchstone-ray that started the bundle."""
    simulated: bool | None = None
    """True when any model ran on the simulated engine."""
    started_at: Number | None = None
    """Epoch s (driver clock) when the bundle was created."""
    resumed_at: Number | None = None
    """Epoch s of the latest ``--resume``; absent for a bundle never resumed."""
    finished_at: Number | None = None
    """Epoch s when the last run ended (done or failed); null while running."""
    status: str | None = None
    """``running`` | ``done`` | ``failed`` (SPEC §7)."""
    servers: dict[str, ServerEntry] | None = None
    """Model label → what the preflight found about its server (:class:`ServerEntry`)."""
    server_checks: dict[str, dict[str, Any]] | None = None
    """Model label → the end-of-model server check (cache and slot figures as reported)."""
    resources_unknown: dict[str, str] | None = None
    """Host → why its records keep null resource fields after finalize (the host has no
    samples in ``hosts/``); one line per host, written by finalize."""
    capacity: dict[str, dict[str, Any]] | None = None
    """Perf ``--capacity``: ``model|host`` → the search's result (as in ``summary.json``)."""
    agents: dict[str, AgentEntry] | None = None
    """Host → the standing host agent its client ran in (``agents up``); absent without."""
    sweep: dict[str, dict[str, Any]] | None = None
    """Perf ``--sweep``: ``model|host`` → the rate sweep's result (as in ``summary.json``)."""

    def host(self, name: str) -> HostFacts:
        """The facts of host ``name``, added (empty) when the manifest has none yet."""
        return self.hosts.setdefault(name, HostFacts())

    def server(self, label: str) -> ServerEntry:
        """The ``servers`` entry of model ``label``, added (empty) when there is none yet."""
        if self.servers is None:
            self.servers = {}
        return self.servers.setdefault(label, ServerEntry())

    def model_labels(self) -> list[str]:
        """The models' labels, in fleet config order."""
        return [m.model for m in self.models]

    def model_concurrency(self) -> dict[str, int]:
        """Model label → its configured ``concurrency`` (requests in flight to its endpoint);
        models without one are left out."""
        return {m.model: m.concurrency for m in self.models if m.concurrency is not None}

    def run_started_at(self) -> float:
        """Epoch s when the latest run of the bundle started: ``resumed_at``, else
        ``started_at``, else 0."""
        return float(self.resumed_at or self.started_at or 0.0)

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: Path | str = "bundle.json") -> Manifest:
        """Validate a mapping; raises :class:`BundleError` naming ``where``, the field and
        the problem (one line)."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise BundleError(f"{where}: {field_error(exc)}") from None


def read_manifest(path: Path) -> Manifest:
    """Parse ``bundle.json`` at ``path``; raises :class:`BundleError` if it is missing, not a
    JSON object, or a field has the wrong type."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(f"{path}: missing; is this a bundle?") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BundleError(f"{path}: not a touchstone bundle manifest")
    return Manifest.from_dict(data, path)


def write_manifest(path: Path, manifest: Manifest | dict[str, Any]) -> None:
    """Replace ``bundle.json`` at ``path`` atomically (indented JSON, keys in written order);
    a mapping is validated first (:class:`BundleError` for a wrong field type)."""
    if isinstance(manifest, dict):
        manifest = Manifest.from_dict(manifest, path)
    atomic_write_json(path, manifest.to_dict())


@contextlib.contextmanager
def edit_manifest(path: Path) -> Iterator[Manifest]:
    """Read ``bundle.json`` at ``path``, yield it for changes, then validate it again and
    replace the file atomically, only when its content changed (so an edit that changes
    nothing leaves the file as it was). On an error inside the block nothing is written.
    Raises :class:`BundleError` like :func:`read_manifest`, or for a field set to a wrong type.
    One driver writes a bundle, so no lock is taken."""
    manifest = read_manifest(path)
    before = manifest.to_dict()
    yield manifest
    after = manifest.to_dict()
    if after != before or list(after) != list(before):
        checked = Manifest.from_dict(after, path)
        atomic_write_json(path, checked.to_dict())
