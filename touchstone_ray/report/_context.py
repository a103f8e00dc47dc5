"""Prompts the server cut to its context (``input_truncated``): which cells, what the server
saw, and how much context the prompt needs (SPEC §7, §10: those answers stay unscored)."""

from __future__ import annotations

from touchstone_ray.doc import Block, Code, Heading, Para, Table, cell, num_cell
from touchstone_ray.doc.fmt import NONE
from touchstone_ray.engines.normalize import estimate_tokens
from touchstone_ray.pack import Pack
from touchstone_ray.records import EvalResponse
from touchstone_ray.report._data import ReportData

__all__ = ["cut_prompts", "needed_context_tokens"]


def needed_context_tokens(r: EvalResponse, pack: Pack) -> int:
    """The context (tokens) the cell's prompt and answer need, as a lower bound:
    ``prompt + max_tokens``.

    The prompt's size is the larger of the server's ``prompt_tokens`` (for a cut prompt that is
    the cut length) and the estimate over the system and user prompt text
    (:func:`~touchstone_ray.engines.normalize.estimate_tokens`, 4 characters a token);
    ``max_tokens`` is what the request sent, else the prompt's own cap, else 0. A prompt that
    was cut did not fit, so the bound is at least the recorded ``context_tokens`` + 1.
    """
    variant = next((v for v in pack.prompt_variants if v.id == r.variant), None)
    system = (variant.system_prompt or "") if variant is not None else ""
    try:
        prompt_text = pack.prompt(r.prompt_id).prompt
        cap_default = pack.prompt(r.prompt_id).max_tokens
    except KeyError:
        prompt_text, cap_default = "", None
    prompt = max(r.prompt_tokens or 0, estimate_tokens(len(system) + len(prompt_text)))
    sent = r.request.get("max_tokens")
    cap = sent if isinstance(sent, int) else cap_default or 0
    return max(prompt + cap, (r.context_tokens or 0) + 1)


def cut_prompts(data: ReportData, t: dict[str, str], level: int) -> list[Block]:
    """A heading of ``level``, a note and one table row per cut cell; ``[]`` when none."""
    cut = [r for r in data.responses if r.ok and r.input_truncated]
    if not cut:
        return []
    head = (
        t["model"],
        t["variant"],
        t["prompt"],
        "#",
        t["prompt_tokens_seen"],
        t["context_short"],
        t["recommend"],
    )
    body = []
    for r in cut:
        need = needed_context_tokens(r, data.pack)
        body.append(
            (
                cell(r.model),
                cell(r.variant),
                cell(Code(r.prompt_id)),
                num_cell(str(r.repeat), r.repeat),
                num_cell(
                    NONE if r.prompt_tokens is None else str(r.prompt_tokens), r.prompt_tokens
                ),
                num_cell(
                    NONE if r.context_tokens is None else str(r.context_tokens), r.context_tokens
                ),
                cell(t["raise_context"].format(n=need)),
            )
        )
    return [
        Heading(level, t["input_cut"]),
        Para((t["input_cut_note"],)),
        Table(head, tuple(body), sortable=True),
    ]
