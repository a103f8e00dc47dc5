"""The per-host tools client: the eval :class:`~touchstone_ray.fleet.HostClient` plus one call
that runs a whole cell's agent loop (:mod:`.loop`) on the host, where the endpoint is
``localhost``.

The loop's world is data (fixtures and canned replies), so it runs beside the requests; the
checks, and any code they run, run on the driver afterwards, never on a serving host.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from touchstone_ray.engines.base import ChatRequest, ChatResult
from touchstone_ray.fleet import HostClient, client_spec
from touchstone_ray.toolpack import ToolsPack
from touchstone_ray.tools.loop import run_loop

if TYPE_CHECKING:
    from touchstone_ray.fleet.agents import ClientSpec

__all__ = ["ToolsCell", "ToolsClient", "tools_client_spec"]


@dataclass(frozen=True)
class ToolsCell:
    """One cell (model × item × repeat) as the host's client receives it."""

    key: str
    """``model|item|repeat``."""
    model: str
    """Model label."""
    item_id: str
    repeat: int
    max_tokens: int | None = None
    """Per-turn completion cap (tokens) when the item sets none: the model's
    ``reasoning_headroom_tokens`` or ``None``."""

    @property
    def task_name(self) -> str:
        """Readable Ray task name ``tools:<model>:<item>``."""
        return f"tools:{self.model}:{self.item_id}"


class ToolsClient(HostClient):
    """Async tools client for every endpoint of one host (use through ``ray.remote``).

    :meth:`use_pack` gives it the run's pack once; :meth:`run_tools_cell` then runs cells."""

    prestart_workers = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pack: ToolsPack | None = None

    async def use_pack(self, pack: dict[str, Any]) -> None:
        """Take the run's tools pack (``ToolsPack.model_dump(mode="json")``)."""
        self.pack = ToolsPack.model_validate(pack)

    async def tool_support(self, label: str) -> str | None:
        """``None`` when the model's server can take tool calls, else one line saying why not
        and what to change (:meth:`~touchstone_ray.engines.base.Engine.tool_support`; a
        server that cannot tell, or cannot be asked: ``None``)."""
        try:
            return await self._engine(label).tool_support(self.specs[label].id)
        except Exception:  # the server could not be asked: its cells will say what is wrong
            return None

    async def _chat_one(self, label: str, req: ChatRequest) -> ChatResult:
        async with self._sems[label]:
            return await self._engine(label).chat(req)

    async def run_tools_cell(self, cell: ToolsCell) -> dict[str, Any]:
        """Run one cell's loop; returns ``{key, model, item_id, repeat, engine, host, node_id,
        engine_version, ok, error, error_kind, t_start, t_end, run_s, turns, harness_s}``
        (turns as dicts). Never raises for a failed request."""
        if self.pack is None:
            raise RuntimeError("use_pack was not called before run_tools_cell")
        spec = self.specs[cell.model]
        self._engine(cell.model)
        item = self.pack.item(cell.item_id)
        started = time.perf_counter()

        async def chat(req: ChatRequest) -> ChatResult:
            full = req.model_copy(
                update={
                    "model": spec.id,
                    "extra_body": {**spec.extra_body, **req.extra_body},
                    "context_tokens": spec.context_tokens,
                }
            )
            return await self._chat_one(cell.model, full)

        outcome = await run_loop(chat, self.pack, item, spec.id, max_tokens=cell.max_tokens)
        failure = outcome.failure
        return {
            "key": cell.key,
            "model": cell.model,
            "item_id": cell.item_id,
            "repeat": cell.repeat,
            "engine": spec.engine,
            "host": self.host,
            "node_id": self.node_id,
            "engine_version": outcome.engine_version,
            "ok": failure is None,
            "error": failure.error if failure is not None else None,
            "error_kind": failure.error_kind if failure is not None else None,
            "t_start": outcome.t_start,
            "t_end": outcome.t_end,
            "run_s": time.perf_counter() - started,
            "turns": [t.model_dump(mode="json") for t in outcome.turns],
            "harness_s": outcome.harness_s,
        }


def tools_client_spec(
    host: str,
    node_id: str,
    models: dict[str, Any],
    *,
    name: str,
    pack: ToolsPack,
    scheduling: dict[str, Any],
    max_attempts: int,
    run_id: str,
) -> ClientSpec:
    """How ``host``'s :class:`ToolsClient` is built (pinned hard to ``node_id``), for
    :func:`~touchstone_ray.fleet.start_clients`; ``models`` maps label → spec."""
    return client_spec(
        host,
        node_id,
        models,
        name=name,
        pack_id=pack.id,
        pack_version=pack.version,
        sampling=pack.sampling.model_dump(),
        max_attempts=max_attempts,
        scheduling=scheduling,
        run_id=run_id,
        actor_cls=ToolsClient,
        language=None,
    )
