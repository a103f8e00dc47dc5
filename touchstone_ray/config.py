"""The fleet config (SPEC §4, a Contract for the keys shown; ``config.example.yaml``).

:func:`load_config` validates everything that can be checked before Ray starts: unknown keys,
unknown host names, a model without ``base_url`` (other than simulated), an unset
``api_key_env`` variable, duplicate (model id, host) pairs, malformed URLs. Host → node
resolution (a host that matches no node) happens in :mod:`touchstone_ray.fleet.hosts`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from touchstone_ray.endpoint import LOCAL_HOST as LOCAL_HOST
from touchstone_ray.endpoint import EndpointSpec
from touchstone_ray.errors import ConfigError
from touchstone_ray.records import AnswerFlag
from touchstone_ray.sim import SimConfig
from touchstone_ray.yamlio import (
    RuleError,
    first_validation_error,
    read_document,
    validate_document,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)


def _check_sim(path: str, sim: dict[str, Any]) -> None:
    """Validate ``sim`` knobs (:class:`~touchstone_ray.sim.SimConfig` plus ``api``) before Ray
    starts; a bad knob would otherwise fail every cell on its host."""
    knobs = dict(sim)
    api = knobs.pop("api", "openai")
    if api not in ("openai", "ollama"):
        raise RuleError(f"{path}.api", "must be 'openai' or 'ollama'", api)
    try:
        SimConfig.model_validate(knobs)
    except ValidationError as exc:
        raise ConfigError(f"{path}.{first_validation_error(exc)}") from None


class RaySettings(_Strict):
    """How the driver reaches Ray."""

    address: str | None = None
    """``None``: start a local Ray; ``"auto"`` or ``"ray://head:10001"``: join a cluster."""
    dashboard_host: str = "127.0.0.1"
    """Where a locally started dashboard listens; anything but loopback prints a warning."""
    include_dashboard: bool = True
    """Start the dashboard with a local Ray (~1.2 GiB RSS; off for lean runs)."""


class HostSpec(_Strict):
    """How to find a host's Ray node; matched by label, then hostname, then IP."""

    label: str | None = None
    """Node label ``touchstone.host=<label>`` (``ray start --labels``)."""
    hostname: str | None = None
    """The node's hostname."""
    ip: str | None = None
    """The node's IP address."""

    @model_validator(mode="after")
    def _one_way_to_match(self) -> HostSpec:
        if self.label is None and self.hostname is None and self.ip is None:
            raise ValueError("a host needs at least one of label, hostname, ip")
        return self


class ModelSpec(EndpointSpec):
    """One model on one endpoint (the endpoint keys: :class:`~touchstone_ray.endpoint.
    EndpointSpec`)."""

    id: str = Field(min_length=1)
    """The name the server knows (e.g. ``qwen3:8b``)."""
    keep_alive: str | int | None = "30m"
    """Ollama only: how long the server keeps the model loaded between requests."""
    context_tokens: int | None = Field(default=None, gt=0)
    """Context the model gets (tokens; sent as Ollama ``options.num_ctx``; checked against the
    server's own limit at start). ``None``: the server's default."""
    reasoning_headroom_tokens: int = Field(default=0, ge=0)
    """Tokens added to every prompt's ``max_tokens`` for this model (a reasoning model spends
    part of the budget before its answer); a prompt without a cap stays without one. The budget
    sent is each record's ``max_tokens_sent``. Default 0."""
    answer_flags_off: tuple[AnswerFlag, ...] = ()
    """Answer flags this model's records never carry (SPEC §7 ``answer_flags`` names, e.g.
    ``wrong_language`` for a model asked to answer in code): its detectors still run, the
    names listed here are dropped. An unknown name is a config error. Default none."""
    engine_process: str | None = Field(default=None, min_length=1)
    """Substring of the serving process's name or command line (e.g. ``llama-server`` or
    ``--port 8081``), for a server behind a proxy that is not found by its port; it must match
    exactly one process tree on the host."""
    sim: dict[str, Any] | None = None
    """Simulator knobs for ``engine: simulated`` (see ``touchstone-ray sim-server --help``)."""


class SchedulingSettings(_Strict):
    """How cells are scheduled."""

    models_per_host: int = Field(default=1, ge=1)
    """Models that may run at once on one host (1 = one after another)."""
    max_attempts: int = Field(default=3, ge=1)
    """Attempts per cell, with jittered exponential backoff on 5xx/timeout/connect."""
    engine_down_timeout_s: float = Field(default=300.0, ge=0)
    """How long a model's cells wait for an endpoint that refuses connections (an engine
    restarting), probing it every 2 s without spending attempts (s); past it they fail as
    ``connect``."""
    warmup: bool = True
    """One untimed request per model before its cells."""
    cache_bust: bool = False
    """Put a per-cell nonce line first in every prompt so no prefix comes from a server's
    prompt cache (changes the prompt the model sees)."""
    prompt_cache: bool = True
    """``on`` (YAML reads it as true); ``off`` asks servers that support it (llama.cpp
    ``cache_prompt: false``) not to reuse cached prefixes."""


class MonitorSettings(_Strict):
    """Host telemetry."""

    interval_s: float = Field(default=0.5, gt=0)
    """Sampling interval (s)."""
    gpu: Literal["auto", "off"] = "auto"
    """``auto`` samples GPUs through NVML where present; ``off`` never does."""


class FleetConfig(_Strict):
    """A validated fleet config."""

    ray: RaySettings = RaySettings()
    hosts: dict[str, HostSpec] = {}
    models: tuple[ModelSpec, ...] = Field(min_length=1)
    scheduling: SchedulingSettings = SchedulingSettings()
    monitor: MonitorSettings = MonitorSettings()
    out: str = "runs"
    """Folder for new bundles."""

    @model_validator(mode="after")
    def _cross_field_rules(self) -> FleetConfig:
        if LOCAL_HOST in self.hosts:
            raise RuleError(
                f"hosts.{LOCAL_HOST}", "'local' is reserved for the driver's node", LOCAL_HOST
            )
        seen: dict[tuple[str, str], int] = {}
        for i, model in enumerate(self.models):
            if model.host is not None and model.host not in self.hosts and model.host != LOCAL_HOST:
                known = sorted([*self.hosts, LOCAL_HOST])
                raise RuleError(
                    f"models[{i}].host", f"unknown host, expected one of {known}", model.host
                )
            if model.engine != "simulated" and model.base_url is None:
                raise RuleError(
                    f"models[{i}].base_url", f"required for engine {model.engine}", None
                )
            if model.sim is not None:
                _check_sim(f"models[{i}].sim", model.sim)
            pair = (model.id, model.host_name)
            if pair in seen:
                raise RuleError(
                    f"models[{i}]",
                    f"duplicate (model id, host) pair, first at models[{seen[pair]}]",
                    f"{model.id} on {model.host_name}",
                )
            seen[pair] = i
        return self

    def model_label(self, model: ModelSpec) -> str:
        """The name used in records, keys and shard names.

        The model id, or ``id@host`` when the same id is served by several hosts (keys
        ``model|variant|prompt_id|repeat`` must stay unique).
        """
        if sum(1 for m in self.models if m.id == model.id) > 1:
            return f"{model.id}@{model.host_name}"
        return model.id

    def host_names(self) -> list[str]:
        """Hosts that serve at least one model, in first-use order."""
        return list(dict.fromkeys(m.host_name for m in self.models))


class HasApiKeyEnv(Protocol):
    """A config entry that may name an API-key environment variable."""

    @property
    def api_key_env(self) -> str | None: ...


def check_api_key_env(entries: Sequence[HasApiKeyEnv], list_key: str, source: str) -> None:
    """Raise :class:`ConfigError` naming ``<list_key>[i].api_key_env`` and the variable (never
    a value) for the first entry whose ``api_key_env`` variable is unset or empty."""
    for i, entry in enumerate(entries):
        if entry.api_key_env and not os.environ.get(entry.api_key_env):
            raise ConfigError(
                f"{source}: {list_key}[{i}].api_key_env: environment variable "
                f"{entry.api_key_env} is not set"
            )


def config_from_data(data: object, source: str) -> FleetConfig:
    """Validate parsed fleet-config data; ``source`` prefixes the one-line error."""
    config = validate_document(FleetConfig, data, source, ConfigError)
    check_api_key_env(config.models, "models", source)
    return config


def load_config(path: str | Path) -> FleetConfig:
    """Load and validate the fleet config at ``path``; raises :class:`ConfigError`."""
    path = Path(path)
    return config_from_data(read_document(path, "fleet config", ConfigError), str(path))
