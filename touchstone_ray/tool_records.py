"""The tools bundle's record types (SPEC §7c, a Contract): one line of ``cells/<model>.jsonl``
per model × item × repeat, with every turn of the agent loop and each check's outcome.

Times are seconds (float), token counts tokens, timestamps epoch seconds of the host that
served the cell. ``None`` means "not known here", never 0.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from touchstone_ray.errors import ErrorKind
from touchstone_ray.records import CellResources, CheckOutcome, ToolCall

__all__ = [
    "CheckOutcome",
    "ToolCall",
    "ToolTurn",
    "ToolsRecord",
    "WorldReply",
    "tools_key",
]


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", use_attribute_docstrings=True)


def tools_key(model: str, item_id: str, repeat: int) -> str:
    """The record key ``model|item|repeat`` (repeat counts from 1)."""
    return f"{model}|{item_id}|{repeat}"


class WorldReply(_Record):
    """What the stand-in world answered to one call (sent back as a ``tool`` message)."""

    tool_call_id: str | None = None
    """The id of the call answered (the server's, or one the loop made up)."""
    name: str
    """The tool called."""
    content: str
    """The reply text sent to the model."""
    source: str
    """Where the reply came from: ``file`` (a fixture's text), ``listing`` (``ls``/``find``),
    ``canned`` (a ``world.results`` entry), ``default`` (``world.default``)."""


class ToolTurn(_Record):
    """One model answer of the agent loop and the world's replies to its calls."""

    content: str = ""
    """The answer text of this turn (reasoning split off)."""
    reasoning_text: str = ""
    """The reasoning of this turn; ``""`` none."""
    tool_calls_raw: list[dict[str, Any]] = []
    """The calls as the server sent them, fragments assembled by index (OpenAI:
    ``{index, id, type, function: {name, arguments: str}}``; Ollama: ``{function: {name,
    arguments: object}}``)."""
    tool_calls: list[ToolCall] = []
    """The calls parsed (:class:`ToolCall`), in the order the server sent them."""
    finish_reason: str | None = None
    """As sent by the server (``tool_calls``, ``stop``, ``length``, …); ``None`` none sent."""
    prompt_tokens: int | None = None
    """Prompt tokens of this turn's request (tokens; server or estimated)."""
    completion_tokens: int | None = None
    """Tokens generated in this turn, reasoning included (tokens)."""
    reasoning_tokens: int | None = None
    """Of those, reasoning tokens (tokens); ``None`` not reported."""
    ttft_s: float | None = None
    """Time to first token of this turn (s)."""
    e2e_s: float | None = None
    """Request sent to end of this turn's stream (s)."""
    t_start: float | None = None
    """Epoch s when this turn's request was sent."""
    world_replies: list[WorldReply] = []
    """The world's reply to each call of this turn, in call order."""


class ToolsRecord(CellResources):
    """One cell of a tools run (model × item × repeat): a line of ``cells/<model>.jsonl``.

    ``key`` comes first and ``ok`` right before ``error`` on disk (the resume scan reads them
    from the line prefix). The §7 resource fields (:class:`CellResources`) are filled by
    finalize over ``[t_start, t_end]``.
    """

    key: str
    """``model|item|repeat`` (:func:`tools_key`); unique per bundle."""
    pack_id: str
    """``id`` of the tools pack (``bfcl-<category>`` for a BFCL pack)."""
    pack_version: int
    """``version`` of that pack."""
    model: str
    """The model's label in the fleet config."""
    engine: str
    """The configured ``engine:`` of the model's endpoint."""
    engine_version: str | None = None
    """What the server reported; ``None`` unknown."""
    host: str
    """The fleet host the model is pinned to."""
    node_id: str | None = None
    """Ray node id where the cell really ran."""
    item_id: str
    """The item's id in the pack (BFCL's own id for ``bfcl:`` packs)."""
    repeat: int
    """Repeat number, from 1."""
    ok: bool
    """Every turn's request produced a stream (the checks ran); ``False``: a transport error,
    not a model result (``--resume`` runs it again)."""
    error: str | None = None
    """One line, when ``ok`` is false."""
    error_kind: ErrorKind | None = None
    """As in SPEC §7 when ``ok`` is false; else ``None``."""
    t_start: float | None = None
    """Epoch s when the first turn's request was sent."""
    t_end: float | None = None
    """Epoch s when the last turn's stream ended."""
    turns: list[ToolTurn] = Field(default_factory=list)
    """Every turn of the agent loop, in order."""
    checks: list[CheckOutcome] = Field(default_factory=list)
    """Each check of the item, in pack order; ``[]`` for a failed cell."""
    passed: bool | None = None
    """Every check ok (not-measured checks do not count either way, but a cell whose checks
    were all not measured is ``None``); ``None`` for a failed cell."""
    not_measured: list[str] = Field(default_factory=list)
    """Ids of the checks that could not run (``ok`` null)."""
    run_s: float | None = None
    """Wall time of the cell on the host, first request to last byte (s)."""
