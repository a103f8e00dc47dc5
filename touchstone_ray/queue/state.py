"""``queue-state.jsonl``: the queue's append-only log, and what an entry's lines say now.

Every line carries SPEC §7d's keys ``{ts, entry, stage, state, bundle, reason}`` (``ts`` epoch
s; ``stage`` eval | perf | tools | judge | report; ``state`` pending | running | done | failed |
stalled | skipped) and names its step in ``event``: ``entry_pending`` (queued in this run),
``entry_started`` (``fingerprint``, ``hosts``; ``state`` running), ``stage_done``,
``stage_skipped`` (finished in an earlier try), ``entry_ended`` (the entry's end state and the
stage it ended in, ``duration_s``; ``skipped`` with the reason ``stopped on request`` for an
entry stopped through its :func:`stop_file`). A queue driver killed at any point leaves a
prefix of these lines: an entry without ``entry_ended`` is resumed, a torn last line is cut
off (:func:`~touchstone_ray.storage.repair_torn_tail`) before the queue writes again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from touchstone_ray.storage import JsonlWriter, read_jsonl, repair_torn_tail

__all__ = ["ENDED", "EntryState", "QueueLog", "entries_text", "read_states", "stop_file"]

STATE_FILE = "queue-state.jsonl"
ENDED = ("done", "failed", "stalled", "skipped")
"""An entry's end states."""
STOP_FILE = "stop-requested"
"""In an entry's folder: asks the queue driver to stop the entry (the UI's stop button)."""


def stop_file(folder: Path, entry: str) -> Path:
    """The file whose presence stops entry ``entry`` of the queue whose folder is ``folder``:
    its running stage gets SIGTERM and the entry ends ``skipped`` (``stopped on request``);
    while the file is there, a later run skips the entry."""
    return folder / entry / STOP_FILE


def entries_text(n: int) -> str:
    """``1 entry``, ``3 entries``."""
    return f"{n} entr{'y' if n == 1 else 'ies'}"


@dataclass
class EntryState:
    """What the log says about one entry (``state`` ``pending`` | ``running`` | an end state)."""

    name: str
    state: str = "pending"
    fingerprint: str | None = None
    bundle: str | None = None
    stages: list[str] = field(default_factory=list)
    """Stages finished in the entry's latest try, in order."""
    reason: str | None = None
    started_at: float | None = None
    duration_s: float | None = None


def read_states(folder: Path) -> dict[str, EntryState]:
    """Entry name → its state, replayed from ``folder/queue-state.jsonl`` (missing: empty)."""
    states: dict[str, EntryState] = {}
    for line in read_jsonl(folder / STATE_FILE).records:
        name = str(line.get("entry"))
        state = states.setdefault(name, EntryState(name))
        event = line.get("event")
        if event == "entry_pending":
            if state.state in ENDED:
                state.stages = []
            state.state, state.reason = "pending", None
        elif event == "entry_started":
            if state.fingerprint != line.get("fingerprint") or state.state in ENDED:
                state.stages = []
            state.state, state.reason = "running", None
            state.fingerprint = line.get("fingerprint")
            state.started_at = line.get("ts")
            state.bundle = line.get("bundle") or state.bundle
        elif event == "stage_done":
            state.stages.append(str(line.get("stage")))
            state.bundle = line.get("bundle") or state.bundle
        elif event == "entry_ended":
            state.state = str(line.get("state"))
            state.reason = line.get("reason")
            state.duration_s = line.get("duration_s")
            state.bundle = line.get("bundle") or state.bundle
    return states


class QueueLog:
    """The writer of ``queue-state.jsonl`` (thread-safe enough for one driver: one write per
    call, each flushed)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / STATE_FILE
        if path.exists():
            repair_torn_tail(path)
        self._writer = JsonlWriter(path)

    def write(
        self,
        event: str,
        entry: str,
        *,
        stage: str,
        state: str,
        bundle: str | None = None,
        reason: str | None = None,
        **extra: Any,
    ) -> None:
        """Append ``{ts, entry, stage, state, bundle, reason, event, **extra}`` and fsync it (a
        night's log is small)."""
        line = {"ts": time.time(), "entry": entry, "stage": stage, "state": state}
        line |= {"bundle": bundle, "reason": reason, "event": event, **extra}
        self._writer.write(line)
        self._writer.sync()

    def close(self) -> None:
        """fsync and close."""
        self._writer.close()
