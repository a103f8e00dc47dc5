"""The server-side diagnosis of a chat template, before the run (issue 28 item 2).

A server whose chat template does not fit its model lets the model write the template's control
markers as plain text (``template_leak``) and repeat the prompt (``prompt_echo``): llama.cpp
falls back to ChatML for a GGUF without a template, and a model that never saw
``<|im_start|>`` does not know it as a token. So per endpoint:

1. the template the server applies (:meth:`~touchstone_ray.engines.base.Engine.chat_template`:
   llama.cpp ``/props`` ``chat_template`` and ``chat_template_caps``, Ollama ``/api/show``
   ``template``) and the marker families its text uses
   (:func:`~touchstone_ray.answers.template_families`);
2. where the server has a tokenizer (llama.cpp ``/tokenize`` with special tokens parsed,
   :meth:`~touchstone_ray.engines.base.Engine.token_counts`): how many tokens every known
   marker is for the served model. A marker of the template that is more than one token is
   unknown to the model; the families whose markers are all single tokens are the model's own,
   and the first of them with a llama.cpp name gives the flag to pass
   (:data:`~touchstone_ray.answers.LLAMACPP_TEMPLATES`).

The result is a :class:`~touchstone_ray.bundle.TemplateCheck` (stored in ``bundle.json``
``servers.<model>.template``);
:func:`~touchstone_ray.fleet.preflight.template_warning` is its one line before the run.
"""

from __future__ import annotations

import hashlib
from typing import Any

from touchstone_ray.answers import LLAMACPP_TEMPLATES, TEMPLATE_MARKERS, template_families
from touchstone_ray.bundle import TemplateCheck
from touchstone_ray.engines.base import Engine
from touchstone_ray.errors import one_line

__all__ = ["FALLBACK_FIX", "check_template", "diagnose_template"]

FALLBACK_FIX = "--jinja with a GGUF that carries its chat template, or --chat-template-file FILE"
"""The llama.cpp flag named when the model's own template family has no built-in name."""

_MARKERS: tuple[str, ...] = tuple(m for markers in TEMPLATE_MARKERS.values() for m in markers)


def diagnose_template(
    source: str, template: str, caps: Any, marker_tokens: dict[str, int] | None
) -> TemplateCheck:
    """The check of ``template`` (its text as ``source`` sent it, with the server's ``caps``)
    given ``marker_tokens`` (every known marker → its token count by the served model's
    tokenizer; ``None``: no tokenizer, so only the families are named). A template that is a
    llama.cpp built-in name (``/props`` shows ``gemma`` after ``--chat-template gemma``) stands
    for every marker of its family."""
    named = [f for f, name in LLAMACPP_TEMPLATES.items() if name == template.strip()]
    families = named or template_families(template)
    check = TemplateCheck(
        source=source,
        template_sha256=hashlib.sha256(template.encode("utf-8")).hexdigest(),
        template_chars=len(template),
        caps=caps if isinstance(caps, dict | list) else None,
        families=families,
    )
    if marker_tokens is None:
        return check
    used = [m for f in families for m in TEMPLATE_MARKERS[f] if named or m in template]
    unknown = [m for m in used if marker_tokens.get(m, 0) != 1]
    own = [
        f
        for f, markers in TEMPLATE_MARKERS.items()
        if all(marker_tokens.get(m) == 1 for m in markers)
    ]
    check.marker_tokens = marker_tokens
    check.unknown_markers = unknown
    check.model_families = own
    if unknown:
        names = [LLAMACPP_TEMPLATES[f] for f in own if f in LLAMACPP_TEMPLATES]
        check.fix = f"--chat-template {names[0]}" if names else FALLBACK_FIX
    return check


async def check_template(engine: Engine, model: str) -> TemplateCheck | None:
    """Read the template ``engine``'s server applies to ``model`` and check its markers
    (module docstring). ``None`` when the server does not show its template; a server that
    fails on the way gives a check with ``error`` (never raises for an HTTP failure)."""
    try:
        shown = await engine.chat_template(model)
        if shown is None:
            return None
        counts = await engine.token_counts(list(_MARKERS))
    except Exception as exc:
        return TemplateCheck(error=one_line(f"{type(exc).__name__}: {exc}"))
    tokens = dict(zip(_MARKERS, counts, strict=True)) if counts is not None else None
    return diagnose_template(str(shown["source"]), str(shown["template"]), shown["caps"], tokens)
