"""The one owner of every ``touchstone-ray`` command line that something else starts: the
queue's stages (:mod:`.runner`) and the web UI's jobs (its start form shows the exact command
it will submit, built here too).

Each function returns the arguments after the program name, in one fixed order (the options
of SPEC §6, optional ones only when set): ``eval --pack P --config C [--address A] --out DIR |
--resume BUNDLE [--models ids] [--variants ids] [--limit N] [--prompts ids]``, ``perf
--config C [--address A] --out DIR | --resume BUNDLE [--models ids]``, ``tools --pack P --config C
[--address A] --out DIR | --resume BUNDLE [--models ids] [--limit N]``, ``judge --bundle B
--judge-config J [--address A]``, ``report --bundle B [--unjudged]``, ``hosts --config C
[--address A] --json``.
:func:`command_line` is the shell form of the whole command (``shlex.join``), as shown.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "PROGRAM",
    "command_line",
    "eval_command",
    "hosts_command",
    "judge_command",
    "perf_command",
    "report_command",
    "tools_command",
]

PROGRAM = "touchstone-ray"
"""The console script every command runs."""


def _target(out: Path | None, resume: Path | None) -> list[str]:
    if (out is None) == (resume is None):
        raise ValueError("give exactly one of out and resume")
    return ["--resume", str(resume)] if resume is not None else ["--out", str(out)]


def _at(address: str | None) -> list[str]:
    return ["--address", address] if address else []


def eval_command(
    pack: Path,
    config: Path,
    *,
    out: Path | None = None,
    resume: Path | None = None,
    address: str | None = None,
    models: Sequence[str] | None = None,
    variants: Sequence[str] | None = None,
    limit: int | None = None,
    prompts: Sequence[str] | None = None,
) -> list[str]:
    """``eval`` of ``pack`` on the fleet of ``config`` into ``out`` (a new bundle) or resuming
    the bundle ``resume`` (exactly one of them); ``models`` (labels), ``variants`` (ids),
    ``limit`` (prompts per category) and ``prompts`` (ids) only when given (``None`` or empty:
    all)."""
    args = ["eval", "--pack", str(pack), "--config", str(config), *_at(address)]
    args += _target(out, resume)
    if models:
        args += ["--models", ",".join(models)]
    if variants:
        args += ["--variants", ",".join(variants)]
    if limit is not None:
        args += ["--limit", str(limit)]
    if prompts:
        args += ["--prompts", ",".join(prompts)]
    return args


def perf_command(
    config: Path,
    *,
    out: Path | None = None,
    resume: Path | None = None,
    address: str | None = None,
    models: Sequence[str] | None = None,
) -> list[str]:
    """``perf`` of the fleet of ``config`` into ``out`` or resuming ``resume`` (exactly one),
    ``models`` only when given."""
    args = ["perf", "--config", str(config), *_at(address), *_target(out, resume)]
    if models:
        args += ["--models", ",".join(models)]
    return args


def tools_command(
    pack: Path | str,
    config: Path,
    *,
    out: Path | None = None,
    resume: Path | None = None,
    address: str | None = None,
    models: Sequence[str] | None = None,
    limit: int | None = None,
) -> list[str]:
    """``tools`` of ``pack`` (a YAML path or ``bfcl:<category>``) on the fleet of ``config``
    into ``out`` or resuming ``resume`` (exactly one); ``models`` and ``limit`` (the first N
    items) only when given."""
    args = ["tools", "--pack", str(pack), "--config", str(config), *_at(address)]
    args += _target(out, resume)
    if models:
        args += ["--models", ",".join(models)]
    if limit is not None:
        args += ["--limit", str(limit)]
    return args


def judge_command(bundle: Path, judge_config: Path, *, address: str | None = None) -> list[str]:
    """``judge`` of the bundle ``bundle`` with the judges of ``judge_config``."""
    return ["judge", "--bundle", str(bundle), "--judge-config", str(judge_config), *_at(address)]


def report_command(bundle: Path, *, unjudged: bool = False) -> list[str]:
    """``report`` of ``bundle``; ``unjudged``: the rating task instead (``--unjudged``)."""
    return ["report", "--bundle", str(bundle), *(["--unjudged"] if unjudged else [])]


def hosts_command(config: Path, *, address: str | None = None) -> list[str]:
    """``hosts`` (the preflight) of the fleet of ``config``, its reports as one JSON line
    (``--json``)."""
    return ["hosts", "--config", str(config), *_at(address), "--json"]


def command_line(args: Sequence[str]) -> str:
    """The whole command, program first, as a shell would take it (``shlex.join``)."""
    return shlex.join([PROGRAM, *args])
