"""The queue: a night of runs, unattended (``touchstone-ray queue run|check|status``).

* :mod:`.spec` — the queue file (strict YAML) and each entry's fingerprint;
* :mod:`.state` — ``queue-state.jsonl``, the append-only log a rerun resumes from;
* :mod:`.hosts` — reset and settle on a host between entries (pinned Ray tasks);
* :mod:`.runner` — the driver: host leases, stage children, watchdog;
* :mod:`.check` — ``queue check`` and ``queue status``;
* :mod:`.summary` — ``summary.md`` / ``summary.html``.

The stages run as ``touchstone-ray`` children joined to one cluster; nothing here measures.
"""

from __future__ import annotations

from touchstone_ray.queue.runner import entry_hosts, run_queue
from touchstone_ray.queue.spec import EntrySpec, HostReset, QueueSpec, load_queue
from touchstone_ray.queue.state import EntryState, read_states

__all__ = [
    "EntrySpec",
    "EntryState",
    "HostReset",
    "QueueSpec",
    "entry_hosts",
    "load_queue",
    "read_states",
    "run_queue",
]
