"""The ``touchstone-ray`` command line (SPEC §6): a thin layer that parses flags and prints.

Exit codes: 0 success; 1 the run failed or was aborted; 2 invalid usage, pack or config.
A :class:`~touchstone_ray.errors.TouchstoneError` becomes one line on stderr; ``--debug``
(before the command, or on a command that starts Ray) shows the traceback too, and Ray's own
start-up log lines, which are kept out of the terminal otherwise.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer

from touchstone_ray.errors import PackError, TouchstoneError
from touchstone_ray.pack import pack_from_data
from touchstone_ray.sim_cli import sim_server
from touchstone_ray.yamlio import read_document

app = typer.Typer(
    name="touchstone-ray",
    help="Distributed evaluation runner for self-hosted LLMs on a Ray cluster.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

_debug = {"on": False}

DebugOption = Annotated[
    bool, typer.Option("--debug", help="Show tracebacks for errors and Ray's own log lines.")
]


def _set_debug(debug: bool) -> None:
    """``--debug`` given before the command or on it: tracebacks and Ray's log lines."""
    from touchstone_ray.fleet import show_ray_logs

    _debug["on"] = _debug["on"] or debug
    show_ray_logs(_debug["on"])


@app.callback()
def _root(debug: DebugOption = False) -> None:
    _debug["on"] = False
    _set_debug(debug)


def _pack_summary(path: Path) -> str:
    """The ``validate`` line of one pack: a document with ``kind: tools`` (or
    ``bfcl:<category>``) is a tools pack, anything else a quality pack."""
    from touchstone_ray.toolpack import load_tools_pack, tools_pack_from_data

    if str(path).startswith("bfcl:"):
        return load_tools_pack(str(path)).summary()
    data = read_document(path, "pack", PackError)
    if data.get("kind") == "tools":
        return tools_pack_from_data(data, str(path), path.parent).summary()
    return pack_from_data(data, str(path)).summary()


@app.command()
def validate(
    packs: Annotated[
        list[Path],
        typer.Argument(help="Pack YAML files (quality, or kind: tools) or bfcl:<category>."),
    ],
) -> None:
    """Load and check packs; print `id vN: P prompts, C cells/variant, max M points` for a
    quality pack, `id vN: N items, C cells/model, T tools, K checks` for a tools pack."""
    failed = False
    for path in packs:
        try:
            typer.echo(_pack_summary(path))
        except TouchstoneError as exc:
            typer.echo(f"error: {exc}", err=True)
            failed = True
    if failed:
        raise typer.Exit(2)


FleetConfigOption = Annotated[Path, typer.Option("--config", help="Fleet config YAML.")]
AddressOption = Annotated[
    str | None, typer.Option(help="Ray address: 'auto' or 'ray://head:10001'.")
]
OutOption = Annotated[Path | None, typer.Option(help="Folder for new bundles.")]
ModelsOption = Annotated[str | None, typer.Option(help="Comma-separated model ids.")]


def _ids(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


@app.command("eval")
def eval_command(
    pack: Annotated[Path, typer.Option("--pack", help="Pack YAML.")],
    config: FleetConfigOption,
    address: AddressOption = None,
    out: OutOption = None,
    resume: Annotated[
        Path | None, typer.Option(help="Bundle to resume: re-runs cells without an ok record.")
    ] = None,
    models: ModelsOption = None,
    variants: Annotated[str | None, typer.Option(help="Comma-separated variant ids.")] = None,
    limit: Annotated[
        int | None, typer.Option(help="A quick try: the first N prompts of each category.")
    ] = None,
    prompts: Annotated[
        str | None, typer.Option(help="A quick try: comma-separated prompt ids.")
    ] = None,
    strict_preflight: Annotated[
        bool,
        typer.Option(
            help="Stop a host whose endpoint is unreachable or whose model is not served, and "
            "a model whose warm-up answer shows template_leak, prompt_echo, repetition_loop "
            "or empty, before their cells (--resume runs them later)."
        ),
    ] = False,
    dry_run: Annotated[bool, typer.Option(help="Print the plan and exit.")] = False,
    allow_cut: Annotated[
        bool,
        typer.Option(help="Run cells whose prompt + max_tokens does not fit the context."),
    ] = False,
    debug: DebugOption = False,
) -> None:
    """Run the matrix model × variant × prompt × repeat; print the bundle path last."""
    _set_debug(debug)
    from touchstone_ray.eval.run import EvalOptions, run_eval

    outcome = run_eval(
        EvalOptions(
            pack=pack,
            config=config,
            address=address,
            out=out,
            resume=resume,
            models=_ids(models),
            variants=_ids(variants),
            limit=limit,
            prompts=_ids(prompts),
            strict_preflight=strict_preflight,
            dry_run=dry_run,
            allow_cut=allow_cut,
        )
    )
    raise typer.Exit(outcome.exit_code)


@app.command("tools")
def tools_command(
    pack: Annotated[str, typer.Option("--pack", help="Tools pack YAML, or bfcl:<category>.")],
    config: FleetConfigOption,
    address: AddressOption = None,
    out: OutOption = None,
    resume: Annotated[
        Path | None, typer.Option(help="Tools bundle to resume: runs cells without an ok record.")
    ] = None,
    models: ModelsOption = None,
    items: Annotated[str | None, typer.Option(help="Comma-separated item ids.")] = None,
    limit: Annotated[int | None, typer.Option(help="A quick try: the first N items.")] = None,
    debug: DebugOption = False,
) -> None:
    """Run the tool-calling and code bench (model × item × repeat); print the bundle path last."""
    _set_debug(debug)
    from touchstone_ray.tools.run import ToolsOptions, run_tools

    outcome = run_tools(
        ToolsOptions(
            pack=pack,
            config=config,
            address=address,
            out=out,
            resume=resume,
            models=_ids(models),
            items=_ids(items),
            limit=limit,
        )
    )
    if outcome.bundle is not None:
        from touchstone_ray.report.tools import write_tools_report

        write_tools_report(outcome.bundle)
    raise typer.Exit(outcome.exit_code)


@app.command()
def perf(
    config: FleetConfigOption,
    address: AddressOption = None,
    models: ModelsOption = None,
    contexts: Annotated[str, typer.Option(help="Prompt lengths in tokens: 256,1k,4k.")] = "1k,4k",
    concurrency: Annotated[
        str | None, typer.Option(help="Requests in flight: 1,2,4 (the default).")
    ] = None,
    output_tokens: Annotated[int, typer.Option(help="Completion tokens per request.")] = 128,
    runs: Annotated[int, typer.Option(help="Requests per point after the warm-up.")] = 8,
    slo: Annotated[str | None, typer.Option(help="Targets in s: ttft=0.5,tpot=0.05.")] = None,
    capacity: Annotated[
        bool, typer.Option(help="Search the most users per model and host meeting --slo.")
    ] = False,
    embed: Annotated[
        bool, typer.Option(help="Also measure embeddings (/v1/embeddings, Ollama /api/embed).")
    ] = False,
    embed_chunks: Annotated[int, typer.Option(help="--embed: chunks per model.")] = 64,
    embed_tokens: Annotated[int, typer.Option(help="--embed: ~tokens per chunk.")] = 256,
    embed_batch: Annotated[int, typer.Option(help="--embed: chunks per request.")] = 8,
    out: OutOption = None,
    resume: Annotated[
        Path | None, typer.Option(help="Perf bundle to resume: reuses complete points.")
    ] = None,
    lockstep: Annotated[
        bool,
        typer.Option(help="Send each point's requests in rounds of --concurrency, together."),
    ] = False,
    rate: Annotated[
        str | None,
        typer.Option(help="Open loop: offered rates in requests/s per model and host: 2,5,10."),
    ] = None,
    arrival: Annotated[
        str, typer.Option(help="Open loop: arrivals 'constant' or 'poisson' (seeded).")
    ] = "constant",
    duration: Annotated[
        float | None, typer.Option(help="Open loop: s of arrivals per rate (default 30).")
    ] = None,
    requests: Annotated[
        int | None, typer.Option(help="Open loop: requests per rate instead of --duration.")
    ] = None,
    max_in_flight: Annotated[
        int, typer.Option(help="Open loop: beyond this many out a due request is dropped.")
    ] = 256,
    seed: Annotated[int, typer.Option(help="Open loop: seed of the Poisson arrivals.")] = 0,
    sweep: Annotated[
        bool,
        typer.Option(
            help="Closed loop at c=1 and the highest --concurrency, then rates between: "
            "the highest sustainable rate under --slo."
        ),
    ] = False,
    sweep_points: Annotated[int, typer.Option(help="--sweep: open-loop rates (≥ 2).")] = 6,
    debug: DebugOption = False,
) -> None:
    """Speed benchmark per model and host (SPEC §7b); print the bundle path last."""
    _set_debug(debug)
    from touchstone_ray.perf.plan import parse_rates, parse_slo, parse_tokens
    from touchstone_ray.perf.run import PerfOptions, run_perf

    outcome = run_perf(
        PerfOptions(
            config=config,
            address=address,
            models=_ids(models),
            contexts=parse_tokens(contexts, "--contexts"),
            concurrency=parse_tokens(concurrency or "1,2,4", "--concurrency"),
            output_tokens=output_tokens,
            runs=runs,
            slo=parse_slo(slo),
            capacity=capacity,
            embed=embed,
            embed_chunks=embed_chunks,
            embed_tokens=embed_tokens,
            embed_batch=embed_batch,
            out=out,
            resume=resume,
            lockstep=lockstep,
            rates=parse_rates(rate) if rate is not None else None,
            arrival=arrival,
            duration_s=duration,
            requests=requests,
            max_in_flight=max_in_flight,
            seed=seed,
            sweep=sweep,
            sweep_points=sweep_points,
            concurrency_given=concurrency is not None,
        )
    )
    raise typer.Exit(outcome.exit_code)


@app.command()
def hosts(
    config: FleetConfigOption,
    address: AddressOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="The reports as one JSON line, for programs.")
    ] = False,
    debug: DebugOption = False,
) -> None:
    """Preflight: every host's node, endpoints reached from that host, served models, GPU, PSI.

    Exit 1 if an endpoint is unreachable or a configured model is not served.
    """
    _set_debug(debug)
    from touchstone_ray.fleet import run_hosts

    raise typer.Exit(run_hosts(config, address, as_json=as_json))


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="Folder for the demo's bundle and configs.")] = Path(
        "runs/demo"
    ),
    quick: Annotated[
        bool, typer.Option(help="One model per host and one variant (about a third).")
    ] = False,
    debug: DebugOption = False,
) -> None:
    """The whole pipeline on a local simulated fleet of 3 nodes: eval → judge → report."""
    _set_debug(debug)
    from touchstone_ray.demo import run_demo

    raise typer.Exit(run_demo(out, quick=quick))


@app.command()
def judge(
    bundle: Annotated[Path, typer.Option("--bundle", help="Bundle folder to judge.")],
    judge_config: Annotated[Path, typer.Option("--judge-config", help="Judge config YAML.")],
    address: AddressOption = None,
    judges: Annotated[str | None, typer.Option(help="Comma-separated judge ids.")] = None,
    repeats: Annotated[
        int, typer.Option(help="Verdicts per answer and judge (median score, majority flag).")
    ] = 1,
    allow_unqualified: Annotated[
        bool, typer.Option(help="Count judges that failed calibration in the scorecard.")
    ] = False,
    template: Annotated[
        str,
        typer.Option(
            help="Holistic template: v2 (hardened, default) or v1 (the first, for an A/B)."
        ),
    ] = "v2",
    judge_model: Annotated[
        str | None,
        typer.Option(help="Model of the one chosen judge for this run (part of the cache key)."),
    ] = None,
    debug: DebugOption = False,
) -> None:
    """Judge, score and write the scorecard; resumable. Prints the scorecard path last.

    Each judge first scores the pack's calibration answers; one that fails them is stored but
    not counted (exit 1 when none is left) unless --allow-unqualified. --template v1 asks the
    holistic reports with the first template (v2, the default, is the hardened one); switching
    re-asks every holistic report and no answer.
    """
    _set_debug(debug)
    from touchstone_ray.judging.runner import run_judge

    raise typer.Exit(
        run_judge(
            bundle,
            judge_config,
            address=address,
            judges=_ids(judges),
            repeats=repeats,
            allow_unqualified=allow_unqualified,
            template=template,
            judge_model=judge_model,
        )
    )


@app.command()
def scorecard(
    bundle: Annotated[Path, typer.Option("--bundle", help="Judged bundle folder.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print scorecard.json.")] = False,
) -> None:
    """Print the ranking table of a judged bundle (exit 2 if it has no scorecard yet)."""
    import json

    from touchstone_ray.scoring.render import ranking_table
    from touchstone_ray.scoring.scorecard import load_scorecard

    card = load_scorecard(bundle)
    if as_json:  # the fields the file has, in their order
        data = card.model_dump(mode="json", exclude_unset=True)
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        typer.echo(ranking_table(card))


@app.command()
def report(
    bundle: Annotated[Path | None, typer.Option("--bundle", help="Bundle folder.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="Comma-separated: md, html.")] = "md,html",
    unjudged: Annotated[
        bool,
        typer.Option(help="No judgements: a rating task for a person or an outside AI."),
    ] = False,
    critique: Annotated[
        bool,
        typer.Option(
            help="Part B of the rating task: the local judges' rationales to critique, with "
            "an empty reply template (critique-reply.yaml)."
        ),
    ] = False,
    runs: Annotated[
        Path | None,
        typer.Option(
            "--runs", help="Rebuild every report below this folder (instead of --bundle)."
        ),
    ] = None,
) -> None:
    """Write report.md and report.html into the bundle (--unjudged: rating-task.md and
    rating-task.html instead, report.md stays; --critique: critique-task.md/.html and
    critique-reply.yaml; --runs DIR: every report below DIR, one line per bundle). A perf
    bundle gets its perf report, a tools bundle summary.json and its tools report.

    The rating task replaces every judgement with instructions, the formula, both knock-out
    checks and a fill-in table per model × variant, for a person or an outside AI (part A);
    its part B lists every rationale of the local judges with four rubric questions. `ingest`
    reads the filled replies back and writes judge_quality.md.
    """
    from touchstone_ray.errors import UsageError
    from touchstone_ray.perf.report import is_perf_bundle, write_perf_report
    from touchstone_ray.report import parse_formats, write_report

    formats = parse_formats(fmt)
    if (bundle is None) == (runs is None):
        raise UsageError("report: give exactly one of --bundle and --runs")
    if runs is not None:
        if unjudged or critique:
            raise UsageError("--runs: rebuilds the reports as they are; no --unjudged/--critique")
        from touchstone_ray.report.rebuild import rebuild_reports

        failed = False
        for line in rebuild_reports(runs, formats):
            typer.echo(str(line))
            failed = failed or line.error is not None
        raise typer.Exit(1 if failed else 0)
    assert bundle is not None
    if critique:
        from touchstone_ray.report.critique import write_critique

        for path in write_critique(bundle, formats):
            typer.echo(str(path))
        return
    if is_perf_bundle(bundle):
        for path in write_perf_report(bundle, formats):
            typer.echo(str(path))
        return
    from touchstone_ray.scoring.tools import is_tools_bundle

    if is_tools_bundle(bundle):
        if unjudged:
            raise UsageError("--unjudged: a tools bundle has no judgements; leave it out")
        from touchstone_ray.report.tools import write_tools_report

        for path in write_tools_report(bundle, formats):
            typer.echo(str(path))
        return
    for path in write_report(bundle, fmt, unjudged=unjudged):
        typer.echo(str(path))


@app.command()
def ingest(
    bundle: Annotated[Path, typer.Option("--bundle", help="Bundle folder.")],
    reply: Annotated[Path, typer.Option("--reply", help="The filled rating task (YAML).")],
    name: Annotated[str, typer.Option("--as", help="Judge name to store it under.")],
) -> None:
    """Store a filled rating task (a person or an outside AI) as judge NAME (holistic reports
    only) and print its agreement with each local judge of the scorecard. A reply with part B
    (critique) also writes judge_quality.md: the four rubric rates per judge."""
    from touchstone_ray.report.critique import write_judge_quality
    from touchstone_ray.scoring.ingest import agreement_json, ingest_reply

    result = ingest_reply(bundle, reply, name)
    typer.echo(f"ingested {result['rows']} rated rows as {name}")
    if "critiqued" in result:
        typer.echo(f"ingested {result['critiqued']} critiqued rationales as {name}")
        path = write_judge_quality(bundle)
        if path is not None:
            typer.echo(str(path))
    if result["agreement"]:
        typer.echo(agreement_json(result["agreement"]))


@app.command()
def compare(
    bundles: Annotated[list[Path], typer.Argument(help="Bundle folders to compare.")],
    out: Annotated[Path | None, typer.Option(help="Folder for compare.md and compare.csv.")] = None,
) -> None:
    """One table across bundles: hardware × quality."""
    from touchstone_ray.report.compare import compare_bundles

    text, written = compare_bundles(bundles, out)
    typer.echo(text)
    for path in written:
        typer.echo(str(path))


@app.command("tools-compare")
def tools_compare(
    a: Annotated[Path, typer.Argument(help="Tools bundle A.")],
    b: Annotated[Path, typer.Argument(help="Tools bundle B (the same checks).")],
    out: Annotated[
        Path | None, typer.Option(help="Folder for tools-compare.md and tools-compare.json.")
    ] = None,
) -> None:
    """Pair two tools bundles by item and repeat: discordant cells and an exact McNemar p per
    model (exit 2 when their checks differ or a folder is not a tools bundle)."""
    from touchstone_ray.report.tools_compare import tools_compare as compare_tools

    text, written = compare_tools(a, b, out)
    typer.echo(text)
    for path in written:
        typer.echo(str(path))


@app.command()
def export(
    bundle: Annotated[Path, typer.Option("--bundle", help="Bundle folder.")],
    fmt: Annotated[str, typer.Option("--format", help="csv | parquet | jsonl.")] = "csv",
) -> None:
    """Flat tables responses.<ext> and verdicts.<ext> into the bundle's export/ folder."""
    from touchstone_ray.report.export import export_bundle

    for path in export_bundle(bundle, fmt):
        typer.echo(str(path))


# Commands implemented in other modules are registered here, one line each.
# --- registered commands ---
app.command("sim-server")(sim_server)
# --- end registered commands ---


queue_app = typer.Typer(
    help="A night of runs, unattended: entries chained eval → judge → report.",
    no_args_is_help=True,
)
app.add_typer(queue_app, name="queue")
QueueFileArgument = Annotated[Path, typer.Argument(help="Queue YAML.")]


@queue_app.command("run")
def queue_run(
    queue: QueueFileArgument, address: AddressOption = None, debug: DebugOption = False
) -> None:
    """Run every entry not done yet (a rerun resumes); exit 1 unless all end done."""
    _set_debug(debug)
    from touchstone_ray.queue import run_queue

    raise typer.Exit(run_queue(queue, address))


@queue_app.command("check")
def queue_check(
    queue: QueueFileArgument, address: AddressOption = None, debug: DebugOption = False
) -> None:
    """Before the night: files, hosts, models and reset commands; exit 2 on any problem."""
    _set_debug(debug)
    from touchstone_ray.queue.check import check_queue

    raise typer.Exit(check_queue(queue, address))


@queue_app.command("status")
def queue_status(queue: QueueFileArgument) -> None:
    """Each entry's state, duration, bundle and failure line."""
    from touchstone_ray.queue.check import print_status

    raise typer.Exit(print_status(queue))


@app.command()
def agents(
    action: Annotated[str, typer.Argument(help="up | status | down")],
    address: AddressOption = None,
    debug: DebugOption = False,
) -> None:
    """The host agents of a standing cluster: up (one per node, runs reuse them), status
    (each host's agent, version, uptime, the run it serves), down (none left)."""
    _set_debug(debug)
    from touchstone_ray.fleet.agent_admin import run_agents

    raise typer.Exit(run_agents(action, address))


@app.command()
def ui(
    runs: Annotated[Path, typer.Option(help="Folder searched (recursively) for bundles.")] = Path(
        "runs"
    ),
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
    address: Annotated[
        str | None,
        typer.Option(
            help="Dashboard address of the cluster that runs jobs (http://head:8265 or auto); "
            "without it the first job starts a local Ray head."
        ),
    ] = None,
    host: Annotated[
        str, typer.Option(help="Address to bind; anything but loopback needs --token.")
    ] = "127.0.0.1",
    token: Annotated[
        str | None,
        typer.Option(envvar="TOUCHSTONE_UI_TOKEN", help="Token every request must carry."),
    ] = None,
    packs: Annotated[Path, typer.Option(help="Folder of pack files to list.")] = Path("packs"),
    lang: Annotated[
        str,
        typer.Option(
            help="Language (de or en) of the pages that show no pack's bundle; a bundle's "
            "pages speak its pack's language."
        ),
    ] = "en",
) -> None:
    """Local web control centre over the bundles under --runs (binds 127.0.0.1)."""
    from touchstone_ray.ui import UiSettings, serve

    settings = UiSettings(
        runs=runs, packs=packs, host=host, port=port, token=token, address=address, lang=lang
    )
    serve(settings)


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the exit code. Run as the console script
    (``argv`` None), SIGTERM and the loss of the Ray cluster a command joined end it in time
    (:mod:`touchstone_ray.fleet.lifeline`); a caller that passes ``argv`` (a test, a program
    embedding the CLI) keeps its own signal handling."""
    from touchstone_ray.fleet import lifeline

    if argv is None:
        lifeline.install()
    return lifeline.leave(_main(argv))


def _main(argv: list[str] | None) -> int:
    from touchstone_ray.fleet.lifeline import gone_line

    try:
        app(args=argv, prog_name="touchstone-ray")
    except SystemExit as exc:
        if (gone := gone_line()) is not None:  # Ray's SIGTERM handler ran, not abort_guard's
            typer.echo(f"error: {gone}", err=True)
            return 1
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
