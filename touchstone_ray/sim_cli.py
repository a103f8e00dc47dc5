"""``touchstone-ray sim-server``: run the simulated engine (SPEC §11) in the foreground.

The main CLI registers :func:`sim_server` as a command; this module only parses flags, builds a
:class:`~touchstone_ray.sim.SimConfig` and calls :func:`~touchstone_ray.sim.serve_forever`.
"""

from __future__ import annotations

import ipaddress
import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from pydantic import ValidationError

from touchstone_ray.sim import SimConfig


class Api(StrEnum):
    """Which base URL the startup line shows (both protocols are always served)."""

    ollama = "ollama"
    openai = "openai"


def _h(name: str) -> str:
    """Help text of a knob: the SimConfig field docstring (unit and default)."""
    return " ".join((SimConfig.model_fields[name].description or name).replace("``", "").split())


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _load_file(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise typer.BadParameter(f"cannot read {path}: {exc}", param_hint="--config") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise typer.BadParameter(f"{path} is not a mapping", param_hint="--config")
    return data


def _json_flag(value: str | None, flag: str) -> Any:
    """A flag given as JSON text, parsed (``None`` when not given)."""
    if value is None:
        return None
    try:
        return json.loads(value)
    except ValueError as exc:
        raise typer.BadParameter(f"not JSON: {value!r}", param_hint=flag) from exc


def sim_server(
    api: Annotated[
        Api, typer.Option(help="Protocol whose base URL is printed (both are served).")
    ] = Api.ollama,
    port: Annotated[int, typer.Option(help="TCP port to listen on.")] = 11435,
    host: Annotated[
        str, typer.Option(help="Interface to bind; anything but loopback is warned about.")
    ] = "127.0.0.1",
    models: Annotated[
        str | None, typer.Option(help="Comma-separated served model names (default: any).")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="YAML/JSON file with SimConfig knobs (incl. model_overrides); flags win.",
        ),
    ] = None,
    ttft_ms: Annotated[float | None, typer.Option(help=_h("ttft_ms"))] = None,
    tps: Annotated[float | None, typer.Option(help=_h("tps"))] = None,
    answer_tokens: Annotated[int | None, typer.Option(help=_h("answer_tokens"))] = None,
    reasoning_share: Annotated[float | None, typer.Option(help=_h("reasoning_share"))] = None,
    reasoning_channel: Annotated[str | None, typer.Option(help=_h("reasoning_channel"))] = None,
    slots: Annotated[int | None, typer.Option(help=_h("slots"))] = None,
    batch_slowdown: Annotated[float | None, typer.Option(help=_h("batch_slowdown"))] = None,
    embed_tps: Annotated[float | None, typer.Option(help=_h("embed_tps"))] = None,
    fail_rate: Annotated[float | None, typer.Option(help=_h("fail_rate"))] = None,
    fail_first_n: Annotated[int | None, typer.Option(help=_h("fail_first_n"))] = None,
    load_s: Annotated[float | None, typer.Option(help=_h("load_s"))] = None,
    stall_rate: Annotated[float | None, typer.Option(help=_h("stall_rate"))] = None,
    disconnect_rate: Annotated[float | None, typer.Option(help=_h("disconnect_rate"))] = None,
    error_event_rate: Annotated[float | None, typer.Option(help=_h("error_event_rate"))] = None,
    garbage_rate: Annotated[float | None, typer.Option(help=_h("garbage_rate"))] = None,
    comment_rate: Annotated[float | None, typer.Option(help=_h("comment_rate"))] = None,
    quality: Annotated[float | None, typer.Option(help=_h("quality"))] = None,
    echo_prompt: Annotated[str | None, typer.Option(help=_h("echo_prompt"))] = None,
    leak_markers: Annotated[str | None, typer.Option(help=_h("leak_markers"))] = None,
    loop_period: Annotated[int | None, typer.Option(help=_h("loop_period"))] = None,
    endless_reasoning: Annotated[bool | None, typer.Option(help=_h("endless_reasoning"))] = None,
    tool_calls: Annotated[
        str | None, typer.Option(help=_h("tool_calls") + " As JSON: [{name, arguments}].")
    ] = None,
    tool_call_shape: Annotated[str | None, typer.Option(help=_h("tool_call_shape"))] = None,
    tool_turns: Annotated[int | None, typer.Option(help=_h("tool_turns"))] = None,
    tool_answer: Annotated[str | None, typer.Option(help=_h("tool_answer"))] = None,
    judge_constant_score: Annotated[
        int | None, typer.Option(help=_h("judge_constant_score"))
    ] = None,
    context_length: Annotated[int | None, typer.Option(help=_h("context_length"))] = None,
    default_num_ctx: Annotated[int | None, typer.Option(help=_h("default_num_ctx"))] = None,
    seed: Annotated[int | None, typer.Option(help=_h("seed"))] = None,
    trace_limit: Annotated[int | None, typer.Option(help=_h("trace_limit"))] = None,
) -> None:
    """Serve a simulated Ollama and OpenAI-compatible model server until Ctrl-C.

    Ollama /api/chat and OpenAI /v1/chat/completions on one port; prints one line with the
    base URL.
    """
    knobs: dict[str, Any] = _load_file(config) if config is not None else {}
    flags = {
        "ttft_ms": ttft_ms,
        "tps": tps,
        "slots": slots,
        "batch_slowdown": batch_slowdown,
        "embed_tps": embed_tps,
        "answer_tokens": answer_tokens,
        "reasoning_share": reasoning_share,
        "reasoning_channel": reasoning_channel,
        "fail_rate": fail_rate,
        "fail_first_n": fail_first_n,
        "load_s": load_s,
        "stall_rate": stall_rate,
        "disconnect_rate": disconnect_rate,
        "error_event_rate": error_event_rate,
        "garbage_rate": garbage_rate,
        "comment_rate": comment_rate,
        "quality": quality,
        "echo_prompt": echo_prompt,
        "leak_markers": leak_markers,
        "loop_period": loop_period,
        "endless_reasoning": endless_reasoning,
        "tool_calls": _json_flag(tool_calls, "--tool-calls"),
        "tool_call_shape": tool_call_shape,
        "tool_turns": tool_turns,
        "tool_answer": tool_answer,
        "judge_constant_score": judge_constant_score,
        "context_length": context_length,
        "default_num_ctx": default_num_ctx,
        "seed": seed,
        "trace_limit": trace_limit,
    }
    knobs.update({k: v for k, v in flags.items() if v is not None})
    if models is not None:
        knobs["models"] = [m.strip() for m in models.split(",") if m.strip()]
    try:
        sim_config = SimConfig.model_validate(knobs)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "config"
        raise typer.BadParameter(f"{where}: {err['msg']} (got {err.get('input')!r})") from exc
    if not _is_loopback(host):
        typer.echo(f"warning: binding {host} exposes the simulator beyond this machine", err=True)

    def _ready(url: str) -> None:
        shown = f"{url}/v1" if api is Api.openai else url
        served = ",".join(sim_config.models) or "any"
        typer.echo(f"simulated {api.value} server on {shown} (models: {served}); Ctrl-C stops")

    from touchstone_ray.sim import serve_forever  # aiohttp.web: not for every CLI start

    try:
        serve_forever(sim_config, host=host, port=port, on_ready=_ready)
    except OSError as exc:
        typer.echo(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
        raise typer.Exit(1) from exc
