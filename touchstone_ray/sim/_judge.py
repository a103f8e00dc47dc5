"""Judge mode: a schema-valid JSON verdict generated from the request's JSON schema.

A request is in judge mode when it carries OpenAI ``response_format`` of type ``json_schema``
(or ``json_object``) or an Ollama ``format`` (a schema, or ``"json"``). The reply is one JSON
document valid against that schema, built generically (object properties and ``required``,
``$ref``/``$defs``, ``anyOf``/``oneOf``, enum, const, integer/number with minimum/maximum,
boolean, string with min/maxLength, arrays with min/maxItems, null).

What the values mean:

- ``score`` (an integer, at any depth, e.g. per dimension ``{"Q1": {"score": …}}``):
  ``round(1 + 4q + noise)`` clipped to the schema's bounds, where ``q`` is the quality marker
  ``⟦sim q=…⟧`` found in the *real* answer block of the last user message and ``noise`` is a
  deterministic triangular value in ±1 from (seed, request, property path); no marker → 3.
- The real answer block is the text between the first line ``<<<ANSWER-xxxx>>>`` and the first
  later line ``<<<END-xxxx>>>`` with the same ``xxxx`` (the judge's per-call random
  delimiters). A fake END line or a fake verdict inside the answer moves nothing; of several
  markers inside the block the last counts (the simulator appends the real one last).
- A holistic request (no answer block) reads its quality from the per-answer scores listed in
  its ``<<<EVIDENCE-xxxx>>>`` block (lines ``#<repeat>: <label> <score>``): ``q = (mean − 1)/4``.
- The random delimiter tokens do not enter the noise, so a rerun gives the same verdicts.
- ``red_flag`` booleans are true when q ≤ 0.1 (a plainly bad answer), otherwise with
  probability (1 − q) × 0.3, deterministic.
- ``red_flags_hit`` names the first red flag label of the request (``R1``, the judge prompt's
  numbering) when ``red_flag`` is true; ``green_flags_hit`` names green flag labels (``G1``…)
  when q ≥ 0.6; both empty when the request lists no such flags.
- ``rationale`` strings are short German sentences naming a prompt id like ``[B3]`` if the
  request contains one.
- ``constant_score`` (the ``judge_constant_score`` knob) makes a degenerate judge: every score
  that value, every ``red_flag`` false, every array (flags, cited prompts) as short as the
  schema allows, every rationale ``"ok"``.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any

from touchstone_ray.sim._text import digest, find_marker, last_user_text, message_text, rng_for

DEFAULT_VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
        "red_flag": {"type": "boolean"},
        "rationale": {"type": "string"},
    },
    "required": ["score", "red_flag", "rationale"],
}
"""Used for Ollama ``format: "json"`` and OpenAI ``response_format: {"type": "json_object"}``:
the per-answer verdict of SPEC §10."""

_START_RE = re.compile(r"<<<ANSWER-([A-Za-z0-9_-]+)>>>")
_EVIDENCE_RE = re.compile(r"<<<EVIDENCE-([A-Za-z0-9_-]+)>>>")
_EVIDENCE_SCORE_RE = re.compile(r"#\d+: \S+ ([1-5])\b")
_TOKEN_RE = re.compile(r"<<<(ANSWER|END|EVIDENCE)-[A-Za-z0-9_-]+>>>")
_PROMPT_ID_RE = re.compile(r"\[([A-Z][0-9]{1,2})\]")
_FLAG_LABEL_RE = re.compile(r"^([RG][0-9]{1,3})\. ", re.MULTILINE)
CONSTANT_RATIONALE = "ok"
"""Every rationale of a judge with ``judge_constant_score``."""
_PHRASES = (
    "klar formuliert",
    "knapp und konkret",
    "teilweise vage",
    "gut strukturiert",
    "Ton angemessen",
    "Format eingehalten",
)


def fenced_answer(text: str, start_re: re.Pattern[str] = _START_RE) -> str | None:
    """The text inside the first real delimiter pair of ``text``, or None."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        start = start_re.fullmatch(line.strip())
        if start is None:
            continue
        end = f"<<<END-{start.group(1)}>>>"
        for j in range(i + 1, len(lines)):
            if lines[j].strip() == end:
                return "\n".join(lines[i + 1 : j])
    return None


def judged_quality(messages: list[Any]) -> float | None:
    """The quality marker inside the real answer block of the last user message, or None."""
    text = last_user_text(messages)
    block = fenced_answer(text)
    if block is not None:
        return find_marker(block)
    evidence = fenced_answer(text, _EVIDENCE_RE)
    scores = [int(m) for m in _EVIDENCE_SCORE_RE.findall(evidence or "")]
    return (sum(scores) / len(scores) - 1) / 4 if scores else None


def judge_schema(body: dict[str, Any], protocol: str) -> dict[str, Any] | None:
    """The JSON schema a request asks for, or None when it is not in judge mode."""
    if protocol == "ollama":
        fmt = body.get("format")
        if isinstance(fmt, dict):
            return fmt
        return DEFAULT_VERDICT_SCHEMA if fmt == "json" else None
    rf = body.get("response_format")
    if not isinstance(rf, dict):
        return None
    if rf.get("type") == "json_schema":
        spec = rf.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        return schema if isinstance(schema, dict) else DEFAULT_VERDICT_SCHEMA
    return DEFAULT_VERDICT_SCHEMA if rf.get("type") == "json_object" else None


@dataclass
class _Ctx:
    root: dict[str, Any]
    seed: int
    key: str
    quality: float | None
    prompt_ids: list[str]
    rng: random.Random
    labels: list[str]
    constant: int | None = None
    red_flag: bool | None = None


def verdict_json(
    schema: dict[str, Any],
    *,
    seed: int,
    model: str,
    messages: list[Any],
    constant_score: int | None = None,
    sampling: Any = None,
) -> str:
    """One JSON document valid against ``schema`` (see the module docstring for the values);
    ``sampling`` (``_text.sampling_key``: ``None`` when greedy, else temperature and request
    seed) varies the noise, so a judge asked again with another seed at temperature > 0 may
    answer differently, and a greedy one never does."""
    stable = [
        {**m, "content": _TOKEN_RE.sub("<<<TOKEN>>>", message_text(m.get("content")))}
        if isinstance(m, dict)
        else m
        for m in messages
    ]
    key = (
        digest("judge", seed, model, stable)
        if sampling is None
        else digest("judge", seed, model, stable, sampling)
    )
    all_text = "\n".join(message_text(m.get("content")) for m in messages if isinstance(m, dict))
    ids = list(dict.fromkeys(_PROMPT_ID_RE.findall(all_text)))
    labels = _FLAG_LABEL_RE.findall(last_user_text(messages))
    ctx = _Ctx(
        schema,
        seed,
        key,
        judged_quality(messages),
        ids,
        rng_for("judge-values", key),
        labels,
        constant_score,
    )
    return json.dumps(_gen(schema, "", ctx, "$"), ensure_ascii=False)


def _resolve(schema: dict[str, Any], ctx: _Ctx) -> dict[str, Any]:
    hops = 0
    while "$ref" in schema and hops < 32:
        hops += 1
        ref = str(schema["$ref"])
        node: Any = ctx.root
        for part in ref.lstrip("#").strip("/").split("/"):
            if part:
                node = node.get(part.replace("~1", "/").replace("~0", "~"), {})
        schema = node if isinstance(node, dict) else {}
    for combo in ("anyOf", "oneOf"):
        options = schema.get(combo)
        if isinstance(options, list) and options:
            real = [o for o in options if isinstance(o, dict) and o.get("type") != "null"]
            return _resolve(real[0] if real else options[0], ctx)
    if isinstance(schema.get("allOf"), list):
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            merged.update(_resolve(part, ctx))
        return merged
    return schema


def _type_of(schema: dict[str, Any]) -> str:
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if isinstance(t, str):
        return t
    if "properties" in schema:
        return "object"
    return "array" if "items" in schema else "string"


def _bounds(schema: dict[str, Any], lo: float, hi: float) -> tuple[float, float]:
    lo = float(schema.get("minimum", lo))
    hi = float(schema.get("maximum", max(hi, lo)))
    if isinstance(schema.get("exclusiveMinimum"), int | float):
        lo = float(schema["exclusiveMinimum"]) + 1
    if isinstance(schema.get("exclusiveMaximum"), int | float):
        hi = float(schema["exclusiveMaximum"]) - 1
    return lo, max(lo, hi)


def _score(schema: dict[str, Any], ctx: _Ctx, path: str) -> int:
    lo, hi = _bounds(schema, 1, 5)
    if ctx.constant is not None:
        raw = ctx.constant
    elif ctx.quality is None:
        raw = 3
    else:
        noise = rng_for("score", ctx.seed, ctx.key, path).triangular(-1.0, 1.0, 0.0)
        raw = round(1 + 4 * ctx.quality + noise)
    return int(min(hi, max(lo, raw)))


def _rationale(ctx: _Ctx) -> str:
    if ctx.constant is not None:
        return CONSTANT_RATIONALE
    q = 0.5 if ctx.quality is None else ctx.quality
    verdict = "überzeugend" if q >= 0.75 else "brauchbar" if q >= 0.45 else "lückenhaft"
    ids = " und ".join(f"[{i}]" for i in ctx.prompt_ids[:2])
    about = f"Die Antwort zu {ids}" if ids else "Die Antwort"
    return f"{about} ist {verdict}; {ctx.rng.choice(_PHRASES)}."


def _gen(schema: Any, name: str, ctx: _Ctx, path: str) -> Any:
    if not isinstance(schema, dict):
        return None
    schema = _resolve(schema, ctx)
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return ctx.rng.choice(schema["enum"])
    kind = _type_of(schema)
    if kind == "object":
        props = schema.get("properties")
        out: dict[str, Any] = {}
        if isinstance(props, dict):
            for prop, sub in props.items():
                out[prop] = _gen(sub, prop, ctx, f"{path}.{prop}")
        return out
    if kind == "integer":
        if name == "score":
            return _score(schema, ctx, path)
        lo, hi = _bounds(schema, 0, 10)
        return ctx.rng.randint(int(lo), int(hi))
    if kind == "number":
        if name == "score":
            return float(_score(schema, ctx, path))
        lo, hi = _bounds(schema, 0, 1)
        return round(ctx.rng.uniform(lo, hi), 2)
    if kind == "boolean":
        if name == "red_flag":
            q = 0.5 if ctx.quality is None else ctx.quality
            draw = rng_for("red_flag", ctx.seed, ctx.key, path).random()
            ctx.red_flag = ctx.constant is None and (q <= 0.1 or draw < (1 - q) * 0.3)
            return ctx.red_flag
        return ctx.rng.random() < 0.5
    if kind == "array" and name in ("red_flags_hit", "green_flags_hit"):
        return _flag_labels(name, schema, ctx)
    if kind == "array":
        lo_n = int(schema.get("minItems", 0))
        hi_n = int(schema.get("maxItems", lo_n + 2))
        n = ctx.rng.randint(lo_n, hi_n) if ctx.constant is None else lo_n
        return [_gen(schema.get("items", {}), name, ctx, f"{path}[{i}]") for i in range(n)]
    if kind == "null":
        return None
    text = _rationale(ctx) if name == "rationale" else ctx.rng.choice(_PHRASES)
    min_len = int(schema.get("minLength", 0))
    text = text.ljust(min_len, ".")
    return text[: int(schema["maxLength"])] if "maxLength" in schema else text


def _flag_labels(name: str, schema: dict[str, Any], ctx: _Ctx) -> list[str]:
    """Flag labels of the request for ``red_flags_hit`` / ``green_flags_hit`` (see above)."""
    q = 0.5 if ctx.quality is None else ctx.quality
    if name == "red_flags_hit":
        named = [x for x in ctx.labels if x.startswith("R")][:1] if ctx.red_flag else []
    else:
        greens = [x for x in ctx.labels if x.startswith("G")]
        named = greens if ctx.constant is None and q >= 0.6 else []
    lo_n = int(schema.get("minItems", 0))
    named += [ctx.rng.choice(_PHRASES) for _ in range(lo_n - len(named))]
    return named[: int(schema["maxItems"])] if "maxItems" in schema else named
