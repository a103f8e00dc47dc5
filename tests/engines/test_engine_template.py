"""The chat template an Ollama server shows (``POST /api/show``), read through the engine and
checked (:mod:`touchstone_ray.fleet.template_check`), against the simulator on loopback."""

from __future__ import annotations

from engine_helpers import ReplayServer, run, settings

from touchstone_ray.engines.ollama import OllamaEngine
from touchstone_ray.fleet.preflight import template_warning
from touchstone_ray.fleet.template_check import check_template
from touchstone_ray.sim import SimConfig, SimServer
from touchstone_ray.sim._ollama import SHOW_TEMPLATE


def test_ollamas_template_from_api_show_names_its_family_without_tokenizing() -> None:
    with SimServer(SimConfig()) as sim:
        assert sim.url is not None
        engine = OllamaEngine(settings(sim.url))

        async def go() -> tuple[object, object]:
            try:
                return await engine.chat_template("qwen3:8b"), await check_template(
                    engine, "qwen3:8b"
                )
            finally:
                await engine.aclose()

        shown, check = run(go())
    caps = ["completion", "tools"]
    assert shown == {"source": "/api/show", "template": SHOW_TEMPLATE, "caps": caps}
    assert check is not None
    assert check.families == ["ChatML (Qwen, Yi, llama.cpp's fallback template)"]
    assert check.template_chars == len(SHOW_TEMPLATE) and check.caps == caps
    # Ollama has no tokenizer endpoint: the markers cannot be checked, so no warning
    assert (check.marker_tokens, check.unknown_markers, check.error) == (None, None, None)
    assert template_warning("qwen3:8b", check) is None


def test_a_server_without_api_show_has_no_template_check(replay: ReplayServer) -> None:
    engine = OllamaEngine(settings(replay.url))  # every path answers 404

    async def go() -> object:
        try:
            return await check_template(engine, "m")
        finally:
            await engine.aclose()

    assert run(go()) is None
    assert [s.path for s in replay.seen] == ["/api/show"]


def test_an_unreachable_server_gives_a_check_with_its_error() -> None:
    engine = OllamaEngine(settings("http://127.0.0.1:9", max_attempts=1))

    async def go() -> object:
        try:
            return await check_template(engine, "m")
        finally:
            await engine.aclose()

    check = run(go())
    assert check is not None
    assert check.error == (
        "EngineRefused: cannot reach http://127.0.0.1:9/api/show (ClientConnectorError: Cannot "
        "connect to host 127.0.0.1:9 ssl:default [Connect call failed ('127.0.0.1', 9)])"
    )
    assert check.families == [] and check.source is None
