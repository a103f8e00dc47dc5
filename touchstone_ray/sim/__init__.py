"""The simulated engine (SPEC §11): real HTTP on loopback speaking the Ollama and OpenAI chat
protocols, with tunable speed, reasoning, quality and failure injection, deterministic for
(model, messages, seed), schema-valid judge verdicts, and tool calls in each failure shape
(``tool_calls``, ``tool_call_shape``, ``tool_turns``, ``tool_answer``).

::

    with SimServer(SimConfig(ttft_ms=50, tps=200)) as sim:
        ollama_url = sim.url            # POST {url}/api/chat
        openai_url = f"{sim.url}/v1"    # POST {url}/v1/chat/completions
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from touchstone_ray.sim._config import (
    ReasoningChannel,
    SimConfig,
    SimModelKnobs,
    SimToolCall,
    ToolCallShape,
)
from touchstone_ray.sim._judge import DEFAULT_VERDICT_SCHEMA, fenced_answer, verdict_json
from touchstone_ray.sim._text import quality_marker

if TYPE_CHECKING:
    from touchstone_ray.sim._server import SimServer, build_app, serve_forever

_SERVER_NAMES = frozenset({"SimServer", "build_app", "serve_forever"})


def __getattr__(name: str) -> Any:
    """The server parts (and ``aiohttp.web``) load on first use: the config and the
    client actor read :class:`SimConfig` alone."""
    if name in _SERVER_NAMES:
        from touchstone_ray.sim import _server

        return getattr(_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_VERDICT_SCHEMA",
    "ReasoningChannel",
    "SimConfig",
    "SimModelKnobs",
    "SimServer",
    "SimToolCall",
    "ToolCallShape",
    "build_app",
    "fenced_answer",
    "quality_marker",
    "serve_forever",
    "verdict_json",
]
