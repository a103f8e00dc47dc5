"""The UI's queue (issue 29, item 7): one queue file under ``--runs`` that the Queue page edits
and a Ray job runs.

The file is ``<runs>/queue.yaml`` (SPEC §7d), its folder ``<runs>/queue/`` (``queue-state.jsonl``,
``summary.md``, one folder per entry with its bundles, so the overview lists them too). The
page adds, moves and removes entries by rewriting the file: the new text is checked by the
queue's own loader on a temporary copy beside it and then renamed over it, so the queue driver
never reads half a file and a refused edit changes nothing. A running entry is stopped through
its stop file (:func:`touchstone_ray.queue.state.stop_file`): the driver SIGTERMs its stage
(the bundle stays resumable) and ends it ``skipped`` (``stopped on request``).

The driver is ``touchstone-ray queue run <runs>/queue.yaml --address auto``, a Ray job of kind
``queue`` (:meth:`Jobs.launch`); it follows the file, so entries added while it runs join it.
:meth:`UiQueue.tick` (called every :data:`TICK_S` by the app) submits it when an entry is
pending, no queue job is active, and no eval or perf job started from the Jobs page holds a
host a pending entry needs (it starts once that job ended).

Host rule across both pages: an eval or perf started from the Jobs page whose hosts an active
job or an unfinished queue entry holds becomes a queue entry instead of a refusal; an entry
added here while the queue job runs, on a host a Jobs-page eval holds, is refused (the running
driver would start it beside that eval).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from touchstone_ray.config import LOCAL_HOST
from touchstone_ray.errors import ConfigError, TouchstoneError, UsageError
from touchstone_ray.queue import QueueSpec, entry_hosts, load_queue, read_states
from touchstone_ray.queue.spec import entry_fingerprint
from touchstone_ray.queue.state import ENDED, stop_file
from touchstone_ray.ui.jobs import ACTIVE, MEASURING, UNPINNED, Jobs
from touchstone_ray.ui.start import choices as start_choices

__all__ = ["QUEUE_FILE", "QUEUE_FOLDER", "TICK_S", "Conflict", "QueueRow", "UiQueue", "choices"]

QUEUE_FILE = "queue.yaml"
"""The UI's queue file, directly under ``--runs``."""
QUEUE_FOLDER = "queue"
"""Its folder (the file's ``out``), directly under ``--runs``."""
TICK_S = 2.0
"""How often the app looks whether the queue job must be started (s)."""
NAME = re.compile(r"[^a-z0-9_-]+")


class Conflict(UsageError):
    """An edit the queue's state forbids now: a host a job holds, an entry in the wrong state
    (the page answers HTTP 409)."""


@dataclass(frozen=True)
class QueueRow:
    """One entry as the Queue page lists it (``duration_s`` in s)."""

    name: str
    kind: str
    pack: str | None
    config: str
    models: tuple[str, ...] | None
    variants: tuple[str, ...] | None
    limit: int | None
    judge_config: str | None
    hosts: tuple[str, ...]
    state: str
    """``pending``, ``running`` or an end state (:data:`~touchstone_ray.queue.state.ENDED`)."""
    bundle: str | None
    reason: str | None
    duration_s: float | None


def _job_hosts(hosts: frozenset[str]) -> tuple[str, ...]:
    """Queue host names as the Jobs page names them (``local`` is ``(unpinned)`` there)."""
    return tuple(sorted(UNPINNED if h == LOCAL_HOST else h for h in hosts))


def choices(pack: Path, config: Path) -> dict[str, list[str]]:
    """``{"models": labels, "variants": ids}`` of a fleet config and a pack, for the add
    form's checkboxes (:func:`touchstone_ray.ui.start.choices`, labels only). Raises
    :class:`UsageError` (one line) when either does not load."""
    found = start_choices(pack, config)
    return {"models": [m["label"] for m in found["models"]], "variants": found["variants"]}


class UiQueue:
    """The Queue page's queue over :class:`Jobs`; thread-safe (one lock around every edit)."""

    def __init__(self, jobs: Jobs) -> None:
        self.jobs = jobs
        self.path = jobs.runs / QUEUE_FILE
        self.folder = jobs.runs / QUEUE_FOLDER
        self.last_error: str | None = None
        """The last submission of the queue job that failed (shown on the page)."""
        self._lock = threading.Lock()
        self._launched: tuple[str, int] | None = None
        """``(job id, queue file mtime in ns)`` of the last queue job this UI submitted."""

    def _data(self) -> dict[str, Any]:
        if not self.path.is_file():
            return {"out": QUEUE_FOLDER, "entries": []}
        data = yaml.safe_load(self.path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {"out": QUEUE_FOLDER, "entries": []}

    def _save(self, data: dict[str, Any], guard: Callable[[QueueSpec], None] | None = None) -> None:
        """Write ``data`` as the queue file once the queue loader (and ``guard``, given the
        loaded queue) accepts it; no entries left: the file is removed. Raises
        :class:`UsageError` with the loader's or the guard's line; the file is then as it was."""
        if not data.get("entries"):
            self.path.unlink(missing_ok=True)
            return
        tmp = self.path.with_name(f".{QUEUE_FILE}.{os.getpid()}.tmp")
        tmp.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), "utf-8")
        try:
            spec = load_queue(tmp)
            if guard is not None:
                guard(spec)
            os.replace(tmp, self.path)
        except ConfigError as exc:
            raise UsageError(str(exc).replace(str(tmp), str(self.path))) from None
        finally:
            tmp.unlink(missing_ok=True)

    def rows(self) -> list[QueueRow]:
        """Every entry of the file in its order, with its state from ``queue-state.jsonl``
        (an entry edited since it ended is ``pending`` again). Raises :class:`UsageError` for
        a queue file that does not load."""
        if not self.path.is_file():
            return []
        spec = load_queue(self.path)
        states = read_states(self.folder)
        rows = []
        for entry in spec.entries:
            got = states.get(entry.name)
            state = "pending" if got is None else got.state
            if got is not None and state in ENDED and got.fingerprint != entry_fingerprint(entry):
                state = "pending"
            rows.append(
                QueueRow(
                    name=entry.name,
                    kind=entry.kind,
                    pack=entry.pack.name if entry.pack else None,
                    config=str(entry.config),
                    models=entry.models,
                    variants=entry.variants,
                    limit=entry.limit,
                    judge_config=entry.judge_config.name if entry.judge_config else None,
                    hosts=_job_hosts(entry_hosts(entry)),
                    state=state,
                    bundle=got.bundle if got else None,
                    reason=got.reason if got and state != "pending" else None,
                    duration_s=got.duration_s if got and state != "pending" else None,
                )
            )
        return rows

    def _queue_job_active(self) -> bool:
        """Whether a queue job is PENDING or RUNNING on the cluster."""
        return any(j.kind == "queue" and j.status in ACTIVE for j in self.jobs.jobs())

    def _new_name(self, data: dict[str, Any], base: str) -> str:
        taken = {str(e.get("name")) for e in data["entries"]}
        stem = NAME.sub("-", base.lower()).strip("-_")[:56] or "entry"
        n = 1
        while f"{stem}-{n}" in taken:
            n += 1
        return f"{stem}-{n}"

    def add(self, form: dict[str, Any]) -> str:
        """Append an eval entry from the add form (``name`` optional, ``pack``, ``config``,
        ``models`` and ``variants`` lists — all of them checked is ``null`` —,
        ``judge_config``, ``limit``); returns its name. Raises :class:`UsageError` with one
        line: a path outside ``--runs`` and the packs folder, a limit that is not a whole
        number, nothing checked, the queue loader's refusal, or a host a Jobs-page eval holds
        while the queue job runs."""
        pack = self.jobs.path_of(str(form.get("pack", "")), "pack")
        config = self.jobs.path_of(str(form.get("config", "")), "config")
        known = choices(pack, config)
        entry: dict[str, Any] = {"name": None, "kind": "eval", "pack": str(pack)}
        entry["config"] = str(config)
        for key in ("models", "variants"):
            picked = [str(v) for v in form.get(key, [])]
            if not picked:
                raise UsageError(f"{key}: check at least one of {known[key]}")
            if sorted(picked) != sorted(known[key]):
                entry[key] = picked
        if form.get("judge_config"):
            judge = self.jobs.path_of(str(form["judge_config"]), "judge config")
            entry["judge_config"] = str(judge)
        limit = str(form.get("limit") or "").strip()
        if limit:
            if not limit.isdigit():
                raise UsageError(f"limit {limit!r}: expected a whole number of prompts ≥ 1")
            entry["limit"] = int(limit)
        return self._append(entry, str(form.get("name") or "").strip(), pack.stem)

    def add_job(self, kind: str, form: dict[str, str]) -> str:
        """Append the eval or perf run the Jobs page's start form asks for as an entry (its
        pack, config, ticked models and variants, limit and chained judge config, as
        :meth:`Jobs.plan` read them); returns its name."""
        plan = self.jobs.plan(kind, form)
        args = plan.args

        def option(flag: str) -> str | None:
            return args[args.index(flag) + 1] if flag in args else None

        config = Path(str(option("--config")))
        entry: dict[str, Any] = {"name": None, "kind": kind}
        if kind == "eval":
            entry["pack"] = option("--pack")
        entry["config"] = str(config)
        for key in ("models", "variants"):
            picked = option(f"--{key}")
            if picked:
                entry[key] = picked.split(",")
        limit = option("--limit")
        if limit:
            entry["limit"] = int(limit)
        if plan.then_judge:
            entry["judge_config"] = str(plan.then_judge)
        return self._append(entry, "", f"{kind}-{config.stem}")

    def _append(self, entry: dict[str, Any], name: str, base: str) -> str:
        def not_beside_a_job(spec: QueueSpec) -> None:
            if not self._queue_job_active():
                return
            hosts = _job_hosts(entry_hosts(spec.entries[-1]))
            for host, job in self.jobs.holders(hosts):
                raise Conflict(
                    f"refused: host {host} runs {job.kind} job {job.job_id} from the Jobs "
                    "page while the queue runs; add the entry once that job ended"
                )

        with self._lock:
            data = self._data()
            entry["name"] = name or self._new_name(data, base)
            data["entries"] = [*data["entries"], entry]
            self._save(data, not_beside_a_job)
            return str(entry["name"])

    def start(self, kind: str, form: dict[str, str]) -> tuple[str, bool]:
        """Start an eval or perf run from the Jobs page: ``(job id, False)``, or ``(entry
        name, True)`` when an active job or an unfinished queue entry holds one of its hosts
        (it waits in the queue instead)."""
        _, hosts = self.jobs.entry(kind, form)
        unfinished = {h for r in self.rows() if r.state not in ENDED for h in r.hosts}
        if self.jobs.holders(hosts) or unfinished & set(hosts):
            return self.add_job(kind, form), True
        return self.jobs.submit(kind, form), False

    def _find(self, data: dict[str, Any], name: str) -> int:
        for i, entry in enumerate(data["entries"]):
            if entry.get("name") == name:
                return i
        raise UsageError(f"entry {name!r}: not in {self.path}")

    def _state(self, name: str) -> str:
        return next((r.state for r in self.rows() if r.name == name), "pending")

    def move(self, name: str, step: int) -> None:
        """Swap pending entry ``name`` with the next pending one before (``step`` −1) or
        after (+1) it; at either end nothing changes. Raises :class:`UsageError` for an entry
        that is not pending."""
        with self._lock:
            rows = {r.name: r.state for r in self.rows()}
            if rows.get(name) != "pending":
                raise Conflict(
                    f"entry {name!r}: only a pending entry moves (it is {rows.get(name)})"
                )
            data = self._data()
            i = self._find(data, name)
            j = i + step
            entries = data["entries"]
            while 0 <= j < len(entries) and rows.get(entries[j].get("name")) != "pending":
                j += step
            if 0 <= j < len(entries):
                entries[i], entries[j] = entries[j], entries[i]
                self._save(data)

    def remove(self, name: str) -> None:
        """Take entry ``name`` out of the file (its bundles and log lines stay). Raises
        :class:`UsageError` for a running entry (stop it first)."""
        with self._lock:
            if self._state(name) == "running":
                raise Conflict(f"entry {name!r} is running: stop it before removing it")
            data = self._data()
            del data["entries"][self._find(data, name)]
            self._save(data)
            stop_file(self.folder, name).unlink(missing_ok=True)

    def stop(self, name: str) -> None:
        """Ask the queue driver to stop running entry ``name`` (its stop file). Raises
        :class:`UsageError` for an entry that is not running."""
        state = self._state(name)
        if state != "running":
            raise Conflict(f"entry {name!r}: only a running entry stops (it is {state})")
        path = stop_file(self.folder, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{time.time()}\n", encoding="utf-8")

    def tick(self) -> str | None:
        """Submit the queue job when it should run (see the module text); its id, else
        ``None``. After a queue job of this UI that did not succeed (an entry failed, it was
        stopped), the next one waits for a change of the queue file. A failed submission is
        kept in :attr:`last_error` and raised."""
        rows = self.rows()
        if not any(r.state in ("pending", "running") for r in rows):
            return None
        jobs = self.jobs.jobs()
        if any(j.kind == "queue" and j.status in ACTIVE for j in jobs):
            return None
        stamp = self.path.stat().st_mtime_ns
        if self._launched is not None and self._launched[1] == stamp:
            last = next((j for j in jobs if j.job_id == self._launched[0]), None)
            if last is None or last.status != "SUCCEEDED":
                return None
        needed = {h for r in rows if r.state in ("pending", "running") for h in r.hosts}
        if any(j.kind in MEASURING and j.status in ACTIVE and needed & set(j.hosts) for j in jobs):
            return None
        argv = ["touchstone-ray", "queue", "run", str(self.path), "--address", "auto"]
        try:
            job_id = self.jobs.launch("queue", argv, tuple(sorted(needed)))
        except TouchstoneError as exc:
            self.last_error = f"the queue job was not started: {exc}"
            raise
        self.last_error = None
        self._launched = (job_id, stamp)
        return job_id
