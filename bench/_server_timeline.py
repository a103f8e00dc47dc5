"""Per-request timelines from llama-server's log: when each task's prefill and decode ran, and
how much of its decode ran while another task's prefill did (a *decode stall*).

llama-server logs, per task (request), ``slot launch_slot_: id S | task T | processing task``
when a slot takes it, ``print_timing … prompt eval time = X ms / N tokens`` and ``… eval time =
Y ms / M tokens`` when it ends, and ``slot release: … task T`` at the end; every line starts with
the time since the server started (``M.SS.mmm.uuu``, more leading fields past an hour). From
these: prefill = [launch, launch + prompt_ms], decode = [launch + prompt_ms, release]. The
server batches one step's decode tokens with the prompt tokens of any slot that is prefilling,
so a decode step that shares its batch with a prefill waits for it; the stall of a request is the
overlap of its decode with the other tasks' prefills, read from the server, the same for every
client measured against it.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import Any

_LINE = re.compile(
    r"^(?P<ts>\d+(?:\.\d+){3,})\s+\S\s+slot\s+(?P<what>launch_slot_|print_timing|release):"
    r"\s+id\s+\d+\s+\|\s+task\s+(?P<task>\d+)\s+\|(?P<rest>.*)$"
)
_TIMING = re.compile(r"^\s*(?P<kind>prompt eval|eval) time =\s+(?P<ms>[\d.]+) ms /\s+(?P<n>\d+)")


def log_seconds(stamp: str) -> float:
    """``"6.57.621.445"`` (minutes, seconds, ms, µs; more leading base-60 fields past an hour)
    → seconds since the server started (``417.621445``)."""
    *clock, ms, us = (int(part) for part in stamp.split("."))
    seconds = 0
    for part in clock:
        seconds = seconds * 60 + part
    return (seconds * 1_000_000 + ms * 1000 + us) / 1e6


@dataclass(frozen=True)
class Task:
    """One request as the server saw it: times in s since the server started, counts in
    tokens."""

    task: int
    launch_s: float
    prompt_ms: float
    prompt_n: int
    eval_ms: float
    eval_n: int
    release_s: float

    @property
    def first_token_s(self) -> float:
        """End of the prefill: launch + prompt_ms."""
        return self.launch_s + self.prompt_ms / 1e3


def parse_tasks(text: str) -> list[Task]:
    """Every task of a log slice that has its launch, both timings and its release, in launch
    order; tasks cut off by the slice are left out."""
    seen: dict[int, dict[str, Any]] = {}
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if not m:
            continue
        entry = seen.setdefault(int(m["task"]), {})
        if m["what"] == "launch_slot_":
            entry["launch_s"] = log_seconds(m["ts"])
        elif m["what"] == "release":
            entry["release_s"] = log_seconds(m["ts"])
        elif t := _TIMING.match(m["rest"]):
            key = "prompt" if t["kind"] == "prompt eval" else "eval"
            entry[f"{key}_ms"], entry[f"{key}_n"] = float(t["ms"]), int(t["n"])
    fields = ("launch_s", "prompt_ms", "prompt_n", "eval_ms", "eval_n", "release_s")
    tasks = [Task(task=k, **v) for k, v in seen.items() if all(f in v for f in fields)]
    return sorted(tasks, key=lambda t: t.launch_s)


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def decode_stall_s(task: Task, others: list[Task]) -> float:
    """Seconds of ``task``'s decode that overlapped another task's prefill (overlaps of
    several prefills with each other are not double counted: prefills run one batch at a
    time, so they do not overlap each other on one server)."""
    return sum(
        _overlap(task.first_token_s, task.release_s, o.launch_s, o.first_token_s)
        for o in others
        if o.task != task.task
    )


def timeline_summary(
    tasks: list[Task], min_prompt_n: int = 0, among: list[Task] | None = None
) -> dict[str, Any]:
    """Medians over the tasks with at least ``min_prompt_n`` prompt tokens (the cached
    variant's short re-prompts are left out with it): server prompt_ms and decode ms per
    token (eval_ms / eval_n), the share of tasks whose decode was stalled by another's prefill
    (for longer than one of its own decode steps, eval_ms / eval_n: two prompts sent together
    share their last prefill batch, a few ms to one step, which is not a stall), the median
    stall (s), and the launch gap of each task to the nearest other
    launch (s: near 0 = sent together). Stalls and gaps are taken against ``among`` (default
    ``tasks``: every task on the server then)."""
    kept = [t for t in tasks if t.prompt_n >= min_prompt_n]
    tasks = tasks if among is None else among
    if not kept:
        return {"n": 0}
    stalls = [decode_stall_s(t, tasks) for t in kept]
    gaps = [
        min((abs(t.launch_s - o.launch_s) for o in tasks if o.task != t.task), default=None)
        for t in kept
    ]
    known_gaps = [g for g in gaps if g is not None]
    return {
        "n": len(kept),
        "server_prompt_ms_median": round(statistics.median(t.prompt_ms for t in kept), 1),
        "server_decode_ms_per_token_median": round(
            statistics.median(t.eval_ms / t.eval_n for t in kept if t.eval_n), 2
        ),
        "stalled_share": round(
            sum(s > t.eval_ms / max(t.eval_n, 1) / 1e3 for s, t in zip(stalls, kept, strict=True))
            / len(kept),
            3,
        ),
        "decode_stall_s_median": round(statistics.median(stalls), 3),
        "launch_gap_s_median": round(statistics.median(known_gaps), 3) if known_gaps else None,
    }


def shares_server(task: Task, tasks: list[Task]) -> bool:
    """Whether another task was on the server (launch → release) while ``task`` was."""
    return any(
        o.task != task.task and _overlap(task.launch_s, task.release_s, o.launch_s, o.release_s)
        for o in tasks
    )


def by_context(tasks: list[Task], contexts: list[int]) -> dict[tuple[int, str], list[Task]]:
    """Tasks grouped by the target context nearest their prompt count (tasks under half the
    smallest target, the cached variant's re-prompts, are left out) and by ``"alone"`` /
    ``"shared"`` (:func:`shares_server`): a c = 1 point's requests run alone, a c ≥ 2 point's
    share the server."""
    out: dict[tuple[int, str], list[Task]] = {}
    for t in tasks:
        if t.prompt_n < min(contexts) / 2:
            continue
        ctx = min(contexts, key=lambda c: abs(c - t.prompt_n))
        out.setdefault((ctx, "shared" if shares_server(t, tasks) else "alone"), []).append(t)
    return out
