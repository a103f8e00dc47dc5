"""The simulated engine (SPEC §11): real HTTP on loopback speaking the Ollama and OpenAI chat
protocols, with tunable speed, reasoning, quality and failure injection, deterministic for
(model, messages, seed), and schema-valid judge verdicts.

::

    with SimServer(SimConfig(ttft_ms=50, tps=200)) as sim:
        ollama_url = sim.url            # POST {url}/api/chat
        openai_url = f"{sim.url}/v1"    # POST {url}/v1/chat/completions
"""

from touchstone_ray.sim._config import ReasoningChannel, SimConfig, SimModelKnobs
from touchstone_ray.sim._judge import DEFAULT_VERDICT_SCHEMA, fenced_answer, verdict_json
from touchstone_ray.sim._server import SimServer, build_app, serve_forever
from touchstone_ray.sim._text import quality_marker

__all__ = [
    "DEFAULT_VERDICT_SCHEMA",
    "ReasoningChannel",
    "SimConfig",
    "SimModelKnobs",
    "SimServer",
    "build_app",
    "fenced_answer",
    "quality_marker",
    "serve_forever",
    "verdict_json",
]
