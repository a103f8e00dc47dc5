"""What the queue does on a host between entries: run its ``reset_command`` on the host's node
(a Ray task pinned there) and wait for it to settle (``settle_s``, then its used memory back
within ``settle_memory_mb`` of the level before the entry)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from touchstone_ray.errors import one_line
from touchstone_ray.queue.spec import HostReset

__all__ = ["RESET_TIMEOUT_S", "HostOps"]

RESET_TIMEOUT_S = 600.0
"""Longest a ``reset_command`` may run (s)."""
SETTLE_POLL_S = 1.0
"""Interval of the used-memory check while settling (s)."""


def _run_shell(command: str, host: str, timeout_s: float) -> dict[str, Any]:
    """Run ``command`` with ``/bin/sh -c`` here, ``TOUCHSTONE_HOST`` and ``TOUCHSTONE_NODE_ID``
    in its environment; ``{"node_id", "exit_code", "output"}`` (output: its last line)."""
    import os
    import subprocess

    import ray

    node = ray.get_runtime_context().get_node_id()
    env = os.environ | {"TOUCHSTONE_HOST": host, "TOUCHSTONE_NODE_ID": node}
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"node_id": node, "exit_code": None, "output": f"timed out after {timeout_s:g} s"}
    output = (done.stderr or done.stdout).strip().splitlines()
    return {"node_id": node, "exit_code": done.returncode, "output": output[-1] if output else ""}


def _used_mb() -> float:
    """Used memory of this node (MB): ``total − available``."""
    import psutil

    memory = psutil.virtual_memory()
    return float(memory.total - memory.available) / 1e6


class HostOps:
    """Runs reset and settle on hosts through pinned Ray tasks (Ray joined by the caller);
    ``nodes`` maps host name → Ray node id."""

    def __init__(self, nodes: dict[str, str], say: Callable[[str], None]) -> None:
        self.nodes = nodes
        self.say = say

    def _call(self, host: str, func: Callable[..., Any], *args: Any, timeout_s: float) -> Any:
        import ray

        from touchstone_ray.fleet import pin

        task = ray.remote(num_cpus=0)(func).options(scheduling_strategy=pin(self.nodes[host]))
        return ray.get(task.remote(*args), timeout=timeout_s)

    def reset(self, host: str, settings: HostReset) -> str | None:
        """Run the host's ``reset_command`` on its node; ``None`` when it exited 0 (or there is
        none), else the one-line reason."""
        if settings.reset_command is None:
            return None
        try:
            done = self._call(
                host,
                _run_shell,
                settings.reset_command,
                host,
                RESET_TIMEOUT_S,
                timeout_s=RESET_TIMEOUT_S + 30,
            )
        except Exception as exc:
            return one_line(f"reset_command on {host} could not run: {type(exc).__name__}: {exc}")
        if done["exit_code"] == 0:
            return None
        return one_line(
            f"reset_command on {host} exited {done['exit_code']}: {done['output']}".rstrip(": ")
        )

    def used_mb(self, host: str) -> float | None:
        """The host's used memory now (MB); ``None`` when it cannot be read."""
        try:
            return float(self._call(host, _used_mb, timeout_s=30))
        except Exception:
            return None

    def settle(self, host: str, settings: HostReset, baseline_mb: float | None) -> None:
        """Sleep ``settle_s``, then wait until the used memory is within ``settle_memory_mb``
        of ``baseline_mb``, saying one warning line after ``settle_timeout_s``."""
        time.sleep(settings.settle_s)
        if settings.settle_memory_mb is None or baseline_mb is None:
            return
        deadline = time.monotonic() + settings.settle_timeout_s
        used = self.used_mb(host)
        while used is not None and used - baseline_mb > settings.settle_memory_mb:
            if time.monotonic() >= deadline:
                self.say(
                    f"warning: {host} did not settle within {settings.settle_timeout_s:g} s: "
                    f"{used - baseline_mb:.0f} MB above its level before "
                    f"(settle_memory_mb {settings.settle_memory_mb:g}); starting anyway"
                )
                return
            time.sleep(SETTLE_POLL_S)
            used = self.used_mb(host)
