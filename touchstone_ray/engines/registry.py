"""Engines by name, imported lazily (style example 2): ``ollama | openai | llamacpp | vllm |
lmstudio | simulated``. ``llamacpp``, ``vllm`` and ``lmstudio`` are thin subclasses of the
OpenAI engine that also know their server's own endpoints (identity, context limit, tokenizer).

``simulated`` starts a :class:`touchstone_ray.sim.SimServer` on loopback and returns an engine
speaking its OpenAI protocol (or Ollama's, with ``sim: {api: ollama}``) pointed at it, with
``engine_version`` ``"sim"``; the engine's ``aclose()`` stops the server.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from touchstone_ray.engines.base import Engine, EngineSettings
from touchstone_ray.errors import ConfigError

_ENGINES: dict[str, str] = {
    "ollama": "touchstone_ray.engines.ollama:OllamaEngine",
    "openai": "touchstone_ray.engines.openai:OpenAIEngine",
    "llamacpp": "touchstone_ray.engines.llamacpp:LlamaCppEngine",
    "vllm": "touchstone_ray.engines.vllm:VllmEngine",
    "lmstudio": "touchstone_ray.engines.lmstudio:LmStudioEngine",
    "simulated": "touchstone_ray.engines.registry:_simulated",
}
"""kind -> ``module:attribute`` of an Engine class or a factory ``(settings, sim) -> Engine``."""


def known_kinds() -> list[str]:
    """The engine kinds :func:`create_engine` accepts."""
    return sorted(_ENGINES)


def engine_class(kind: str) -> type[Engine]:
    """The Engine class of ``kind`` (for its class attributes such as
    :attr:`~Engine.needs_unload`, without starting anything); ``simulated`` answers for its
    default protocol, OpenAI's. Raises :class:`ConfigError` for an unknown kind."""
    target = _ENGINES.get(kind)
    if target is None:
        raise ConfigError(f"unknown engine {kind!r}; known engines: {', '.join(known_kinds())}")
    if kind == "simulated":
        target = _ENGINES["openai"]
    module_name, _, attr = target.partition(":")
    cls: type[Engine] = getattr(importlib.import_module(module_name), attr)
    return cls


def create_engine(kind: str, settings: EngineSettings, sim: dict[str, Any] | None = None) -> Engine:
    """A new engine of ``kind`` for ``settings`` (``sim``: SimConfig knobs for ``simulated``,
    plus ``api: ollama|openai``). Raises :class:`ConfigError` for an unknown kind (naming the
    known ones) or bad simulator knobs. Call ``await engine.aclose()`` when done."""
    target = _ENGINES.get(kind)
    if target is None:
        raise ConfigError(f"unknown engine {kind!r}; known engines: {', '.join(known_kinds())}")
    module_name, _, attr = target.partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    if kind == "simulated":
        engine: Engine = factory(settings, sim)
    else:
        engine = factory(settings)
    return engine


def _simulated(settings: EngineSettings, sim: dict[str, Any] | None) -> Engine:
    """Start a simulator on loopback and return an engine pointed at it."""
    from pydantic import ValidationError

    from touchstone_ray.sim import SimConfig, SimServer

    knobs = dict(sim or {})
    api = knobs.pop("api", "openai")
    if api not in ("openai", "ollama"):
        raise ConfigError(f"sim.api must be 'openai' or 'ollama', not {api!r}")
    try:
        config = SimConfig(**knobs)
    except ValidationError as exc:
        raise ConfigError(f"invalid sim knobs: {exc}") from exc
    server = SimServer(config)
    base_url = str(server.start()).rstrip("/")
    cls: Callable[..., Engine]
    if api == "ollama":
        from touchstone_ray.engines.ollama import OllamaEngine as cls
    else:
        from touchstone_ray.engines.openai import OpenAIEngine as cls

        base_url += "/v1"
    local = settings.model_copy(update={"base_url": base_url})
    return cls(local, version_label="sim", on_close=server.stop)
