"""``touchstone-ray hosts``: resolve hosts to nodes and reach every endpoint from its host.

Each host gets a pinned client actor (the same one eval uses), which calls the endpoint from
*that* node, and a pinned probe of the telemetry capabilities (GPU via NVML, Linux PSI).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table

from touchstone_ray.config import FleetConfig, load_config
from touchstone_ray.fleet.hosts import NodeInfo, current_nodes, resolve_hosts
from touchstone_ray.fleet.session import dashboard_exposure_warning, ensure_ray

CALL_TIMEOUT_S = 60.0
"""How long one host may take to start its actor and answer (s)."""


@dataclass
class HostReport:
    """What the preflight found for one host."""

    host: str
    node: NodeInfo
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Model label → ``{"reachable", "error", "served", "model_served", "engine_version",
    "engine_kind", "suggested_engine"?, "server_facts", "context_limit"}``."""
    gpu: str = "unknown"
    psi: str = "unknown"
    error: str | None = None

    @property
    def problems(self) -> list[str]:
        """One line per unreachable endpoint or model that is not served."""
        if self.error:
            return [f"{self.host}: {self.error}"]
        out = []
        for label, entry in self.models.items():
            if not entry.get("reachable"):
                out.append(f"{self.host}: {label}: endpoint unreachable ({entry.get('error')})")
            elif not entry.get("model_served", True):
                out.append(f"{self.host}: {label}: not served by the endpoint")
        return out


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
    actors = []
    by_host: dict[str, dict[str, Any]] = {}
    for model in config.models:
        by_host.setdefault(model.host_name, {})[config.model_label(model)] = model
    for host, models in by_host.items():
        node = nodes[host]
        reports[host] = HostReport(host=host, node=node)
        actor = spawn_client(host, node.node_id, models)
        actors.append(actor)
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
    for actor in actors:
        ray.kill(actor, no_restart=True)
    return list(reports.values())


def print_reports(reports: list[HostReport], out: TextIO = sys.stdout) -> None:
    """One table per host: node, IP, models, endpoint reached, served models, GPU, PSI."""
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


def run_hosts(config_path: Path, address: str | None, out: TextIO = sys.stdout) -> int:
    """The ``hosts`` command: print the reports; 1 if any problem, else 0.

    Also prints a ``warning:`` line (not a problem: the exit code stays) when the cluster's
    dashboard listens on a non-loopback address.
    """
    config = load_config(config_path)
    reports = check_hosts(config, address)
    print_reports(reports, out)
    exposure = dashboard_exposure_warning()
    if exposure:
        print(exposure, file=out)
    problems = [p for r in reports for p in r.problems]
    for problem in problems:
        print(f"problem: {problem}", file=out)
    return 1 if problems else 0
