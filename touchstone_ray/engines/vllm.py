"""vLLM's OpenAI-compatible server: the OpenAI protocol plus the server's own endpoints.

Source: vLLM docs, "OpenAI-Compatible Server" and "Production Metrics":

* ``GET /version`` (server root) -> ``{"version": "0.8.1"}``;
* ``GET /v1/models`` -> ``{"data": [{"id", "max_model_len", ...}]}``: the context limit;
* ``POST /tokenize {"model", "messages"}`` -> ``{"count", "max_model_len", "tokens"}`` (the chat
  template applied);
* ``GET /metrics`` (Prometheus text): the histogram ``vllm:time_to_first_token_seconds``
  (``_sum`` in s, ``_count``; labels ``model_name``) -- read before and after a model's cells,
  its difference is the server's own mean TTFT over them, a cross-check of the client's clock.

Reasoning arrives in ``delta.reasoning_content`` (older vLLM) or ``delta.reasoning`` (newer);
both are parsed by :class:`~touchstone_ray.engines.openai.OpenAIStreamParser`.
"""

from __future__ import annotations

import asyncio
import math
import re
from typing import Any

import aiohttp

from touchstone_ray.engines.openai import OpenAIEngine

TTFT_METRIC = "vllm:time_to_first_token_seconds"
METRICS_TIMEOUT_S = 10.0
"""Deadline of one ``/metrics`` read (s)."""
_SAMPLE_RE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_LABEL_RE = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def histogram_totals(text: str, metric: str, model: str | None = None) -> dict[str, float] | None:
    """``{"count", "sum_s"}`` of Prometheus histogram ``metric`` in exposition ``text``, summed
    over label sets (only those whose ``model_name`` is ``model``, when given and present);
    ``None`` when the metric is absent."""
    count = total = 0.0
    found = False
    for line in text.splitlines():
        match = _SAMPLE_RE.match(line)
        if match is None or not match.group(1).startswith(metric):
            continue
        suffix = match.group(1)[len(metric) :]
        if suffix not in ("_count", "_sum"):
            continue
        labels = dict(_LABEL_RE.findall(match.group(2) or ""))
        if model is not None and labels.get("model_name", model) != model:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        if math.isnan(value):
            continue
        found = True
        if suffix == "_count":
            count += value
        else:
            total += value
    return {"count": count, "sum_s": total} if found else None


def ttft_check(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    """The server-side cross-check of a model's cells from two :meth:`VllmEngine.
    server_metrics` snapshots: ``{metric, requests, server_ttft_mean_s}`` (requests the server
    counted in between, their mean TTFT in s; ``None`` when a snapshot is missing or no request
    was counted, e.g. after a server restart reset the counters)."""
    out: dict[str, Any] = {"metric": TTFT_METRIC, "requests": None, "server_ttft_mean_s": None}
    if not before or not after:
        return out
    count = after["ttft_count"] - before["ttft_count"]
    total = after["ttft_sum_s"] - before["ttft_sum_s"]
    if count > 0 and total >= 0:
        out["requests"] = int(count)
        out["server_ttft_mean_s"] = total / count
    return out


class VllmEngine(OpenAIEngine):
    """``engine: vllm``; ``base_url`` ends in ``/v1``."""

    name = "vllm"
    checks_server_ttft = True

    async def probe_server(self) -> tuple[str, str | None]:
        """``("vllm", version)`` from ``GET /version``. Raises EngineError."""
        data = await self._checked_json("GET", self.server_root + "/version")
        version = data.get("version") if isinstance(data, dict) else None
        return "vllm", str(version) if version else None

    async def server_facts(self, model: str) -> dict[str, Any]:
        """``{version, max_model_len, root}`` (``root``: the weights the model id serves)."""
        card = await self._model_card(model)
        _, version = await self.probe_server()
        return {
            "version": version,
            "max_model_len": card.get("max_model_len"),
            "root": card.get("root"),
        }

    async def count_prompt_tokens(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
    ) -> int | None:
        """``count`` from ``POST /tokenize`` with the chat messages (and ``tools`` when
        given: the chat tokenize request of newer vLLM versions takes them and renders the
        template with them)."""
        request: dict[str, Any] = {"model": model, "messages": messages}
        if tools is not None:
            request["tools"] = tools
        data = await self._checked_json("POST", self.server_root + "/tokenize", request)
        count = data.get("count") if isinstance(data, dict) else None
        return count if isinstance(count, int) else None

    async def server_metrics(self, model: str) -> dict[str, Any] | None:
        """``{"ttft_count", "ttft_sum_s"}`` of :data:`TTFT_METRIC` for ``model`` from
        ``GET /metrics``; ``None`` when the server does not export it."""
        try:
            async with (
                asyncio.timeout(METRICS_TIMEOUT_S),
                self._get_session().get(self.server_root + "/metrics") as resp,
            ):
                status = resp.status
                text = (await resp.read()).decode("utf-8", "replace")
        except (aiohttp.ClientError, TimeoutError):
            return None
        totals = histogram_totals(text, TTFT_METRIC, model) if status == 200 else None
        if totals is None:
            return None
        return {"ttft_count": totals["count"], "ttft_sum_s": totals["sum_s"]}
