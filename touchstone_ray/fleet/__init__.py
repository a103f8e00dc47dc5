"""The fleet: the per-host machinery every stage runs on (SPEC §4, §8).

* :mod:`.session` — joining or starting Ray (embedded default, ``--address`` joins a cluster);
* :mod:`.hosts` — host → Ray node resolution;
* :mod:`.dispatch` — the one dispatcher: every pinned actor's work as lanes;
* :mod:`.actors` — a pinned actor's start (its first lane, the one ready timeout) and close;
* :mod:`.abort` — the one finalize-on-abort path of a run (eval, perf, judge);
* :mod:`.agents` — the standing host agents (``agents up``) that keep a host's client
  process between runs, and :func:`start_clients`, a run's clients from them or its own;
* :mod:`.client_actor` — the per-host client actor, with the :class:`Cell` it runs
  (:mod:`.cells`), the prompt it sends (:mod:`.prompts`) and its Ray metrics (:mod:`.metrics`);
* :mod:`.monitors` — the driver's side of the host monitors (:mod:`touchstone_ray.telemetry`);
* :mod:`.preflight` — ``touchstone-ray hosts``, a run's preflight start lane, and the one
  wording of a preflight's problems: every endpoint reached from its host.

``eval``, ``perf`` and ``judging`` are siblings on top of this package; nothing here imports a
stage. The names below load their module on first use (Ray, psutil and the engines are not
imported by ``import touchstone_ray.fleet``). The names in ``__all__`` are the package's
public surface (a test pins them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from touchstone_ray.fleet.abort import (
        abort_guard,
    )
    from touchstone_ray.fleet.actors import (
        StartLane,
        actor_ready_timeout_s,
        close_actors,
    )
    from touchstone_ray.fleet.agents import (
        AgentClient,
        ClientSpec,
        agent_entries,
        agents_on,
        start_clients,
    )
    from touchstone_ray.fleet.cells import (
        TASK_NAMES_PER_MODEL,
        Cell,
    )
    from touchstone_ray.fleet.client_actor import (
        HostClient,
        client_spec,
        spawn_client,
    )
    from touchstone_ray.fleet.dispatch import (
        DEADLINE_SLACK_S,
        LIVENESS_INTERVAL_S,
        Call,
        Dispatcher,
        Lane,
        Pinned,
        call_deadline_s,
        pin,
        spawn_pinned,
    )
    from touchstone_ray.fleet.host_clients import (
        HostClients,
        HostStart,
    )
    from touchstone_ray.fleet.host_facts import cpu_model, gpu_inventory, host_facts
    from touchstone_ray.fleet.hosts import (
        HOST_LABEL,
        NodeInfo,
        current_nodes,
        resolve_hosts,
    )
    from touchstone_ray.fleet.metrics import (
        PROMETHEUS_CELL_METRICS,
        PROMETHEUS_HOST_METRICS,
    )
    from touchstone_ray.fleet.monitors import (
        MonitorSet,
        monitor_name,
    )
    from touchstone_ray.fleet.preflight import (
        PREFLIGHT_TIMEOUT_S,
        PreflightStart,
        check_hosts,
        preflight_problems,
        preflight_warnings,
        run_hosts,
        store_servers,
    )
    from touchstone_ray.fleet.probe import WARMUP_PROMPT, probe_reason, probe_warning
    from touchstone_ray.fleet.prompts import (
        PromptCount,
        cell_messages,
        estimate_prompt_tokens,
        fits,
        input_truncated,
        nonce_line,
    )
    from touchstone_ray.fleet.session import (
        dashboard_exposure_warning,
        ensure_ray,
        is_loopback,
        ray_logging_level,
        resolve_address,
        show_ray_logs,
        start_failed_line,
        start_local,
        url_host,
    )
    from touchstone_ray.fleet.stream_worker import (
        STREAMS_PER_PROCESS,
        max_stream_workers,
        split_streams,
    )

_MODULE_OF: dict[str, str] = {
    "AgentClient": "agents",
    "ClientSpec": "agents",
    "agent_entries": "agents",
    "agents_on": "agents",
    "start_clients": "agents",
    "client_spec": "client_actor",
    "abort_guard": "abort",
    "StartLane": "actors",
    "actor_ready_timeout_s": "actors",
    "close_actors": "actors",
    "TASK_NAMES_PER_MODEL": "cells",
    "Cell": "cells",
    "STREAMS_PER_PROCESS": "stream_worker",
    "WARMUP_PROMPT": "probe",
    "HostClient": "client_actor",
    "cpu_model": "host_facts",
    "gpu_inventory": "host_facts",
    "host_facts": "host_facts",
    "max_stream_workers": "stream_worker",
    "spawn_client": "client_actor",
    "split_streams": "stream_worker",
    "DEADLINE_SLACK_S": "dispatch",
    "LIVENESS_INTERVAL_S": "dispatch",
    "Call": "dispatch",
    "Dispatcher": "dispatch",
    "Lane": "dispatch",
    "Pinned": "dispatch",
    "call_deadline_s": "dispatch",
    "pin": "dispatch",
    "spawn_pinned": "dispatch",
    "HOST_LABEL": "hosts",
    "NodeInfo": "hosts",
    "current_nodes": "hosts",
    "resolve_hosts": "hosts",
    "PROMETHEUS_CELL_METRICS": "metrics",
    "PROMETHEUS_HOST_METRICS": "metrics",
    "MonitorSet": "monitors",
    "HostClients": "host_clients",
    "HostStart": "host_clients",
    "monitor_name": "monitors",
    "PREFLIGHT_TIMEOUT_S": "preflight",
    "PreflightStart": "preflight",
    "check_hosts": "preflight",
    "preflight_problems": "preflight",
    "preflight_warnings": "preflight",
    "probe_reason": "probe",
    "probe_warning": "probe",
    "run_hosts": "preflight",
    "store_servers": "preflight",
    "PromptCount": "prompts",
    "cell_messages": "prompts",
    "estimate_prompt_tokens": "prompts",
    "fits": "prompts",
    "input_truncated": "prompts",
    "nonce_line": "prompts",
    "dashboard_exposure_warning": "session",
    "ensure_ray": "session",
    "is_loopback": "session",
    "ray_logging_level": "session",
    "resolve_address": "session",
    "show_ray_logs": "session",
    "start_failed_line": "session",
    "start_local": "session",
    "url_host": "session",
}

__all__ = [
    "DEADLINE_SLACK_S",
    "HOST_LABEL",
    "LIVENESS_INTERVAL_S",
    "PREFLIGHT_TIMEOUT_S",
    "PROMETHEUS_CELL_METRICS",
    "PROMETHEUS_HOST_METRICS",
    "STREAMS_PER_PROCESS",
    "TASK_NAMES_PER_MODEL",
    "WARMUP_PROMPT",
    "AgentClient",
    "Call",
    "Cell",
    "ClientSpec",
    "Dispatcher",
    "HostClient",
    "HostClients",
    "HostStart",
    "Lane",
    "MonitorSet",
    "NodeInfo",
    "Pinned",
    "PreflightStart",
    "PromptCount",
    "StartLane",
    "abort_guard",
    "actor_ready_timeout_s",
    "agent_entries",
    "agents_on",
    "call_deadline_s",
    "cell_messages",
    "check_hosts",
    "client_spec",
    "close_actors",
    "cpu_model",
    "current_nodes",
    "dashboard_exposure_warning",
    "ensure_ray",
    "estimate_prompt_tokens",
    "fits",
    "gpu_inventory",
    "host_facts",
    "input_truncated",
    "is_loopback",
    "max_stream_workers",
    "monitor_name",
    "nonce_line",
    "pin",
    "preflight_problems",
    "preflight_warnings",
    "probe_reason",
    "probe_warning",
    "ray_logging_level",
    "resolve_address",
    "resolve_hosts",
    "run_hosts",
    "show_ray_logs",
    "spawn_client",
    "spawn_pinned",
    "split_streams",
    "start_clients",
    "start_failed_line",
    "start_local",
    "store_servers",
    "url_host",
]


def __getattr__(name: str) -> Any:
    """Each public name from its module, imported on first use (PEP 562)."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
