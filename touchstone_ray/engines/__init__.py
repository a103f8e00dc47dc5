"""Streaming chat clients for Ollama and OpenAI-compatible servers, timed exactly (SPEC §9).

``create_engine(kind, settings)`` -> :class:`Engine`; ``await engine.chat(ChatRequest(...))``
-> :class:`ChatResult` (never raises for a failed request).
"""

from touchstone_ray.engines.base import ChatRequest, ChatResult, Engine, EngineSettings
from touchstone_ray.engines.normalize import StreamNormalizer
from touchstone_ray.engines.registry import create_engine, engine_class, known_kinds

__all__ = [
    "ChatRequest",
    "ChatResult",
    "Engine",
    "EngineSettings",
    "StreamNormalizer",
    "create_engine",
    "engine_class",
    "known_kinds",
]
