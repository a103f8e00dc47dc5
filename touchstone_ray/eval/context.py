"""The start-of-run context check (SPEC §4 ``context_tokens``, §6 ``--allow-cut``).

Per model: the configured ``context_tokens`` must not exceed what the server itself allows
(llama.cpp ``n_ctx`` of one slot, ``max_model_len`` where ``/v1/models`` lists it, LM Studio's
loaded context); the context a cell has is the smaller of the two known values. Then every
distinct prompt (variant × prompt) is counted on the model's host
(:meth:`HostClient.count_prompts`) and a prompt whose tokens + ``max_tokens`` exceed that
context stops the run before any request, unless ``--allow-cut``. The check runs per host as
soon as that host's preflight lands (:mod:`touchstone_ray.eval.startup`) and gates only that
host's cells.

A server that takes the context per request (Ollama ``options.num_ctx``,
:attr:`~touchstone_ray.engines.base.Engine.sends_context`) and is given none uses its own
default and silently drops the front of a longer prompt. So such a model always gets one
(:class:`ModelContext`, recorded per model in ``bundle.json`` ``models[].context``): the
configured ``context_tokens`` (or ``extra_body.options.num_ctx``), else the model's own context
length from the server (Ollama ``/api/show``), else what its prompts need
(:func:`~touchstone_ray.fleet.prompts.context_need`: the largest prompt count plus its
``max_tokens``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

from touchstone_ray.config import ModelSpec
from touchstone_ray.errors import ConfigError, UsageError
from touchstone_ray.eval.matrix import ModelPlan
from touchstone_ray.fleet import Cell
from touchstone_ray.fleet.prompts import context_need
from touchstone_ray.pack import Pack

ContextSource = Literal["configured", "extra_body", "server", "model", "prompts"]
"""Where a model's context comes from: ``context_tokens``, ``extra_body.options.num_ctx``, the
server's own per-request limit, the model's context length as the server reports it, or what
the prompts need."""

COUNT_TIMEOUT_S = 120.0
"""How long counting one model's prompts may take (s)."""


def context_for(label: str, configured: int | None, server_limit: int | None) -> int | None:
    """The context a cell of model ``label`` has (tokens): the smaller known value.

    Raises :class:`ConfigError` when ``configured`` exceeds ``server_limit``."""
    if configured is not None and server_limit is not None and configured > server_limit:
        raise ConfigError(
            f"models: {label}: context_tokens {configured} is more than the server allows "
            f"({server_limit} tokens per request); lower context_tokens or restart the server "
            "with a larger context"
        )
    known = [n for n in (configured, server_limit) if n is not None]
    return min(known) if known else None


def distinct_prompts(plan: ModelPlan, pack: Pack) -> list[Cell]:
    """The first cell of each (variant, prompt) of ``plan``, in run order."""
    seen: dict[tuple[str, str], Cell] = {}
    for cell in plan.cells(pack):
        seen.setdefault((cell.variant, cell.prompt_id), cell)
    return list(seen.values())


def overflowing(
    cells: list[Cell], counts: dict[str, tuple[int, str]], limit: int | None
) -> list[tuple[Cell, int, str]]:
    """``(cell, prompt tokens, count source)`` of the cells whose prompt + ``max_tokens``
    exceeds ``limit`` tokens (none when the limit is unknown)."""
    if limit is None:
        return []
    out = []
    for cell in cells:
        tokens, source = counts[f"{cell.variant}|{cell.prompt_id}"]
        if tokens + (cell.max_tokens or 0) > limit:
            out.append((cell, tokens, source))
    return out


def overflow_line(label: str, cell: Cell, tokens: int, source: str, limit: int) -> str:
    """The one line that stops the run for a prompt that does not fit."""
    cap = cell.max_tokens or 0
    return (
        f"{label}: prompt {cell.prompt_id} (variant {cell.variant}) does not fit the context: "
        f"{tokens} prompt tokens ({source}) + max_tokens {cap} = {tokens + cap} > context "
        f"{limit}; raise context_tokens or pass --allow-cut"
    )


@dataclass(frozen=True)
class ModelContext:
    """The context of one model's cells, as chosen at the start of the run."""

    tokens: int | None
    """The context a cell has (tokens); ``None`` unknown (nothing sent, nothing checked)."""
    source: ContextSource | None
    """Where :attr:`tokens` comes from (:data:`ContextSource`); ``None`` when unknown."""
    server_limit: int | None
    """The server's own per-request limit (tokens), ``None`` when it does not say."""
    per_request: bool
    """The server takes the context per request (Ollama ``options.num_ctx``)."""

    @property
    def sent(self) -> bool:
        """:attr:`tokens` goes out with every request."""
        return self.per_request and self.tokens is not None

    def manifest_entry(self) -> dict[str, Any]:
        """``bundle.json`` ``models[].context``: ``{tokens, source, sent}``."""
        return {"tokens": self.tokens, "source": self.source, "sent": self.sent}


def configured_context(spec: ModelSpec, per_request: bool) -> tuple[int | None, ContextSource]:
    """The context the config gives ``spec`` (tokens) and its source: ``context_tokens``, else
    (``per_request`` servers) an int ``extra_body.options.num_ctx``, which wins in the request
    body (:attr:`~touchstone_ray.engines.base.ChatRequest.context_tokens`)."""
    options = spec.extra_body.get("options")
    num_ctx = options.get("num_ctx") if isinstance(options, dict) else None
    if per_request and isinstance(num_ctx, int) and not isinstance(num_ctx, bool) and num_ctx > 0:
        return num_ctx, "extra_body"
    return spec.context_tokens, "configured"


def model_limit(plan: ModelPlan, preflight_entry: dict[str, Any]) -> ModelContext:
    """The context of ``plan``'s model before its prompts are counted, from its host's
    preflight entry (``context_limit``, ``sends_context``, ``model_context_length``; each
    ``None``/absent when not known): the configured one (:func:`configured_context`) capped by
    the server's limit (:func:`context_for`), else for a server that takes the context per
    request the model's own context length. Raises :class:`ConfigError` for a configured
    context above the server's limit."""
    server_limit = preflight_entry.get("context_limit")
    sent = bool(preflight_entry.get("sends_context"))
    configured, source = configured_context(plan.spec, sent)
    tokens = context_for(plan.label, configured, server_limit)
    chosen: ContextSource | None = None
    if configured is not None:
        chosen = source
    elif tokens is not None:
        chosen = "server"
    elif sent and preflight_entry.get("model_context_length") is not None:
        tokens, chosen = int(preflight_entry["model_context_length"]), "model"
    return ModelContext(tokens, chosen, server_limit, sent)


def with_prompt_need(
    context: ModelContext, cells: list[Cell], counts: dict[str, tuple[int, str]]
) -> ModelContext:
    """``context``, or for a server that takes the context per request and has none yet, what
    the counted prompts need (:func:`~touchstone_ray.fleet.prompts.context_need` over
    ``cells`` and their ``counts``, as :meth:`HostClient.count_prompts` returns them); the host's
    client applies the same rule to what it sends."""
    if context.tokens is not None or not context.per_request:
        return context
    need = context_need((counts[f"{c.variant}|{c.prompt_id}"][0], c.max_tokens) for c in cells)
    return replace(context, tokens=need, source="prompts" if need is not None else None)


def context_entry(
    plan: ModelPlan,
    cells: list[Cell],
    counts: dict[str, tuple[int, str]],
    context: ModelContext,
    allow_cut: bool,
) -> dict[str, Any]:
    """The events-log entry of one model's check, ``{context_tokens, context_source,
    context_sent, server_limit, n_prompts, n_over}``, from the prompt ``counts`` of its
    :func:`distinct_prompts` ``cells`` (as :meth:`HostClient.count_prompts` returns them) and
    :func:`model_limit`'s ``context`` (:func:`with_prompt_need` applied).

    Raises :class:`UsageError` (exit 2) for a prompt that does not fit, unless ``allow_cut``."""
    context = with_prompt_need(context, cells, counts)
    limit = context.tokens
    over = overflowing(cells, counts, limit)
    if over and limit is not None and not allow_cut:
        raise UsageError(overflow_line(plan.label, *over[0], limit))
    return {
        "context_tokens": limit,
        "context_source": context.source,
        "context_sent": context.sent,
        "server_limit": context.server_limit,
        "n_prompts": len(cells),
        "n_over": len(over),
    }
