"""``queue check`` (everything a night needs, before the night) and ``queue status``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from touchstone_ray.config import FleetConfig, load_config
from touchstone_ray.errors import TouchstoneError
from touchstone_ray.queue.spec import QueueSpec, load_queue
from touchstone_ray.queue.state import entries_text, read_states

__all__ = ["check_queue", "print_status"]


def _file_problems(spec: QueueSpec, source: Path) -> tuple[list[str], dict[Path, FleetConfig]]:
    """One line per entry whose pack, config, judge config or selection does not load; the
    configs that do."""
    from touchstone_ray.eval.matrix import plan_models, select_prompts
    from touchstone_ray.judging.config import load_judge_config
    from touchstone_ray.pack import load_pack
    from touchstone_ray.toolpack import load_tools_pack
    from touchstone_ray.tools.run import plan_cells, select_items

    problems: list[str] = []
    configs: dict[Path, FleetConfig] = {}
    for i, entry in enumerate(spec.entries):
        where = f"{source}: entries[{i}] ({entry.name})"
        try:
            config = configs.get(entry.config) or load_config(entry.config)
            configs[entry.config] = config
            if entry.judge_config is not None:
                load_judge_config(entry.judge_config)
            if entry.kind == "tools" and entry.pack is not None:
                tools_pack = load_tools_pack(str(entry.pack))
                items = select_items(tools_pack, entry.limit, None)
                chosen_models = list(entry.models) if entry.models else None
                plan_cells(tools_pack, config, chosen_models, items, set())
            elif entry.pack is not None:
                pack = load_pack(entry.pack)
                chosen = select_prompts(pack, entry.limit)
                models = list(entry.models) if entry.models else None
                variants = list(entry.variants) if entry.variants else None
                plan_models(pack, config, models, variants, chosen)
            elif entry.models:
                labels = {config.model_label(m) for m in config.models}
                ids = {m.id for m in config.models} | labels
                for model in entry.models:
                    if model not in ids:
                        problems.append(f"{where}: models: unknown model {model!r}")
        except TouchstoneError as exc:
            problems.append(f"{where}: {exc}")
    return problems, configs


def check_queue(path: Path, address: str | None, out: TextIO = sys.stdout) -> int:
    """Check the queue at ``path``: every file loads, every host is reached and serves its
    models (the ``hosts`` preflight per config), every ``reset_command`` runs and exits 0 on
    its host. Prints one ``problem:`` line each; returns 2 when there is any, else 0. Raises
    :class:`~touchstone_ray.errors.ConfigError` for a queue file that does not load."""
    from touchstone_ray.fleet import check_hosts
    from touchstone_ray.queue.hosts import HostOps
    from touchstone_ray.queue.runner import entry_hosts

    spec = load_queue(path)
    problems, configs = _file_problems(spec, path)
    used: set[str] = set()
    nodes: dict[str, str] = {}
    for config in configs.values():
        try:
            reports = check_hosts(config, address)
        except TouchstoneError as exc:
            problems.append(f"{path}: {exc}")
            continue
        for report in reports:
            nodes[report.host] = report.node.node_id
            problems += [f"{path}: {p}" for p in report.problems]
    for entry in spec.entries:
        if entry.config in configs:
            used |= entry_hosts(entry)
    ops = HostOps(nodes, lambda line: print(line, file=out))
    for host, settings in spec.hosts.items():
        if host not in used:
            problems.append(f"{path}: hosts.{host}: no entry uses this host")
        elif settings.reset_command is not None and host in nodes:
            problem = ops.reset(host, settings)
            if problem is not None:
                problems.append(f"{path}: hosts.{host}.reset_command: {problem}")
    for problem in problems:
        print(f"problem: {problem}", file=out)
    if problems:
        return 2
    resets = sum(1 for s in spec.hosts.values() if s.reset_command)
    hosts = f"{len(used)} host{'' if len(used) == 1 else 's'}"
    entries = entries_text(len(spec.entries))
    print(f"queue ok: {entries} on {hosts}, reset commands run: {resets}", file=out)
    return 0


def print_status(path: Path, out: TextIO = sys.stdout) -> int:
    """Print each entry's state, duration, bundle and failure line from the queue's log."""
    spec = load_queue(path)
    assert spec.out is not None
    states = read_states(spec.out)
    for entry in spec.entries:
        state = states.get(entry.name)
        if state is None:
            print(f"{entry.name}: pending", file=out)
            continue
        parts = [f"{entry.name}: {state.state}"]
        if state.duration_s is not None:
            parts.append(f"{state.duration_s:.1f} s")
        if state.stages:
            parts.append("stages " + ",".join(state.stages))
        if state.bundle:
            parts.append(state.bundle)
        line = ", ".join(parts)
        print(line + (f" — {state.reason}" if state.reason else ""), file=out)
    return 0
