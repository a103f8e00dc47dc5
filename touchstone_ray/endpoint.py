"""What the fleet config's models and the judge config's judges share: one endpoint to call.

:class:`EndpointSpec` holds the keys both configs have (SPEC §4, §5: ``engine``, ``base_url``,
``host``, ``concurrency``, ``api_key_env``, ``extra_body``, ``timeout_s``) and turns them into
the :class:`~touchstone_ray.engines.base.EngineSettings` every call and every driver deadline
(:func:`touchstone_ray.fleet.dispatch.call_deadline_s`) is made from. The config keys themselves are
a Contract: :class:`~touchstone_ray.config.ModelSpec` and
:class:`~touchstone_ray.judging.config.JudgeSpec` add their own and keep their defaults.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, field_validator

from touchstone_ray.engines import EngineSettings

__all__ = ["LOCAL_HOST", "EndpointSpec", "EngineKind"]

LOCAL_HOST = "local"
"""The host name that always means the driver's own node."""

EngineKind = Literal["ollama", "openai", "llamacpp", "vllm", "lmstudio", "simulated"]
"""The ``engine:`` values (:func:`touchstone_ray.engines.registry.known_kinds`)."""

UNUSED_BASE_URL = "http://127.0.0.1:0"
"""``base_url`` of the engine settings of a simulated endpoint (it starts its own server)."""


class EndpointSpec(BaseModel):
    """One endpoint: which protocol, where, how many requests at once, how long each may take."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    engine: EngineKind
    """``ollama`` | ``openai`` | ``llamacpp`` | ``vllm`` | ``lmstudio`` | ``simulated``: the
    three after ``openai`` speak OpenAI's protocol and also read their server's own endpoints;
    ``simulated`` starts a simulator on loopback."""
    base_url: str | None = None
    """Endpoint as seen FROM the host it is called from (OpenAI: ending in ``/v1``); ``None``
    only for ``simulated``."""
    host: str | None = None
    """Host name the calls (a model's cells, a judge's requests) are pinned to; ``None``: the
    driver's node."""
    concurrency: int = Field(default=1, ge=1)
    """Max in-flight requests to this endpoint (local servers: 1)."""
    api_key_env: str | None = None
    """Name of an env var holding the API key; the key never reaches a file or a log."""
    extra_body: dict[str, Any] = {}
    """Merged verbatim into every request (e.g. ``think: false``, ``options.num_ctx``)."""
    timeout_s: float = Field(default=600.0, gt=0)
    """Deadline of one request attempt (s)."""

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parsed = urlparse(value)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError("base_url must be an http(s) URL with a host")
        return value.rstrip("/")

    @property
    def host_name(self) -> str:
        """The host the calls run on (``local`` when unset)."""
        return self.host or LOCAL_HOST

    def engine_settings(
        self,
        api_key: str | None,
        *,
        max_attempts: int | None = None,
        prompt_cache: bool = True,
        engine_down_timeout_s: float | None = None,
    ) -> EngineSettings:
        """The engine settings of this endpoint (``max_attempts`` and
        ``engine_down_timeout_s`` (s) ``None``: the engines' defaults). The key is passed in
        memory, never read here."""
        settings: dict[str, Any] = {
            "base_url": self.base_url or UNUSED_BASE_URL,
            "api_key": api_key,
            "timeout_s": self.timeout_s,
            "prompt_cache": prompt_cache,
        }
        if max_attempts is not None:
            settings["max_attempts"] = max_attempts
        if engine_down_timeout_s is not None:
            settings["engine_down_timeout_s"] = engine_down_timeout_s
        return EngineSettings(**settings)
