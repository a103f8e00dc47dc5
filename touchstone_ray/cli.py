"""The ``touchstone-ray`` command line (SPEC §6): a thin layer that parses flags and prints.

Exit codes: 0 success; 1 the run failed or was aborted; 2 invalid usage, pack or config.
A :class:`~touchstone_ray.errors.TouchstoneError` becomes one line on stderr; ``--debug``
shows the traceback instead.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer

from touchstone_ray.errors import TouchstoneError
from touchstone_ray.pack import load_pack

app = typer.Typer(
    name="touchstone-ray",
    help="Distributed evaluation runner for self-hosted LLMs on a Ray cluster.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

_debug = {"on": False}


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    _debug["on"] = debug


@app.command()
def validate(
    packs: Annotated[list[Path], typer.Argument(help="Pack YAML files to check.")],
) -> None:
    """Load and check packs; print `id vN: P prompts, C cells/variant, max M points` each."""
    failed = False
    for path in packs:
        try:
            typer.echo(load_pack(path).summary())
        except TouchstoneError as exc:
            typer.echo(f"error: {exc}", err=True)
            failed = True
    if failed:
        raise typer.Exit(2)


# Commands implemented in other modules are registered here, one line each.
# --- registered commands ---
# --- end registered commands ---


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the exit code."""
    try:
        app(args=argv, prog_name="touchstone-ray")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except TouchstoneError as exc:
        if _debug["on"]:
            traceback.print_exc()
        typer.echo(f"error: {exc}", err=True)
        return exc.exit_code
    except KeyboardInterrupt:
        typer.echo("aborted", err=True)
        return 1
    except Exception as exc:
        if _debug["on"]:
            traceback.print_exc()
        typer.echo(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug)", err=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
