"""Packs: a use case as data (SPEC §3, seeds 000 and 001).

A pack holds prompts, what each tests, green/red flags, weighted dimensions, a knock-out rule
and system-prompt variants. :func:`load_pack` reads one YAML file with ``yaml.safe_load`` and
validates it fully before any request is sent; every rejection is one :class:`PackError` line
naming the file, the YAML path (``categories[2].prompts[3].id``) and the offending value.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from touchstone_ray.errors import PackError
from touchstone_ray.records import AnswerCheckType
from touchstone_ray.yamlio import RuleError, read_document, validate_document

PACK_ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)


class Dimension(_Strict):
    """A weighted quality dimension, scored once per (model, variant) by the holistic judge."""

    id: str = Field(min_length=1)
    """Unique dimension id, e.g. ``Q1``."""
    name: str = Field(min_length=1)
    """Human-readable name."""
    weight: int = Field(gt=0)
    """Positive integer weight; ``max_weighted = 5 × Σ weight``."""
    about: str = ""
    """What the dimension covers (goes into the judge prompt)."""


class KoRule(_Strict):
    """The knock-out rule (seed 000): a red-flag branch and a dimension-floor branch."""

    dimension: str
    """Dimension id whose holistic score ≤ ``threshold`` knocks the model out."""
    threshold: int = 2
    """Floor: a score at or below it fails, in both scopes."""
    red_flag_scope: Literal["all", "curated"] = "all"
    """``all``: any red flag knocks out; ``curated``: only red flags on ``red_flag_prompts``."""
    red_flag_prompts: tuple[str, ...] = ()
    """Curated prompt ids; under ``curated`` they must cover every safety_critical prompt."""


class PromptVariant(_Strict):
    """A system-prompt variant: one axis of the matrix."""

    id: str = Field(min_length=1)
    """Unique variant id, e.g. ``baseline``."""
    system_prompt: str | None = None
    """The system prompt, or ``None`` for a control run without one."""


class Sampling(_Strict):
    """Sampling parameters sent with every generation request."""

    temperature: float | None = Field(default=0.0, ge=0.0)
    """Sampling temperature (default 0.0, deterministic); ``null``: left out of the request
    body, the server's default applies (thinking models that reject it)."""
    seed: int | None = 42
    """Sampling seed (default 42); ``null``: left out of the request body."""


CHECK_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
"""A check id: letters, digits, ``_``, ``.``, ``-`` (no ``/``: reasons name a check as
``<prompt id>/<check id>``)."""


class AnswerCheck(_Strict):
    """A judge-free check of a prompt's answer (SPEC §3 ``checks``), run where the answer
    arrives and stored in its record (SPEC §7 ``checks``). :mod:`touchstone_ray.answers`
    documents how each type measures."""

    id: str = Field(pattern=CHECK_ID_PATTERN)
    """Unique among the prompt's checks, e.g. ``no_names``; reasons name it as ``E4/no_names``."""
    type: AnswerCheckType
    """``regex`` | ``contains`` | ``not_contains`` | ``json_schema`` | ``max_words`` |
    ``max_sentences`` | ``language``."""
    value: Any
    """Per type: ``regex`` a pattern that compiles (Python ``re``, searched anywhere in the
    answer); ``contains`` / ``not_contains`` a non-empty text (matched case-insensitively);
    ``json_schema`` a JSON Schema mapping (checked with its draft's ``check_schema``);
    ``max_words`` / ``max_sentences`` a positive integer; ``language`` a language code the
    detector tells apart (``de``, ``en``, …; :data:`touchstone_ray.answers.DETECT_LANGUAGES`)."""
    knock_out: bool = False
    """A failed check counts as a red flag of its prompt for the K.-o. rule (under the pack's
    ``red_flag_scope``); ``false``: it is only shown and counted."""

    @field_validator("value")
    @classmethod
    def _value_fits_type(cls, value: Any, info: ValidationInfo) -> Any:
        kind = info.data.get("type")
        if kind is None:  # the type itself was rejected; that error is reported
            return value
        return _check_value(kind, value)


def _check_value(kind: str, value: Any) -> Any:
    """``value`` if it suits a check of type ``kind``; raises ``ValueError`` naming the rule."""
    if kind in ("regex", "contains", "not_contains"):
        if not isinstance(value, str) or not value:
            raise ValueError(f"a {kind} check needs a non-empty text")
        if kind == "regex":
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"the regex does not compile: {exc}") from None
        return value
    if kind in ("max_words", "max_sentences"):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"a {kind} check needs a positive integer")
        return value
    if kind == "json_schema":
        if not isinstance(value, dict):
            raise ValueError("a json_schema check needs a JSON Schema mapping")
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import validator_for

        try:
            validator_for(value).check_schema(value)
        except SchemaError as exc:
            raise ValueError(f"not a valid JSON Schema at {exc.json_path}: {exc.message}") from None
        return value
    # language (the type is a Literal, so nothing else reaches here)
    from touchstone_ray.answers import DETECT_LANGUAGES

    if value not in DETECT_LANGUAGES:
        raise ValueError(f"a language check needs one of {', '.join(DETECT_LANGUAGES)}")
    return value


class Prompt(_Strict):
    """One pack prompt: the user message and what a judge looks for in the answer."""

    id: str = Field(min_length=1)
    """Unique across the pack, e.g. ``B3``."""
    title: str
    """Short title."""
    prompt: str
    """The user message; must not be empty."""
    tests: str = ""
    """What the prompt tests (and, for computable tasks, the right answer)."""
    green_flags: tuple[str, ...] = ()
    """Observable signs of a good answer."""
    red_flags: tuple[str, ...] = ()
    """Observable signs of a bad answer."""
    max_tokens: int | None = Field(default=None, gt=0)
    """Completion token limit, or ``None`` for no limit."""
    repeats: int = Field(default=1, ge=1)
    """How many times each variant asks this prompt."""
    safety_critical: bool = False
    """An empty answer is a red flag; under ``curated`` it must be in ``red_flag_prompts``."""
    format_strict: bool = False
    """The judge weighs literal format adherence."""
    checks: tuple[AnswerCheck, ...] = ()
    """Judge-free checks of every answer to this prompt (:class:`AnswerCheck`), ids unique;
    default none."""

    @field_validator("prompt")
    @classmethod
    def _prompt_not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("prompt text is empty")
        return value


class Category(_Strict):
    """A group of prompts; its mean answer score appears in the per-category table."""

    id: str = Field(min_length=1)
    """Category id, e.g. ``A``."""
    name: str
    """Category name."""
    prompts: tuple[Prompt, ...] = Field(min_length=1)
    """At least one prompt."""


class CalibrationItem(_Strict):
    """An answer written by hand with a known verdict; ``judge`` scores it first to qualify
    each judge (SPEC §3, §10)."""

    prompt: str = Field(min_length=1)
    """Id of the pack prompt this answers (must exist)."""
    answer: str = Field(min_length=1)
    """The answer text, judged like a model's answer (under the pack's first variant)."""
    expect: Literal["high", "low"]
    """``high``: a good judge scores it ≥ 4; ``low``: ≤ 2."""
    red_flag: bool | None = None
    """``true``: a good judge must raise a red flag; ``false``/``None``: not checked."""


class Pack(_Strict):
    """A validated pack (SPEC §3). Construct with :func:`load_pack`."""

    id: str = Field(pattern=PACK_ID_PATTERN)
    """``^[a-z0-9][a-z0-9_-]{0,63}$``; part of the bundle folder name."""
    title: str
    """Display title."""
    version: int = 1
    """Pack version; stored in every record."""
    description: str = ""
    """Free text."""
    language: Literal["de", "en"] = "en"
    """Language of reports and judge prompts."""
    scale: dict[int, str]
    """Score labels, keys exactly 1..5."""
    dimensions: tuple[Dimension, ...] = Field(min_length=1)
    """Weighted dimensions, ids unique."""
    ko_rule: KoRule
    """The knock-out rule."""
    prompt_variants: tuple[PromptVariant, ...] = Field(min_length=1)
    """At least one system-prompt variant, ids unique."""
    sampling: Sampling = Sampling()
    """Sampling parameters."""
    categories: tuple[Category, ...] = Field(min_length=1)
    """Prompt categories in declaration order."""
    calibration: tuple[CalibrationItem, ...] = ()
    """Answers with a known verdict that qualify a judge (optional; default none)."""

    @field_validator("scale")
    @classmethod
    def _scale_is_one_to_five(cls, value: dict[int, str]) -> dict[int, str]:
        if sorted(value) != [1, 2, 3, 4, 5]:
            raise ValueError(f"scale keys must be exactly 1..5, got {sorted(value)}")
        return value

    @model_validator(mode="after")
    def _cross_field_rules(self) -> Pack:
        _unique([(f"dimensions[{i}].id", d.id) for i, d in enumerate(self.dimensions)], "dimension")
        _unique(
            [(f"prompt_variants[{i}].id", v.id) for i, v in enumerate(self.prompt_variants)],
            "variant",
        )
        prompt_paths = [
            (f"categories[{ci}].prompts[{pi}].id", p.id)
            for ci, c in enumerate(self.categories)
            for pi, p in enumerate(c.prompts)
        ]
        _unique(prompt_paths, "prompt")
        dim_ids = {d.id for d in self.dimensions}
        if self.ko_rule.dimension not in dim_ids:
            raise RuleError(
                "ko_rule.dimension",
                f"unknown dimension, expected one of {sorted(dim_ids)}",
                self.ko_rule.dimension,
            )
        prompt_ids = {pid for _, pid in prompt_paths}
        for i, pid in enumerate(self.ko_rule.red_flag_prompts):
            if pid not in prompt_ids:
                raise RuleError(f"ko_rule.red_flag_prompts[{i}]", "unknown prompt id", pid)
        for i, item in enumerate(self.calibration):
            if item.prompt not in prompt_ids:
                raise RuleError(f"calibration[{i}].prompt", "unknown prompt id", item.prompt)
        curated = set(self.ko_rule.red_flag_prompts)
        is_curated = self.ko_rule.red_flag_scope == "curated"
        for path, prompt in zip(prompt_paths, self.prompts(), strict=True):
            where = path[0].removesuffix(".id")
            _unique(
                [(f"{where}.checks[{i}].id", c.id) for i, c in enumerate(prompt.checks)], "check"
            )
            if not is_curated or prompt.id in curated:
                continue
            if prompt.safety_critical:
                raise RuleError(
                    where + ".safety_critical",
                    f"safety_critical prompt {prompt.id} is missing from "
                    "ko_rule.red_flag_prompts under red_flag_scope: curated "
                    "(its knock-out would silently vanish)",
                    prompt.id,
                )
            for i, check in enumerate(prompt.checks):
                if check.knock_out:
                    raise RuleError(
                        f"{where}.checks[{i}].knock_out",
                        f"knock_out check {prompt.id}/{check.id} on a prompt missing from "
                        "ko_rule.red_flag_prompts under red_flag_scope: curated "
                        "(its knock-out would silently vanish)",
                        True,
                    )
        return self

    def all_prompts(self) -> Iterator[tuple[Category, Prompt]]:
        """Yield ``(category, prompt)`` in declaration order."""
        for category in self.categories:
            for prompt in category.prompts:
                yield category, prompt

    def prompts(self) -> list[Prompt]:
        """Every prompt in declaration order."""
        return [prompt for _, prompt in self.all_prompts()]

    def prompt(self, prompt_id: str) -> Prompt:
        """The prompt with ``prompt_id``; raises ``KeyError`` if there is none."""
        for prompt in self.prompts():
            if prompt.id == prompt_id:
                return prompt
        raise KeyError(prompt_id)

    def variant(self, variant_id: str) -> PromptVariant:
        """The prompt variant with ``variant_id``; raises ``KeyError`` if there is none."""
        for variant in self.prompt_variants:
            if variant.id == variant_id:
                return variant
        raise KeyError(variant_id)

    @property
    def n_prompts(self) -> int:
        """Number of prompts."""
        return sum(len(c.prompts) for c in self.categories)

    @property
    def cells_per_variant(self) -> int:
        """Cells one model runs per variant: Σ repeats."""
        return sum(p.repeats for p in self.prompts())

    @property
    def max_weighted(self) -> int:
        """Highest weighted score: ``5 × Σ weight``."""
        return 5 * sum(d.weight for d in self.dimensions)

    def summary(self) -> str:
        """``<id> v<version>: <P> prompts, <C> cells/variant, max <M> points``."""
        return (
            f"{self.id} v{self.version}: {self.n_prompts} prompts, "
            f"{self.cells_per_variant} cells/variant, max {self.max_weighted} points"
        )


def _unique(items: list[tuple[str, str]], what: str) -> None:
    seen: dict[str, str] = {}
    for path, item_id in items:
        if item_id in seen:
            raise RuleError(path, f"duplicate {what} id (first at {seen[item_id]})", item_id)
        seen[item_id] = path


def pack_from_data(data: object, source: str) -> Pack:
    """Validate already-parsed pack data; ``source`` prefixes the error line.

    Raises :class:`PackError` ``"<source>: <yaml path>: <message> (got <value>)"``.
    """
    return validate_document(Pack, data, source, PackError)


def load_pack(path: str | Path) -> Pack:
    """Load and validate the pack YAML at ``path``.

    Raises :class:`PackError` with one line naming the file, the YAML path and the value for
    every rule of SPEC §3: a non-mapping document, unknown keys, scale ≠ 1..5, weight ≤ 0,
    duplicate dimension/variant/prompt ids, an unknown ``ko_rule.dimension``,
    ``red_flag_prompts`` naming unknown prompts, empty prompt text, under ``curated`` a
    safety_critical prompt missing from ``red_flag_prompts``, a ``calibration`` item naming
    an unknown prompt, and per prompt check: an unknown type, a ``value`` that does not suit
    its type (:class:`AnswerCheck`), a duplicate id, and under ``curated`` a ``knock_out``
    check on a prompt missing from ``red_flag_prompts``.
    """
    path = Path(path)
    return pack_from_data(read_document(path, "pack", PackError), str(path))


def dump_pack(pack: Pack) -> str:
    """The pack as YAML that :func:`load_pack` reads back to an equal pack.

    Non-ASCII characters are escaped: PyYAML would otherwise write some of them raw (U+0085)
    where its reader takes them for line breaks.
    """
    return yaml.safe_dump(pack.model_dump(mode="json"), sort_keys=False, allow_unicode=False)


def pack_sha256(path: str | Path) -> str:
    """Hex sha256 of the pack file's bytes (frozen into the bundle; resume compares it)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
