"""llama.cpp's ``llama-server``: the OpenAI protocol plus the server's own endpoints.

Source: llama.cpp ``tools/server/README.md`` and what this project's real server sends
(``shared/engine-notes.md``):

* ``GET /health``: 503 ``{"error": {"message": "Loading model"}}`` while the model loads, then
  200 ``{"status": "ok"}``: readiness, waited for within ``load_timeout_s``;
* ``GET /props``: ``build_info``, ``model_path``, ``total_slots`` and
  ``default_generation_settings.n_ctx`` (the context of one slot = ``--ctx-size`` /
  ``--parallel``), which is the limit of one request; ``chat_template`` (the template text in
  use: the GGUF's own, the ``--chat-template`` one, or llama.cpp's ChatML fallback) and
  ``chat_template_caps`` (``supports_tools``, ``supports_tool_calls``,
  ``supports_parallel_tool_calls``, ``supports_system_role`` …, found by running the template
  on probe messages: llama.cpp ``common/jinja/caps.cpp``); ``GET /slots`` lists each slot's
  ``n_ctx``;
* ``POST /apply-template {"messages"}`` -> ``{"prompt"}`` (the chat template applied) and
  ``POST /tokenize {"content", "add_special", "parse_special"}`` -> ``{"tokens": [...]}``: the
  exact prompt token count (``parse_special`` reads control text as special tokens);
* streamed answers carry ``timings`` (kept as ``server_timings``) and
  ``usage.prompt_tokens_details.cached_tokens``; ``"cache_prompt": false`` in the body turns
  the prompt cache off for that request.

Tools: a request with ``tools`` needs the Jinja template engine (``--jinja``, on by default
in newer builds; without it the server answers HTTP 500 "tools param requires --jinja flag",
measured) and a template that renders them. A template that does not (the Gemma GGUF of the
tests: llama.cpp's ChatML fallback) has ``supports_tools: false`` and the server *silently
drops* the tools from the prompt (measured: the same 30 prompt tokens with and without them),
so :meth:`LlamaCppEngine.tool_support` refuses such a server before a tools run.

Connections: the server closes the connection after every streamed response although its
headers announce keep-alive, so a pooled connection is dead by the next request. Measured
against the real server (Gemma 3 270M, 2-core machine under load, 2 × 20 back-to-back requests
of 4 tokens, time of ``chat()`` outside the timed ``e2e_s``): a pooled connection needed a stale
resend on 19 of 20 requests and cost 4.6-6.1 ms median (max 22-27 ms); a fresh connection per
request cost 1.6-1.8 ms median (max 12-16 ms) with no resend. So this engine opens a fresh
connection per request (:attr:`reuse_connections` ``False``); the generic OpenAI engine keeps
its pool and resends a stale send at once (``_http.stale_connection``), which is right for
servers that do keep connections alive.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from touchstone_ray.engines._types import ChatRequest
from touchstone_ray.engines.openai import OpenAIEngine
from touchstone_ray.errors import EngineModelLoading, StreamProtocolError

HEALTH_POLL_S = 0.5
"""How often ``/health`` is asked again while the model loads (s)."""


class LlamaCppEngine(OpenAIEngine):
    """``engine: llamacpp``; ``base_url`` ends in ``/v1`` like any OpenAI-compatible server."""

    name = "llamacpp"
    reuse_connections = False

    def build_body(self, req: ChatRequest) -> tuple[dict[str, Any], dict[str, Any]]:
        """The OpenAI body, plus ``cache_prompt: false`` when the settings turn the prompt
        cache off (recorded in ``sent`` too)."""
        body, sent = super().build_body(req)
        if not self.settings.prompt_cache:
            body["cache_prompt"] = sent["cache_prompt"] = False
        return body, sent

    async def wait_ready(self) -> None:
        """Return once ``GET /health`` answers 200; 503 (loading) is waited out for up to
        ``load_timeout_s``. Raises :class:`EngineModelLoading` past that, EngineError when
        unreachable."""
        deadline = time.monotonic() + self.settings.load_timeout_s
        while True:
            status, data = await self.request_json("GET", self.server_root + "/health")
            if status != 503:
                return
            if time.monotonic() >= deadline:
                raise EngineModelLoading(f"HTTP 503 from /health for longer than load wait: {data}")
            await asyncio.sleep(HEALTH_POLL_S)

    async def _props(self) -> dict[str, Any]:
        await self.wait_ready()
        data = await self._checked_json("GET", self.server_root + "/props")
        if not isinstance(data, dict):
            raise StreamProtocolError("/props answer is not an object")
        return data

    async def probe_server(self) -> tuple[str, str | None]:
        """``("llama.cpp", build_info)`` from ``/props`` once ``/health`` is 200."""
        build = (await self._props()).get("build_info")
        return "llama.cpp", str(build) if build else None

    async def server_facts(self, model: str) -> dict[str, Any]:
        """``{model_path, model_ftype, n_ctx, total_slots, build_info}`` from ``/props``
        (``n_ctx`` per slot, tokens; ``model_ftype`` the quantisation, e.g. ``Q4_K - Medium``)."""
        props = await self._props()
        settings = props.get("default_generation_settings")
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        return {
            "model_path": props.get("model_path"),
            "model_ftype": props.get("model_ftype"),
            "n_ctx": n_ctx if isinstance(n_ctx, int) else None,
            "total_slots": props.get("total_slots"),
            "build_info": props.get("build_info"),
        }

    async def context_limit(self, model: str) -> int | None:
        """``n_ctx`` of one slot (tokens): ``/props`` ``default_generation_settings.n_ctx``,
        else the smallest ``n_ctx`` in ``/slots``, else ``max_model_len`` where ``/v1/models``
        lists one."""
        n_ctx = (await self.server_facts(model))["n_ctx"]
        if n_ctx:
            return int(n_ctx)
        status, slots = await self.request_json("GET", self.server_root + "/slots")
        sizes = (
            [s.get("n_ctx") for s in slots or [] if isinstance(s, dict)] if status == 200 else []
        )
        ints = [n for n in sizes if isinstance(n, int) and n > 0]
        return min(ints) if ints else await super().context_limit(model)

    async def count_prompt_tokens(
        self,
        model: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
    ) -> int | None:
        """Tokens of the templated prompt: ``/apply-template`` (with ``tools`` when given: the
        real server renders them into the prompt, 79 → 574 characters for one tool with a
        Hermes-style template) then ``/tokenize`` with ``add_special`` (the BOS token the
        server adds to a chat prompt; checked equal to the stream's ``usage.prompt_tokens`` on
        the real server)."""
        root = self.server_root
        request: dict[str, Any] = {"messages": messages}
        if tools is not None:
            request["tools"] = tools
        templated = await self._checked_json("POST", root + "/apply-template", request)
        prompt = templated.get("prompt") if isinstance(templated, dict) else None
        if not isinstance(prompt, str):
            return None
        body = {"content": prompt, "add_special": True, "parse_special": True}
        tokens = await self._checked_json("POST", root + "/tokenize", body)
        listed = tokens.get("tokens") if isinstance(tokens, dict) else None
        return len(listed) if isinstance(listed, list) else None

    async def chat_template(self, model: str) -> dict[str, Any] | None:
        """``/props`` ``chat_template`` and ``chat_template_caps``; ``None`` when ``/props``
        has no template text (an older build)."""
        props = await self._props()
        template = props.get("chat_template")
        if not isinstance(template, str):
            return None
        caps = props.get("chat_template_caps")
        return {"source": "/props", "template": template, "caps": caps}

    async def tool_support(self, model: str) -> str | None:
        """One line refusing the server when ``/props`` ``chat_template_caps`` says its chat
        template cannot take tools (``supports_tools`` false: the tools never reach the
        prompt) or cannot show the model its earlier calls (``supports_tool_calls`` false: a
        second turn would lose them); ``None`` when both are true, and when ``/props`` has no
        caps or lacks either flag (builds before the caps existed: the server cannot say, and
        one started without ``--jinja`` refuses the first request with tools, which becomes
        the same kind of line, :class:`~touchstone_ray.errors.EngineToolsRefused`)."""
        caps = (await self._props()).get("chat_template_caps")
        if not isinstance(caps, dict):
            return None
        missing = [
            flag for flag in ("supports_tools", "supports_tool_calls") if caps.get(flag) is False
        ]
        if not missing:
            return None
        flags = " and ".join(f"{flag} false" for flag in missing)
        return (
            f"{self.server_root}: the chat template cannot call tools (/props "
            f"chat_template_caps: {flags}); restart llama-server with --jinja and a template "
            "that renders tools and tool calls (--chat-template-file FILE)"
        )

    async def token_counts(self, texts: list[str]) -> list[int] | None:
        """One ``/tokenize`` per text with ``parse_special: true`` and ``add_special: false``
        (a marker that is one of the model's special tokens counts 1); ``None`` when an answer
        has no ``tokens`` list."""
        counts: list[int] = []
        for text in texts:
            body = {"content": text, "add_special": False, "parse_special": True}
            data = await self._checked_json("POST", self.server_root + "/tokenize", body)
            tokens = data.get("tokens") if isinstance(data, dict) else None
            if not isinstance(tokens, list):
                return None
            counts.append(len(tokens))
        return counts
