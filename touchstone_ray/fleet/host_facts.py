"""This machine's hardware facts for ``bundle.json``: CPU, RAM, GPUs (NVML), OS and Python."""

from __future__ import annotations

import os
import platform
import socket
from typing import Any

import psutil

__all__ = ["cpu_model", "gpu_inventory", "host_facts"]


def gpu_inventory() -> list[dict[str, Any]]:
    """``[{index, name, mem_total_mb}]`` of this machine's GPUs via NVML; ``[]`` without one."""
    from touchstone_ray.telemetry.nvml import NvmlReader

    reader = NvmlReader("auto")
    try:
        reader.probe()
        samples = reader.sample() or []
    except Exception:
        return []
    finally:
        reader.close()
    return [{"index": g.index, "name": g.name, "mem_total_mb": g.mem_total_mb} for g in samples]


def cpu_model() -> str:
    """The CPU model name (``/proc/cpuinfo`` on Linux, else ``platform``)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_facts(node_id: str | None) -> dict[str, Any]:
    """Hardware facts of this machine for ``bundle.json`` (``ram_gb`` in GiB)."""
    cpu = cpu_model()
    try:
        ip = socket.gethostbyname(socket.gethostname())
    except OSError:
        ip = None
    return {
        "node_id": node_id,
        "hostname": socket.gethostname(),
        "ip": ip,
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "ram_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "gpus": gpu_inventory(),
        "os": platform.platform(),
        "python": platform.python_version(),
    }
