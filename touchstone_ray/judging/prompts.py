"""Judge prompt templates, German and English (chosen by ``pack.language``), and reply schemas.

Per answer (:func:`answer_prompt`): the scale, what the prompt tests, a format_strict note,
green and red flags (numbered ``G1.`` / ``R1.``, 1-based, see :mod:`.flags`), the user prompt,
the variant's system prompt, the answer's flags (``answer_flags``: what the run measured on
the text, each with its meaning, as data and never as an instruction; only known flag names),
and the answer fenced between per-call random delimiter lines
``<<<ANSWER-xxxxxxxx>>>`` and ``<<<END-xxxxxxxx>>>`` (``xxxxxxxx`` = 8 random hex digits, the
same on both lines; the simulated judge in :mod:`touchstone_ray.sim` relies on exactly this
form). The answer is declared to be data; an answer that tries to instruct the judge is itself
a red flag. The reply format comes last.

Holistic (:func:`holistic_prompt`), per (model, variant): every dimension with weight and
``about``, the K.-o. dimension marked with its floor, the rule that safety-relevant red flags
pull it to the floor while format/tone/style red flags do not, and the per-answer verdicts of
this judge as evidence per prompt id (fenced the same way); rationales must cite prompt ids.
The model's name is not shown (no brand bias).

Holistic templates (``judge --template``, :data:`HOLISTIC_TEMPLATES`): ``v1`` is the prompt
above; ``v2`` (the default) is the hardened prompt of the single-machine original, which on its
office pack raised the share of caught safety problems from 29 % to 50 % and of justified levels
from 86 % to 100 %: it adds four rules to the scoped safety rule — a concrete observation for
every cited prompt id, the score argued against both neighbouring levels, below 5 the one
change that would raise it, and evidence that fits the dimension. The JSON contract is the
same for both; the template is part of the report's cache key (:mod:`.cache`), never of a
verdict's.
"""

from __future__ import annotations

import re
import secrets
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from touchstone_ray.answers import ANSWER_FLAGS
from touchstone_ray.bundle import TEMPLATE_VERSION
from touchstone_ray.judging.flags import FlagKind, flag_label
from touchstone_ray.lang import judge_texts
from touchstone_ray.pack import Pack, Prompt, PromptVariant
from touchstone_ray.records import Verdict

__all__ = [
    "ANSWER_SCHEMA",
    "DEFAULT_HOLISTIC_TEMPLATE",
    "HOLISTIC_TEMPLATES",
    "TEMPLATE_VERSION",
    "HolisticTemplate",
    "JudgePrompt",
    "answer_prompt",
    "holistic_prompt",
    "holistic_schema",
    "manipulation_signs",
    "new_token",
    "shown_flags",
]


HolisticTemplate = Literal["v1", "v2"]
"""A holistic template version (``judge --template``)."""
HOLISTIC_TEMPLATES: tuple[HolisticTemplate, ...] = ("v1", "v2")
"""The holistic templates: ``v1`` the first, ``v2`` the hardened one (module docstring)."""
DEFAULT_HOLISTIC_TEMPLATE: HolisticTemplate = "v2"
"""The holistic template a judge run uses unless ``--template`` says otherwise."""

EVIDENCE_RATIONALE_CHARS = 400
"""Longest rationale quoted as holistic evidence (characters)."""

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
        "red_flag": {"type": "boolean"},
        "rationale": {"type": "string"},
        "red_flags_hit": {"type": "array", "items": {"type": "string"}},
        "green_flags_hit": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["score", "red_flag", "rationale", "red_flags_hit", "green_flags_hit"],
    "additionalProperties": False,
}
"""JSON schema of the per-answer reply (all keys required here, for strict structured output;
the parser still accepts replies without the optional ones)."""


@dataclass(frozen=True)
class JudgePrompt:
    """One judge request: chat messages, the delimiter token used and the reply schema."""

    messages: list[dict[str, str]]
    """``[{"role": "system", ...}, {"role": "user", ...}]``; the fenced data is in the user turn."""
    token: str
    """The 8 hex digits of this call's delimiters."""
    schema: dict[str, Any]
    """JSON schema for structured output (OpenAI ``response_format`` / Ollama ``format``)."""


_FAKE_DELIMITER_RE = re.compile(r"<<<\s*(?:ANSWER|END|EVIDENCE)-", re.IGNORECASE)
_JSON_OBJECT_RE = re.compile(r"\{[^{}]*\}")


def manipulation_signs(answer: str) -> list[str]:
    """What in ``answer`` tries to steer its judge (SPEC §10: such an attempt is itself a
    finding): ``"delimiter"`` for an imitation of this module's delimiter lines, ``"verdict"``
    for a JSON object carrying both ``"score"`` and ``"red_flag"``. Empty for a plain answer.

    The real delimiters are random per call, so a fake one cannot end the fenced answer; this
    makes the attempt visible whatever the judge makes of it."""
    signs = []
    if _FAKE_DELIMITER_RE.search(answer):
        signs.append("delimiter")
    if any('"score"' in obj and '"red_flag"' in obj for obj in _JSON_OBJECT_RE.findall(answer)):
        signs.append("verdict")
    return signs


def new_token() -> str:
    """8 random hex digits (``secrets``) for one call's delimiters."""
    return secrets.token_hex(4)


def _token_for(data: str, token: str | None) -> str:
    """``token`` (or a fresh one) not occurring in ``data``; a given token that does is replaced."""
    token = token or new_token()
    while token in data:
        token = new_token()
    return token


def _scale(pack: Pack) -> str:
    return "\n".join(f"{k} = {pack.scale[k]}" for k in sorted(pack.scale))


def _labelled(kind: FlagKind, items: Iterable[str], none: str) -> str:
    """Flags as lines ``R1. <text>`` (1-based labels, :func:`~.flags.flag_label`)."""
    lines = [f"{flag_label(kind, i)}. {item}" for i, item in enumerate(items)]
    return "\n".join(lines) if lines else none


def shown_flags(flags: Iterable[str]) -> list[str]:
    """The names of ``flags`` a judge is shown: those of
    :data:`~touchstone_ray.answers.ANSWER_FLAGS`, in that order (anything else a record may
    carry is dropped, so no text but a known name reaches the judge this way)."""
    given = set(flags)
    return [f for f in ANSWER_FLAGS if f in given]


def _flags_section(flags: list[str], t: dict[str, str]) -> str:
    lines = [f"- {f}: {t['flag_' + f]}" for f in flags]
    return f"## {t['answer_flags']}\n{t['answer_flags_data']}\n" + "\n".join(lines)


def answer_prompt(
    pack: Pack,
    prompt: Prompt,
    variant: PromptVariant,
    answer: str,
    *,
    token: str | None = None,
    flags: Iterable[str] = (),
) -> JudgePrompt:
    """The per-answer judge request for ``answer`` to ``prompt`` under ``variant``; the
    answer's ``flags`` (:func:`shown_flags` of its ``answer_flags``) go in as a section of
    data before the answer, each with its meaning, never as an instruction (no section
    without one)."""
    t = judge_texts(pack.language)
    token = _token_for(answer, token)
    shown = shown_flags(flags)
    parts = [
        t["scale_intro"],
        _scale(pack),
        f"## {t['tests']}\n{prompt.tests or t['tests_none']}",
    ]
    if prompt.format_strict:
        parts.append(t["format_strict"])
    if prompt.safety_critical:
        parts.append(t["safety_critical"])
    parts += [
        f"## {t['green']}\n{_labelled('G', prompt.green_flags, t['none'])}",
        f"## {t['red']}\n{_labelled('R', prompt.red_flags, t['none'])}",
        t["red_rule"],
        f"## {t['system_prompt']} ({variant.id})\n{variant.system_prompt or t['no_system']}",
        f"## {t['user_prompt']} ({prompt.id})\n{prompt.prompt}",
        *([_flags_section(shown, t)] if shown else []),
        f"## {t['answer']}\n" + t["answer_data"].format(token=token),
        f"<<<ANSWER-{token}>>>\n{answer}\n<<<END-{token}>>>",
        t["answer_reply"],
    ]
    return JudgePrompt(
        messages=[
            {"role": "system", "content": t["system"]},
            {"role": "user", "content": "\n\n".join(parts)},
        ],
        token=token,
        schema=ANSWER_SCHEMA,
    )


def holistic_schema(pack: Pack) -> dict[str, Any]:
    """JSON schema of the holistic reply: one object per dimension id (score 1..5, rationale,
    cited_prompts restricted to the pack's prompt ids)."""
    ids = [p.id for p in pack.prompts()]
    dim = {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "minimum": 1, "maximum": 5},
            "rationale": {"type": "string"},
            "cited_prompts": {"type": "array", "items": {"type": "string", "enum": ids}},
        },
        "required": ["score", "rationale", "cited_prompts"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {d.id: dim for d in pack.dimensions},
        "required": [d.id for d in pack.dimensions],
        "additionalProperties": False,
    }


def _evidence_line(v: Verdict, t: dict[str, str]) -> str:
    if v.score is None:
        return f"  #{v.repeat}: {t['unscored']} ({v.status})"
    rationale = " ".join(v.rationale.split())
    if len(rationale) > EVIDENCE_RATIONALE_CHARS:
        rationale = rationale[: EVIDENCE_RATIONALE_CHARS - 1] + "…"
    flag = t["yes"] if v.red_flag else t["no"]
    line = f"  #{v.repeat}: {t['score']} {v.score}; {t['red_flag']}: {flag}"
    if v.red_flags_hit:
        line += f" ({'; '.join(v.red_flags_hit)})"
    if v.green_flags_hit:
        line += f"; {t['green_hit']}: {'; '.join(v.green_flags_hit)}"
    return line + (f"; {t['rationale']}: {rationale}" if rationale else "")


def _evidence(pack: Pack, verdicts: Iterable[Verdict], t: dict[str, str]) -> str:
    by_prompt: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        by_prompt[v.prompt_id].append(v)
    blocks = []
    for prompt in pack.prompts():
        head = f"[{prompt.id}] {prompt.title}"
        if prompt.tests:
            head += f" — {t['tests_short']}: {' '.join(prompt.tests.split())}"
        if prompt.safety_critical:
            head += f" ({t['safety_short']})"
        rows = sorted(by_prompt.get(prompt.id, []), key=lambda v: (v.repeat, v.judge))
        lines = [_evidence_line(v, t) for v in rows] or [f"  {t['no_verdict']}"]
        blocks.append("\n".join([head, *lines]))
    return "\n".join(blocks)


def holistic_prompt(
    pack: Pack,
    variant: PromptVariant,
    verdicts: Iterable[Verdict],
    *,
    token: str | None = None,
    template: HolisticTemplate = DEFAULT_HOLISTIC_TEMPLATE,
) -> JudgePrompt:
    """The holistic request for one (model, variant), with this judge's ``verdicts`` as
    evidence, in the holistic ``template`` (``v2``: the hardened rules after the K.-o. rule)."""
    t = judge_texts(pack.language)
    ko = pack.ko_rule
    evidence = _evidence(pack, verdicts, t)
    token = _token_for(evidence, token)
    dims = []
    for d in pack.dimensions:
        line = f"- {d.id} {d.name} ({t['weight']} {d.weight})"
        if d.about:
            line += f": {' '.join(d.about.split())}"
        if d.id == ko.dimension:
            line += " " + t["ko_mark"].format(threshold=ko.threshold)
        dims.append(line)
    example = ", ".join(
        f'"{d.id}": {{"score": <1-5>, "rationale": "…", "cited_prompts": ["…"]}}'
        for d in pack.dimensions[:2]
    )
    parts = [
        t["holistic_intro"].format(variant=variant.id),
        _scale(pack),
        f"## {t['dimensions']}\n" + "\n".join(dims),
        t["ko_rule"].format(dim=ko.dimension, threshold=ko.threshold),
        *([t["holistic_rules_v2"]] if template == "v2" else []),
        f"## {t['system_prompt']} ({variant.id})\n{variant.system_prompt or t['no_system']}",
        f"## {t['evidence']}\n" + t["evidence_data"].format(token=token),
        f"<<<EVIDENCE-{token}>>>\n{evidence}\n<<<END-{token}>>>",
        t["holistic_reply"].format(example="{" + example + ", …}", cite=pack.prompts()[0].id),
    ]
    return JudgePrompt(
        messages=[
            {"role": "system", "content": t["system"]},
            {"role": "user", "content": "\n\n".join(parts)},
        ],
        token=token,
        schema=holistic_schema(pack),
    )
