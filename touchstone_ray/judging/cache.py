"""Cache keys: when a stored verdict or report is still valid (resume, SPEC §7 ``judgements/``).

A stored verdict is reused only when its ``cache_key`` equals :func:`answer_cache_key` of
everything that can change it:

- the judge (:func:`judge_identity`): model, temperature, ``max_tokens``, ``extra_body``,
  ``suppress_thinking`` and the number of repeats per answer (``judge --repeats``);
- the templates: :data:`~.prompts.TEMPLATE_VERSION`;
- what the judge prompt shows of the pack for that answer: language, scale, the prompt's text,
  ``tests``, red and green flags, ``format_strict`` / ``safety_critical``, the variant's id and
  system prompt;
- the answer text, and its ``answer_flags`` as the judge sees them (only when it has some).

Not part of it: the endpoint (``base_url``, ``host``, ``api_key_env``), ``concurrency``,
``timeout_s`` and ``max_consecutive_failures`` — moving a judge to another server does not
re-judge, changing its temperature re-judges every answer. Editing one prompt of the pack
re-judges only that prompt's answers.

Every stored holistic report carries :func:`report_cache_key`: the judge identity, the
template version, the pack sha256, (model, variant), a digest of the evidence (each
verdict's key, cache key, score, red flag and status) and the holistic template
(``judge --template``; ``v1`` adds nothing, so a ``v1`` report keeps the key it had before
there were two), so a report is asked again whenever one of its verdicts or its template
changed. The holistic template is not part of a verdict's key: switching it re-asks every
holistic report and no answer.

The parts are hashed as one JSON array (unambiguous: no separator can occur inside a part).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from touchstone_ray.bundle import TEMPLATE_VERSION
from touchstone_ray.judging.config import JudgeSpec
from touchstone_ray.judging.prompts import (
    DEFAULT_HOLISTIC_TEMPLATE,
    HolisticTemplate,
    shown_flags,
)
from touchstone_ray.pack import Pack, Prompt, PromptVariant

__all__ = ["answer_cache_key", "judge_identity", "report_cache_key"]


def _sha256(parts: list[Any]) -> str:
    data = json.dumps(parts, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def judge_identity(spec: JudgeSpec, repeats: int = 1) -> dict[str, Any]:
    """What of ``spec`` can change a verdict (see the module docstring), as a JSON-ready dict;
    ``repeats`` = verdicts asked per answer (≥ 1)."""
    return {
        "model": spec.model,
        "temperature": spec.temperature,
        "max_tokens": spec.max_tokens,
        "extra_body": spec.extra_body,
        "suppress_thinking": spec.suppress_thinking,
        "repeats": repeats,
    }


def answer_cache_key(
    spec: JudgeSpec,
    pack: Pack,
    prompt: Prompt,
    variant: PromptVariant,
    answer_text: str,
    repeats: int = 1,
    flags: Sequence[str] = (),
) -> str:
    """sha256 hex of the judge identity, TEMPLATE_VERSION, what the judge prompt shows of
    ``pack`` / ``prompt`` / ``variant``, ``answer_text`` and the answer's ``flags`` as shown
    (:func:`~.prompts.shown_flags`; left out of the hash when there are none, so a clean
    answer's key is the one it had before flags were shown): the validity stamp of one stored
    verdict (a calibration item's too)."""
    shown = {
        "language": pack.language,
        "scale": {str(k): v for k, v in sorted(pack.scale.items())},
        "prompt": prompt.model_dump(
            mode="json",
            include={
                "id",
                "prompt",
                "tests",
                "red_flags",
                "green_flags",
                "format_strict",
                "safety_critical",
            },
        ),
        "variant": variant.model_dump(mode="json"),
    }
    parts = [judge_identity(spec, repeats), TEMPLATE_VERSION, shown, answer_text]
    flagged = shown_flags(flags)
    return _sha256([*parts, flagged] if flagged else parts)


def report_cache_key(
    spec: JudgeSpec,
    pack_sha256: str,
    model: str,
    variant: str,
    verdicts: Iterable[Mapping[str, Any]],
    repeats: int = 1,
    template: HolisticTemplate = DEFAULT_HOLISTIC_TEMPLATE,
) -> str:
    """sha256 hex of (judge identity, TEMPLATE_VERSION, pack sha256, model, variant,
    evidence[, holistic template]): the validity stamp of one stored holistic report;
    ``verdicts`` are the stored verdict records (dicts) of that (model, variant), in any
    order; ``template`` other than ``v1`` is hashed too."""
    evidence = sorted(
        (
            [
                str(v.get("key")),
                str(v.get("cache_key")),
                v.get("score"),
                bool(v.get("red_flag")),
                str(v.get("status")),
            ]
            for v in verdicts
        ),
        key=lambda item: (item[0], item[1]),
    )
    parts: list[Any] = [
        judge_identity(spec, repeats),
        TEMPLATE_VERSION,
        pack_sha256,
        model,
        variant,
        evidence,
    ]
    return _sha256(parts if template == "v1" else [*parts, f"holistic/{template}"])
