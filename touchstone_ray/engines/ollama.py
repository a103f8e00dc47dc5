"""Ollama's native chat API: ``POST /api/chat`` streaming NDJSON.

Protocol source: Ollama API docs (``docs/api.md``, "Generate a chat completion"). Each line is
``{"model", "created_at", "message": {"role", "content", "thinking"?}, "done": false}``; the last
line has ``"done": true`` with ``done_reason`` (``stop``, ``length``, ``load``, ``unload``),
``prompt_eval_count``, ``eval_count`` (completion tokens, thinking included) and durations in
nanoseconds (``load_duration``). An ``{"error": "..."}`` line is a protocol error. Sampling goes
in ``options`` (``temperature``, ``seed``, ``num_predict``, ``num_ctx``, …); ``think``,
``keep_alive`` and ``format`` (a JSON schema) are top-level. ``GET /api/version``,
``/api/tags`` (available models), ``/api/ps`` (loaded models) and ``POST /api/show {"model"}``
(``template``: the model's chat template, a Go template; ``capabilities``) give the metadata;
a chat with ``messages: []`` and ``keep_alive: 0`` unloads a model.

Tools ("Chat request (with tools)"): ``tools`` in the body in OpenAI's shape; calls come whole
in ``message.tool_calls`` (``{"function": {"name", "arguments": {…}}}``, arguments an object,
no ``id`` in older versions), and the turn ends ``done_reason: "stop"``. History is
OpenAI-shaped in :class:`ChatRequest` and translated here
(:func:`~touchstone_ray.engines._tools.ollama_messages`): call arguments as objects, tool
results with ``tool_name``, reasoning as ``thinking``. Ollama has no ``tool_choice``: it is
not sent. A model whose template takes no tools lacks ``tools`` in ``/api/show``
``capabilities`` (:meth:`OllamaEngine.tool_support`).
"""

from __future__ import annotations

import copy
from typing import Any

from touchstone_ray.engines._stream import (
    StreamParser,
    error_text,
    incomplete,
    int_or_none,
    load_object,
    text_or_none,
)
from touchstone_ray.engines._tools import ollama_messages, tool_names
from touchstone_ray.engines.base import ChatRequest, Engine
from touchstone_ray.errors import EngineHTTPError, StreamProtocolError, one_line


def ollama_timings(done: dict[str, Any]) -> dict[str, float | int | None] | None:
    """Ollama's ``done`` line counts and durations in the ``server_timings`` shape:
    ``prompt_n`` = ``prompt_eval_count``, ``prompt_ms`` = ``prompt_eval_duration`` (ns) / 1e6,
    ``predicted_n`` = ``eval_count``, ``predicted_ms`` = ``eval_duration`` / 1e6; ``cache_n``
    ``None`` (Ollama does not say how much of the prompt came from its cache). ``None`` when the
    line carries none of them."""

    def ms(key: str) -> float | None:
        value = done.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value / 1e6
        return None

    timings: dict[str, float | int | None] = {
        "prompt_n": int_or_none(done.get("prompt_eval_count")),
        "prompt_ms": ms("prompt_eval_duration"),
        "predicted_n": int_or_none(done.get("eval_count")),
        "predicted_ms": ms("eval_duration"),
        "cache_n": None,
    }
    return timings if any(v is not None for v in timings.values()) else None


class OllamaStreamParser(StreamParser):
    """NDJSON chat lines -> normalizer events; ``done: true`` ends the stream."""

    framing = "ndjson"

    def on_payload(self, t: float, payload: bytes) -> None:
        """Parse one line; raises StreamProtocolError on an error line or garbage."""
        obj = load_object(payload)
        if obj.get("error") is not None:
            raise StreamProtocolError(f"error event in stream: {error_text(obj['error'])}")
        message = obj.get("message") or {}
        if not isinstance(message, dict):
            raise StreamProtocolError("line 'message' is not an object")
        self.norm.delta(
            t,
            text_or_none(message.get("content")),
            text_or_none(message.get("thinking")),
            "thinking",
            message.get("tool_calls"),
            whole_calls=True,
        )
        if obj.get("done") is True:
            load_ns = obj.get("load_duration")
            reason = obj.get("done_reason")
            self.norm.finish(
                finish_reason=str(reason) if reason is not None else None,
                prompt_tokens=int_or_none(obj.get("prompt_eval_count")),
                completion_tokens=int_or_none(obj.get("eval_count")),
                load_duration_s=load_ns / 1e9 if isinstance(load_ns, int | float) else None,
                server_timings=ollama_timings(obj),
            )
            self.mark_done(t)

    def check_complete(self) -> None:
        """The body must have carried a ``done: true`` line."""
        if not self.done:
            raise incomplete("stream ended before a done:true line")


class OllamaEngine(Engine):
    """Ollama ``POST {base_url}/api/chat``; ``base_url`` is the server root."""

    name = "ollama"
    parser_cls = OllamaStreamParser
    chat_path = "/api/chat"
    embed_path = "/api/embed"
    needs_unload = True
    sends_context = True

    @classmethod
    def without_thinking(cls, extra_body: dict[str, Any]) -> None:
        """Ollama's top-level ``think: false`` (a value already there wins)."""
        extra_body.setdefault("think", False)

    def build_body(self, req: ChatRequest) -> tuple[dict[str, Any], dict[str, Any]]:
        """The request body (``stream: true``; ``extra_body`` merged, its ``options`` into
        ``options``; ``tools`` when given, the history translated to Ollama's shape, no
        ``tool_choice``) and the params sent (``num_predict`` from ``max_tokens``; the offered
        tools by name)."""
        extra = copy.deepcopy(req.extra_body)
        extra_options = extra.pop("options", None)
        options: dict[str, Any] = {}
        sent: dict[str, Any] = {}
        for key, value in (
            ("temperature", req.temperature),
            ("seed", req.seed),
            ("num_predict", req.max_tokens),
            ("num_ctx", req.context_tokens),
        ):
            if value is not None:
                options[key] = sent[key] = value
        if isinstance(extra_options, dict):
            options.update(extra_options)
        elif extra_options is not None:
            extra["options"] = extra_options  # verbatim: the server will say what is wrong
        messages = ollama_messages(req.messages)
        body: dict[str, Any] = {"model": req.model, "messages": messages, **extra}
        body["stream"] = True
        if req.tools is not None:
            body["tools"] = req.tools
            sent["tools"] = tool_names(req.tools)
        if options:
            body["options"] = options
        if req.keep_alive is not None:
            body["keep_alive"] = sent["keep_alive"] = req.keep_alive
        if req.json_schema is not None:
            body["format"] = req.json_schema
        if req.extra_body:
            sent["extra_body"] = copy.deepcopy(req.extra_body)
        return body, sent

    async def probe_server(self) -> tuple[str, str | None]:
        """``("ollama", version)`` from ``GET /api/version``. Raises EngineError."""
        data = await self._checked_json("GET", self.base_url + "/api/version")
        version = data.get("version") if isinstance(data, dict) else None
        return "ollama", str(version) if version else None

    async def list_models(self) -> list[str]:
        """Available model names from ``GET /api/tags``. Raises EngineError."""
        return await self._names("/api/tags")

    async def loaded_models(self) -> list[str]:
        """Loaded model names from ``GET /api/ps``. Raises EngineError."""
        return await self._names("/api/ps")

    async def unload(self, model: str) -> None:
        """``POST /api/chat`` with ``messages: []`` and ``keep_alive: 0``. Raises EngineError."""
        body = {"model": model, "messages": [], "keep_alive": 0, "stream": False}
        await self._checked_json("POST", self.base_url + "/api/chat", body)

    async def chat_template(self, model: str) -> dict[str, Any] | None:
        """``template`` of ``POST /api/show`` (the Modelfile's ``TEMPLATE``) with the model's
        ``capabilities`` as caps; ``None`` when the answer has no template text or is HTTP
        404 (an unknown model, which the preflight reports on its own). Raises EngineError
        for another HTTP error or an unreachable server."""
        status, data = await self.request_json(
            "POST", self.base_url + "/api/show", {"model": model}
        )
        if status == 404:  # no such endpoint (or model: the preflight names that one)
            return None
        if status >= 300:
            raise EngineHTTPError(status, one_line(f"HTTP {status} from /api/show: {data}"))
        template = data.get("template") if isinstance(data, dict) else None
        if not isinstance(template, str):
            return None
        return {"source": "/api/show", "template": template, "caps": data.get("capabilities")}

    async def tool_support(self, model: str) -> str | None:
        """One line when ``/api/show`` lists the model's ``capabilities`` without ``tools``
        (its template cannot take tools: Ollama answers 400 "does not support tools");
        ``None`` when it lists ``tools``, or lists no capabilities (older versions), or does
        not know the model (the preflight names that). Raises :class:`EngineError` for
        another HTTP error or an unreachable server."""
        status, data = await self.request_json(
            "POST", self.base_url + "/api/show", {"model": model}
        )
        if status == 404:
            return None
        if status >= 300:
            raise EngineHTTPError(status, one_line(f"HTTP {status} from /api/show: {data}"))
        caps = data.get("capabilities") if isinstance(data, dict) else None
        if not isinstance(caps, list) or "tools" in caps:
            return None
        listed = ", ".join(str(c) for c in caps) or "none"
        return one_line(
            f"{self.base_url}: model {model} cannot take tools (/api/show capabilities: "
            f"{listed}): use a model whose chat template renders tools, or give it such a "
            "TEMPLATE in a Modelfile"
        )

    async def _names(self, path: str) -> list[str]:
        data = await self._checked_json("GET", self.base_url + path)
        models = data.get("models") if isinstance(data, dict) else None
        if not isinstance(models, list):
            raise StreamProtocolError(f"{path} answer has no 'models' list")
        return [str(m.get("name") or m.get("model")) for m in models if isinstance(m, dict)]

    async def model_context_length(self, model: str) -> int | None:
        """``model_info["<general.architecture>.context_length"]`` from ``POST /api/show``
        (tokens; Ollama API docs, "Show Model Information"); ``None`` when not listed.
        Raises :class:`EngineError` when the server does not answer 2xx."""
        data = await self._checked_json("POST", self.base_url + "/api/show", {"model": model})
        info = data.get("model_info") if isinstance(data, dict) else None
        if not isinstance(info, dict):
            return None
        value = info.get(f"{info.get('general.architecture')}.context_length")
        return value if isinstance(value, int) and value > 0 else None
