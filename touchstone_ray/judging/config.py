"""The judge config (SPEC §5; ``judge.example.yaml``).

:func:`load_judge_config` validates everything before any request: unknown keys (every model
is ``extra="forbid"``), an engine other than ``openai | ollama | llamacpp | vllm | lmstudio |
simulated``, a missing ``base_url`` (other than simulated), malformed URLs, duplicate judge
ids, unknown simulator knobs, and an ``api_key_env`` variable that is not set (the error
names the variable, never its value). Every error is one
:class:`~touchstone_ray.errors.ConfigError` line naming the file, the YAML path and the
offending value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from touchstone_ray.bundle import JUDGE_ID_PATTERN
from touchstone_ray.config import check_api_key_env
from touchstone_ray.endpoint import EndpointSpec
from touchstone_ray.errors import ConfigError
from touchstone_ray.sim import SimModelKnobs
from touchstone_ray.yamlio import (
    RuleError,
    read_document,
    validate_document,
)

__all__ = [
    "AggregateSettings",
    "JudgeConfig",
    "JudgeSpec",
    "judge_config_from_data",
    "load_judge_config",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)


class JudgeSpec(EndpointSpec):
    """One judge: a model on an endpoint that scores answers (the endpoint keys:
    :class:`~touchstone_ray.endpoint.EndpointSpec`; a judge's ``timeout_s`` defaults to 300)."""

    id: str = Field(pattern=JUDGE_ID_PATTERN)
    """Unique judge id; the folder name under ``judgements/`` (e.g. ``qwen3-32b``)."""
    engine: Literal["openai", "ollama", "llamacpp", "vllm", "lmstudio", "simulated"]
    """``openai`` | ``ollama`` | ``llamacpp`` | ``vllm`` | ``lmstudio`` (OpenAI's protocol plus
    their server's own endpoints) | ``simulated`` (a simulator on loopback)."""
    model: str = Field(min_length=1)
    """The model name the server knows (e.g. ``Qwen/Qwen3-32B``)."""
    temperature: float | None = Field(default=0.0, ge=0.0)
    """Sampling temperature of the judge; default 0.0 (deterministic); ``null``: left out of
    the request body, the server's default applies (thinking models that reject it)."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Completion token limit of one judge reply; default None (the server's limit)."""
    timeout_s: float = Field(default=300.0, gt=0)
    """Deadline of one judge request (s); default 300."""
    suppress_thinking: bool = True
    """Ask the server not to reason before answering (Qwen3 ``/no_think``, Ollama
    ``think: false``); default true."""
    max_consecutive_failures: int = Field(default=3, ge=0)
    """Abort this judge after this many failed requests or unparseable replies in a row;
    0 = never; default 3."""
    sim: SimModelKnobs | None = None
    """Simulator knobs for ``engine: simulated`` (``ttft_ms``, ``tps``, ``fail_rate``, …);
    default: the simulator's defaults."""


class AggregateSettings(_Strict):
    """How several judges combine."""

    red_flag_vote: Literal["any", "majority"] = "majority"
    """``any``: one judge's red flag counts; ``majority``: more than half of the judges that
    scored the answer (with two judges: both); default majority."""


class JudgeConfig(_Strict):
    """A validated judge config."""

    judges: tuple[JudgeSpec, ...] = Field(min_length=1)
    """At least one judge; ids unique."""
    aggregate: AggregateSettings = AggregateSettings()
    """How several judges combine."""

    @model_validator(mode="after")
    def _cross_field_rules(self) -> JudgeConfig:
        seen: dict[str, int] = {}
        for i, judge in enumerate(self.judges):
            if judge.id in seen:
                raise RuleError(
                    f"judges[{i}].id",
                    f"duplicate judge id, first at judges[{seen[judge.id]}]",
                    judge.id,
                )
            seen[judge.id] = i
            if judge.engine != "simulated" and judge.base_url is None:
                raise RuleError(
                    f"judges[{i}].base_url", f"required for engine {judge.engine}", None
                )
            if judge.engine != "simulated" and judge.sim is not None:
                raise RuleError(f"judges[{i}].sim", "only for engine simulated", judge.engine)
        return self

    def judge(self, judge_id: str) -> JudgeSpec:
        """The judge with ``judge_id``; raises ``KeyError`` if there is none."""
        for judge in self.judges:
            if judge.id == judge_id:
                return judge
        raise KeyError(judge_id)


def judge_config_from_data(data: object, source: str) -> JudgeConfig:
    """Validate parsed judge-config data (env vars included); ``source`` prefixes the error."""
    config = validate_document(JudgeConfig, data, source, ConfigError)
    check_api_key_env(config.judges, "judges", source)
    return config


def load_judge_config(path: str | Path) -> JudgeConfig:
    """Load and validate the judge config at ``path``; raises :class:`ConfigError` (one line)."""
    path = Path(path)
    return judge_config_from_data(read_document(path, "judge config", ConfigError), str(path))
