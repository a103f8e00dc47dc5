"""The preflight: every endpoint reached from its host, and what is wrong with it.

- ``touchstone-ray hosts`` (:func:`run_hosts`): resolve hosts to nodes; each host gets a pinned
  client actor (the same one eval uses), which calls the endpoint from *that* node, and a
  pinned probe of the telemetry capabilities (GPU via NVML, Linux PSI).
- :class:`PreflightStart`: a run's (eval, perf) start of one host's client actor, ``ready``
  and ``preflight``, as the first lane of that actor.
- :func:`preflight_problems`: the one wording of a preflight's problems, for all of them;
  :func:`preflight_warnings` of its warnings (:func:`template_warning`: a chat template the
  model does not know);
  :func:`store_servers` keeps what it found about each server in ``bundle.json``.
"""

from __future__ import annotations

import json
import sys
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from touchstone_ray.bundle import Manifest, TemplateCheck
from touchstone_ray.config import FleetConfig, load_config
from touchstone_ray.fleet.actors import StartLane, close_actors
from touchstone_ray.fleet.dispatch import Call
from touchstone_ray.fleet.hosts import NodeInfo, current_nodes, resolve_hosts
from touchstone_ray.fleet.session import dashboard_exposure_warning, ensure_ray

CALL_TIMEOUT_S = 60.0
"""How long one host may take to start its actor and answer (s), for ``hosts``."""
PREFLIGHT_TIMEOUT_S = 60.0
"""How long a run's preflight of one host may take once its client actor runs (s)."""


def preflight_problems(
    host: str, result: Mapping[str, Mapping[str, Any]] | None, missing: str
) -> list[str]:
    """The problems of one host's preflight answer (model label → the entry of
    :meth:`~touchstone_ray.fleet.client_actor.HostClient.preflight`), one line each:
    ``<host>: <label>: endpoint unreachable (<error>)`` or ``<host>: <label>: not served
    (server lists [<names>])``; ``result`` ``None`` (no answer at all) gives the one line
    ``<host>: <missing>``."""
    if result is None:
        return [f"{host}: {missing}"]
    problems: list[str] = []
    for label, entry in result.items():
        if not entry.get("reachable"):
            problems.append(f"{host}: {label}: endpoint unreachable ({entry.get('error')})")
        elif not entry.get("model_served", True):
            problems.append(f"{host}: {label}: not served (server lists {entry.get('served')})")
    return problems


def template_warning(label: str, check: TemplateCheck) -> str | None:
    """One line when the template's markers are unknown to the served model
    (:func:`~touchstone_ray.fleet.template_check.diagnose_template`, which names the fix
    whenever it finds such markers)::

        <label>: chat template (/props) is ChatML (…) but the served model does not know its
        markers <|im_start|>, <|im_end|> (6, 5 tokens): the answers will leak them; pass
        --chat-template gemma

    ``None`` when every marker is known or the check could not say. Kept apart from the
    check itself so the driver prints it without loading the marker tables."""
    if not check.unknown_markers:
        return None
    counts = check.marker_tokens or {}
    markers = ", ".join(check.unknown_markers)
    tokens = ", ".join(str(counts.get(m, "?")) for m in check.unknown_markers)
    family = " / ".join(check.families) or "unknown"
    return (
        f"{label}: chat template ({check.source}) is {family} but the served model does not "
        f"know its markers {markers} ({tokens} tokens): the answers will leak them; pass "
        f"{check.fix}"
    )


def preflight_warnings(host: str, result: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """The warnings of one host's preflight answer, one line each, not problems (the run goes
    on): ``<host>: <label>: chat template … pass --chat-template gemma`` for a template whose
    control markers the served model does not know (:func:`template_warning`)."""
    warnings: list[str] = []
    for label, entry in (result or {}).items():
        template = entry.get("template")
        if isinstance(template, dict):
            line = template_warning(label, TemplateCheck.model_validate(template))
            if line is not None:
                warnings.append(f"{host}: {line}")
    return warnings


SERVER_KEYS = ("engine_kind", "server_facts", "template")
"""The keys of a preflight entry kept in ``bundle.json`` ``servers.<model>``."""


def store_servers(manifest: Manifest, result: Mapping[str, Mapping[str, Any]] | None) -> None:
    """Put each model's :data:`SERVER_KEYS` (those with a value) of a host's preflight answer
    into ``manifest.servers`` (:class:`~touchstone_ray.bundle.ServerEntry`; keys already
    there, such as an earlier run's warm-up probe, stay)."""
    for label, entry in (result or {}).items():
        found = {k: entry[k] for k in SERVER_KEYS if entry.get(k)}
        if found:
            manifest.server(label).update(found)


class PreflightStart(StartLane):
    """A host's client actor's start: ``ready`` and ``preflight`` submitted together (Ray
    queues the preflight until the actor runs, which may take the ready deadline; the
    preflight then has ``preflight_timeout_s``, s). Each problem of the answer
    (:func:`preflight_problems`) is printed as ``preflight: <problem>`` on stderr, each warning
    (:func:`preflight_warnings`) as ``preflight: warning: <warning>``, then :meth:`preflighted`
    gets the answer. Subclasses implement :meth:`ready`,
    :meth:`not_started` and :meth:`preflighted`."""

    def __init__(
        self,
        actor: Any,
        host: str,
        node_id: str,
        ready_timeout_s: float,
        preflight_timeout_s: float = PREFLIGHT_TIMEOUT_S,
    ) -> None:
        super().__init__(actor, "client actor", node_id, ready_timeout_s)
        self.host = host
        self.preflight_timeout_s = preflight_timeout_s
        budget = ready_timeout_s + preflight_timeout_s
        self.queue(Call(actor.preflight, (), "preflight", None, "preflight", budget))

    def answered(self, call: Call, value: Any) -> None:
        if call.kind != "preflight":
            super().answered(call, value)
            return
        self._preflight(value if isinstance(value, dict) else None, "no preflight answer")

    def call_failed(self, call: Call, error: str, *, timed_out: bool) -> None:
        if call.kind != "preflight":
            super().call_failed(call, error, timed_out=timed_out)
            return
        missing = (
            f"no preflight answer within {self.preflight_timeout_s:.0f} s"
            if timed_out
            else f"preflight failed: {error}"
        )
        self._preflight(None, missing)

    def _preflight(self, result: dict[str, dict[str, Any]] | None, missing: str) -> None:
        problems = preflight_problems(self.host, result, missing)
        for problem in problems:
            print(f"preflight: {problem}", file=sys.stderr, flush=True)
        for warning in preflight_warnings(self.host, result):
            print(f"preflight: warning: {warning}", file=sys.stderr, flush=True)
        self.preflighted(result, problems)

    @abstractmethod
    def preflighted(self, result: dict[str, dict[str, Any]] | None, problems: list[str]) -> None:
        """The host's preflight answer (``None``: none came) and its problems, as printed."""


@dataclass
class HostReport:
    """What the preflight found for one host."""

    host: str
    node: NodeInfo
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Model label → ``{"reachable", "error", "served", "model_served", "engine_version",
    "engine_kind", "suggested_engine"?, "sends_context", "server_facts", "context_limit",
    "model_context_length"?}``."""
    gpu: str = "unknown"
    psi: str = "unknown"
    error: str | None = None

    @property
    def problems(self) -> list[str]:
        """One line per unreachable endpoint or model that is not served
        (:func:`preflight_problems`), or the one line of :attr:`error`."""
        return preflight_problems(self.host, None if self.error else self.models, self.error or "")


def _probe_capabilities(host: str, node_id: str, gpu_mode: str) -> dict[str, Any]:
    from touchstone_ray.telemetry.sampler import HostSampler

    sampler = HostSampler(host, node_id, gpu_mode=gpu_mode)  # type: ignore[arg-type]
    try:
        return sampler.probe()
    finally:
        sampler.close()


def _capability_line(caps: dict[str, Any], name: str) -> str:
    entry = caps.get(name) or {}
    if entry.get("supported"):
        return "yes" + (f" ({entry['source']})" if entry.get("source") else "")
    return f"no: {entry.get('reason') or 'unknown'}"


def check_hosts(config: FleetConfig, address: str | None) -> list[HostReport]:
    """Run the preflight on every host; raises ConfigError if a host matches no node."""
    import ray

    from touchstone_ray.fleet.client_actor import spawn_client
    from touchstone_ray.fleet.dispatch import pin

    ensure_ray(address, config.ray)
    nodes = resolve_hosts(config, current_nodes(), ray.get_runtime_context().get_node_id())
    probe = ray.remote(num_cpus=0)(_probe_capabilities)
    reports: dict[str, HostReport] = {}
    calls: dict[Any, tuple[str, str]] = {}
    actors: dict[str, Any] = {}
    by_host: dict[str, dict[str, Any]] = {}
    for model in config.models:
        by_host.setdefault(model.host_name, {})[config.model_label(model)] = model
    for host, models in by_host.items():
        node = nodes[host]
        reports[host] = HostReport(host=host, node=node)
        actor = actors[host] = spawn_client(host, node.node_id, models)
        calls[actor.preflight.remote()] = (host, "endpoints")
        pinned = probe.options(scheduling_strategy=pin(node.node_id))
        ref = pinned.remote(host, node.node_id, config.monitor.gpu)
        calls[ref] = (host, "caps")
    ready, pending = ray.wait(list(calls), num_returns=len(calls), timeout=CALL_TIMEOUT_S)
    for ref in ready:
        host, what = calls[ref]
        try:
            value = ray.get(ref)
        except Exception as exc:
            reports[host].error = f"{what} check failed: {type(exc).__name__}: {exc}"
            continue
        if what == "endpoints":
            reports[host].models = value
        else:
            reports[host].gpu = _capability_line(value, "gpus")
            reports[host].psi = _capability_line(value, "psi_mem_some_avg10")
    for ref in pending:
        host, what = calls[ref]
        reports[host].error = f"no {what} answer within {CALL_TIMEOUT_S:.0f} s"
    close_actors(actors, lost={h for h, r in reports.items() if r.error})
    return list(reports.values())


def print_reports(reports: list[HostReport], out: TextIO = sys.stdout) -> None:
    """One table per host: node, IP, models, endpoint reached, served models, GPU, PSI."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out, width=120)
    for report in reports:
        table = Table(title=f"host {report.host}", show_header=True, title_justify="left")
        table.add_column("model")
        table.add_column("endpoint reached")
        table.add_column("server lists")
        table.add_column("engine")
        for label, entry in report.models.items():
            reached = "yes" if entry.get("reachable") else f"no: {entry.get('error')}"
            served = ", ".join(entry.get("served", [])[:8]) or "-"
            if entry.get("reachable") and not entry.get("model_served", True):
                served += " (model NOT served)"
            table.add_row(label, reached, served, engine_cell(entry))
        console.print(
            f"[bold]{report.host}[/]: node {report.node.node_id[:12]} ip {report.node.ip} "
            f"hostname {report.node.hostname}"
        )
        console.print(table)
        console.print(f"  GPU: {report.gpu}\n  PSI: {report.psi}")
        for label, entry in report.models.items():
            if entry.get("suggested_engine"):
                console.print(
                    f"  suggestion: {label}: set `engine: {entry['suggested_engine']}` "
                    "(uses the server's own identity, context limit and tokenizer)",
                    markup=False,
                    soft_wrap=True,
                )
        if report.error:
            console.print(f"  [red]error: {report.error}[/]")


def engine_cell(entry: dict[str, Any]) -> str:
    """The ``engine`` column: what the server said it is, and the ``engine:`` value that
    knows it (``llama.cpp b4500 (engine: llamacpp)``); ``-`` when unreachable."""
    version = str(entry.get("engine_version") or "-")
    kind = entry.get("engine_kind")
    return f"{version} (engine: {kind})" if kind else version


JSON_KEYS = ("reachable", "error", "served", "model_served", "engine_version", "engine_kind")
"""The keys of each model's preflight entry in ``hosts --json``."""


def reports_json(reports: list[HostReport]) -> dict[str, Any]:
    """The reports as data (``hosts --json``): ``{"hosts": [{"host", "node_id", "error",
    "gpu", "psi", "models": {label: {<JSON_KEYS>}}}], "problems": [lines]}``."""
    return {
        "hosts": [
            {
                "host": r.host,
                "node_id": r.node.node_id,
                "error": r.error,
                "gpu": r.gpu,
                "psi": r.psi,
                "models": {
                    label: {k: entry.get(k) for k in JSON_KEYS} for label, entry in r.models.items()
                },
            }
            for r in reports
        ],
        "problems": [p for r in reports for p in r.problems],
    }


def run_hosts(
    config_path: Path, address: str | None, out: TextIO = sys.stdout, *, as_json: bool = False
) -> int:
    """The ``hosts`` command: print the reports; 1 if any problem, else 0.

    Also prints ``warning:`` lines (not problems: the exit code stays) for a chat template
    the served model does not know (:func:`preflight_warnings`) and when the cluster's
    dashboard listens on a non-loopback address. ``as_json``: the reports as one JSON line
    (:func:`reports_json`) instead, last on ``out``, for a program (the web UI's start form).
    """
    config = load_config(config_path)
    reports = check_hosts(config, address)
    if as_json:
        print(json.dumps(reports_json(reports)), file=out, flush=True)
        return 1 if any(r.problems for r in reports) else 0
    print_reports(reports, out)
    exposure = dashboard_exposure_warning()
    if exposure:
        print(exposure, file=out)
    for report in reports:
        for warning in preflight_warnings(report.host, report.models):
            print(f"warning: {warning}", file=out)
    problems = [p for r in reports for p in r.problems]
    for problem in problems:
        print(f"problem: {problem}", file=out)
    return 1 if problems else 0
