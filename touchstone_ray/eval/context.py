"""The start-of-run context check (SPEC §4 ``context_tokens``, §6 ``--allow-cut``).

Per model: the configured ``context_tokens`` must not exceed what the server itself allows
(llama.cpp ``n_ctx`` of one slot, vLLM ``max_model_len``, LM Studio's loaded context); the
context a cell has is the smaller of the two known values. Then every distinct prompt
(variant × prompt) is counted on the model's host (:meth:`HostClient.count_prompts`) and a
prompt whose tokens + ``max_tokens`` exceed that context stops the run before any request,
unless ``--allow-cut``. The check runs per host as soon as that host's preflight lands
(:mod:`touchstone_ray.eval.startup`) and gates only that host's cells.
"""

from __future__ import annotations

from typing import Any

from touchstone_ray.errors import ConfigError, UsageError
from touchstone_ray.eval.matrix import ModelPlan
from touchstone_ray.fleet import Cell
from touchstone_ray.pack import Pack

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


def model_limit(plan: ModelPlan, preflight_entry: dict[str, Any]) -> tuple[int | None, int | None]:
    """``(context a cell has, the server's own limit)`` in tokens of ``plan``'s model, from its
    host's preflight entry (``context_limit``; ``None`` when not known). Raises
    :class:`ConfigError` for a configured context above the server's (:func:`context_for`)."""
    server_limit = preflight_entry.get("context_limit")
    return context_for(plan.label, plan.spec.context_tokens, server_limit), server_limit


def context_entry(
    plan: ModelPlan,
    cells: list[Cell],
    counts: dict[str, tuple[int, str]],
    limits: tuple[int | None, int | None],
    allow_cut: bool,
) -> dict[str, Any]:
    """The events-log entry of one model's check, ``{context_tokens, server_limit, n_prompts,
    n_over}``, from the prompt ``counts`` of its :func:`distinct_prompts` ``cells`` (as
    :meth:`HostClient.count_prompts` returns them) and :func:`model_limit`'s ``limits``.

    Raises :class:`UsageError` (exit 2) for a prompt that does not fit, unless ``allow_cut``."""
    limit, server_limit = limits
    over = overflowing(cells, counts, limit)
    if over and limit is not None and not allow_cut:
        raise UsageError(overflow_line(plan.label, *over[0], limit))
    return {
        "context_tokens": limit,
        "server_limit": server_limit,
        "n_prompts": len(cells),
        "n_over": len(over),
    }
