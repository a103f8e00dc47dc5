"""The start flow's plans (issue 31, item 1): what a job from the Jobs page runs, checked before
anything starts, and what the hosts preflight job found.

A plan's command comes from :mod:`touchstone_ray.queue.commands`, the one owner of every
command line the UI, the queue and the form's preview run: the form shows
:attr:`StartPlan.line`, the submission runs :attr:`StartPlan.argv`, which are the same command.
An eval's chained judge config is no part of its command: it rides in the eval job's metadata
(:data:`THEN_JUDGE`) and :meth:`touchstone_ray.ui.jobs.Jobs.chain` starts the judge job once
the eval job succeeded.

The served models come from ``touchstone-ray hosts --config C --json`` run as a Ray job (kind
``hosts``, holding no host): the endpoints are reached from the hosts that serve them, never
from the UI's process; :func:`preflight_models` reads the job's last JSON line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from touchstone_ray.bundle import Bundle
from touchstone_ray.config import load_config
from touchstone_ray.errors import TouchstoneError, UsageError
from touchstone_ray.judging.config import load_judge_config
from touchstone_ray.pack import load_pack
from touchstone_ray.queue.commands import (
    PROGRAM,
    command_line,
    eval_command,
    perf_command,
    tools_command,
)

__all__ = [
    "RESUMABLE",
    "THEN_JUDGE",
    "UNPINNED",
    "StartPlan",
    "choices",
    "fleet_hosts",
    "judge_config_files",
    "parse_limit",
    "plan_eval",
    "preflight_models",
    "resume_plan",
    "yaml_files",
]

UNPINNED = "(unpinned)"
"""Host name a model without ``host`` holds (it may run on any node)."""
RESUMABLE = ("crashed", "failed")
"""Bundle states whose result page offers Resume."""
THEN_JUDGE = "touchstone_then_judge"
"""Metadata key of an eval job: the judge config to run on its bundle once it succeeded."""
MAX_FILES = 200
"""Most YAML files the pickers list."""
MAX_DEPTH = 3
"""How many folder levels below ``--runs`` and the packs folder the pickers look."""


@dataclass(frozen=True)
class StartPlan:
    """One job to start: its kind, the ``touchstone-ray`` arguments, the hosts it holds and,
    for an eval, the judge config chained to it."""

    kind: str
    args: list[str]
    """The command's arguments after the program (:mod:`touchstone_ray.queue.commands`)."""
    hosts: tuple[str, ...]
    then_judge: Path | None = None

    @property
    def argv(self) -> list[str]:
        """The whole command, program first (what the job runs)."""
        return [PROGRAM, *self.args]

    @property
    def line(self) -> str:
        """The command as the form shows it (:func:`.commands.command_line`)."""
        return command_line(self.args)


def fleet_hosts(config: Path) -> tuple[str, ...]:
    """The hosts an eval of ``config`` holds: every model's ``host``, :data:`UNPINNED` for
    models without one. Raises :class:`~touchstone_ray.errors.UsageError` for a bad config."""
    fleet = load_config(config)
    return tuple(sorted({m.host or UNPINNED for m in fleet.models}))


def parse_limit(value: str) -> int | None:
    """The form's ``limit`` (prompts per category): empty is ``None`` (every prompt); raises
    :class:`UsageError` for anything but a whole number ≥ 1."""
    text = value.strip()
    if not text:
        return None
    try:
        limit = int(text)
    except ValueError:
        limit = 0
    if limit < 1 or not text.lstrip("+").isdigit():
        raise UsageError(f"limit {text!r}: expected a whole number of prompts ≥ 1")
    return limit


def choices(pack: Path, config: Path) -> dict[str, Any]:
    """The form's choices for ``pack`` and the fleet ``config``: ``{"models": [{"label",
    "id", "host", "engine"}], "variants": [ids]}``. Raises :class:`UsageError` (one line)
    when either does not load."""
    fleet, loaded = load_config(config), load_pack(pack)
    models = [
        {"label": fleet.model_label(m), "id": m.id, "host": m.host_name, "engine": m.engine}
        for m in fleet.models
    ]
    return {"models": models, "variants": [v.id for v in loaded.prompt_variants]}


def _picked(form: dict[str, str], key: str, known: list[str]) -> list[str] | None:
    """The ticked values of ``key`` (comma-separated); ``None`` for all of them."""
    picked = [v for v in form.get(key, "").split(",") if v]
    unknown = [v for v in picked if v not in known]
    if unknown:
        raise UsageError(f"{key}: unknown {', '.join(unknown)}; choose from {', '.join(known)}")
    if not picked:
        if form.get("picked"):
            raise UsageError(f"{key}: tick at least one of {', '.join(known)}")
        return None
    return None if sorted(picked) == sorted(known) else [v for v in known if v in picked]


def plan_eval(path_of: Callable[[str, str], Path], runs: Path, form: dict[str, str]) -> StartPlan:
    """The eval the start form asks for (``pack``, ``config``, ``models``, ``variants``,
    ``picked``, ``limit``, ``judge_config``; ``path_of`` resolves a form path under ``--runs``
    or the packs folder), its bundle going to ``runs``. Every model or variant ticked is the
    same as none named (the command leaves ``--models`` / ``--variants`` out). Raises
    :class:`UsageError` with one line: a path not allowed, a config, pack or judge config
    that does not load, nothing ticked, an unknown choice, a limit that is not ≥ 1."""
    pack = path_of(form.get("pack", ""), "pack")
    config = path_of(form.get("config", ""), "config")
    found = choices(pack, config)
    labels = [m["label"] for m in found["models"]]
    models = _picked(form, "models", labels)
    variants = _picked(form, "variants", found["variants"])
    limit = parse_limit(form.get("limit", ""))
    judge = None
    if form.get("judge_config"):
        judge = path_of(form["judge_config"], "judge config")
        load_judge_config(judge)
    chosen = [m for m in found["models"] if models is None or m["label"] in models]
    fleet = load_config(config)
    pinned = {fleet.model_label(m): m.host for m in fleet.models}
    hosts = tuple(sorted({pinned[m["label"]] or UNPINNED for m in chosen}))
    args = eval_command(pack, config, out=runs, models=models, variants=variants, limit=limit)
    return StartPlan("eval", args, hosts, judge)


def preflight_models(log: str) -> dict[str, Any] | None:
    """What a ``hosts --json`` job printed (its last JSON line): ``{"models": {label:
    {"host", "reachable", "error", "served", "model_served", ...}}, "problems": [lines]}``
    with each host's own error as a problem; ``None`` while it printed none."""
    for line in reversed(log.splitlines()):
        if line.startswith('{"hosts"'):
            try:
                data = json.loads(line)
            except ValueError:
                return None
            models: dict[str, Any] = {}
            for host in data.get("hosts", []):
                for label, entry in (host.get("models") or {}).items():
                    models[label] = {"host": host.get("host"), **entry}
            return {"models": models, "problems": list(data.get("problems", []))}
    return None


def yaml_files(*bases: Path) -> list[Path]:
    """The ``.yaml`` / ``.yml`` files under ``bases`` (``--runs``, the packs folder), sorted,
    at most :data:`MAX_FILES`: the walk never enters a bundle (a folder with a
    ``bundle.json``: its frozen ``pack.yaml`` and ``config.yaml`` are no files to pick, and its
    records are many) or a hidden folder (the trash), and goes :data:`MAX_DEPTH` levels deep."""
    found: set[Path] = set()
    for base in bases:
        for folder, dirs, files in os.walk(base):
            depth = len(Path(folder).relative_to(base).parts)
            if (Path(folder) / "bundle.json").is_file():
                dirs[:] = []
                continue
            dirs[:] = [] if depth >= MAX_DEPTH else [d for d in dirs if not d.startswith(".")]
            found |= {Path(folder) / f for f in files if f.endswith((".yaml", ".yml"))}
    return sorted(found)[:MAX_FILES]


def judge_config_files(*bases: Path) -> list[Path]:
    """The files of :func:`yaml_files` that look like judge configs (a mapping with
    ``judges``); the submission loads the chosen one fully."""
    out = []
    for path in yaml_files(*bases):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, yaml.YAMLError, TouchstoneError):
            continue
        if isinstance(data, dict) and "judges" in data:
            out.append(path)
    return out


def resume_plan(root: Path) -> StartPlan:
    """``eval --resume`` (``perf --resume``, ``tools --resume``) of the bundle ``root`` from
    its frozen pack and config, holding the hosts of that config; an eval keeps the prompts
    its run selected (the manifest's ``selection``: ``--limit`` or ``--prompts``), which a
    bare ``--resume`` would widen to every prompt (a tools run reads its own). Raises
    :class:`UsageError` for a bundle that is neither crashed nor failed (a running one has its
    driver; a done one has nothing left)."""
    bundle = Bundle(root)
    state = bundle.run_state()
    if state not in RESUMABLE:
        raise UsageError(f"{root.name}: {state}; only a crashed or failed run resumes")
    config = bundle.layout.config
    if bundle.kind() == "perf":
        return StartPlan("perf", perf_command(config, resume=root), fleet_hosts(config))
    if bundle.kind() == "tools":  # the run's own --limit / --items come from bundle.json
        args = tools_command(bundle.layout.pack, config, resume=root)
        return StartPlan("tools", args, fleet_hosts(config))
    chosen = bundle.read_manifest().selection or {}
    limit, prompts = chosen.get("limit"), chosen.get("prompts")
    args = eval_command(
        bundle.layout.pack,
        config,
        resume=root,
        limit=int(limit) if limit is not None else None,
        prompts=[str(p) for p in prompts] if prompts else None,
    )
    return StartPlan("eval", args, fleet_hosts(config))
