"""LM Studio's server: the OpenAI protocol plus its REST API ``/api/v0``.

Source: LM Studio docs, "LM Studio REST API (beta)": ``GET /api/v0/models`` ->
``{"object": "list", "data": [{"id", "type", "publisher", "arch", "compatibility_type",
"quantization", "state", "max_context_length", "loaded_context_length"?}]}``;
``compatibility_type`` is the runtime format (``gguf``, ``mlx``), ``state`` ``loaded`` or
``not-loaded``. Streams are OpenAI chunks; reasoning models send ``delta.reasoning`` (newer
builds) or ``delta.reasoning_content``, and lines may be ``data:{...}`` without a space (valid
SSE, handled by the framing in :mod:`touchstone_ray.engines._stream`).
"""

from __future__ import annotations

from typing import Any

from touchstone_ray.engines.openai import OpenAIEngine

FACT_KEYS = (
    "arch",
    "quantization",
    "compatibility_type",
    "state",
    "max_context_length",
    "loaded_context_length",
)
"""The ``/api/v0/models`` fields kept in ``bundle.json``."""


class LmStudioEngine(OpenAIEngine):
    """``engine: lmstudio``; ``base_url`` ends in ``/v1``."""

    name = "lmstudio"

    async def probe_server(self) -> tuple[str, str | None]:
        """``("lmstudio", None)``: the REST API has no version endpoint. Raises EngineError."""
        await self._checked_json("GET", self.server_root + "/api/v0/models")
        return "lmstudio", None

    async def _entry(self, model: str) -> dict[str, Any]:
        data = await self._checked_json("GET", self.server_root + "/api/v0/models")
        for item in (data.get("data") if isinstance(data, dict) else None) or []:
            if isinstance(item, dict) and item.get("id") == model:
                return item
        return {}

    async def server_facts(self, model: str) -> dict[str, Any]:
        """:data:`FACT_KEYS` of ``model``'s ``/api/v0/models`` entry (quantisation, runtime
        format, architecture, load state, context lengths in tokens)."""
        entry = await self._entry(model)
        return {key: entry.get(key) for key in FACT_KEYS}

    async def context_limit(self, model: str) -> int | None:
        """``loaded_context_length`` of a loaded model (tokens); ``None`` when not loaded (the
        context is chosen at load time, ``max_context_length`` is only the model's maximum),
        else ``max_model_len`` where ``/v1/models`` lists one."""
        value = (await self._entry(model)).get("loaded_context_length")
        if isinstance(value, int) and value > 0:
            return value
        return await super().context_limit(model)
