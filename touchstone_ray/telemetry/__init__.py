"""Host telemetry: per-node monitor actors and the finalize merge (SPEC §7, §8).

* :class:`HostSampler` — one tick of a host (psutil, PSI, cgroup, CPU throttle, NVML).
* :class:`EngineTracker` — each endpoint's serving process tree and the foreign CPU.
* :class:`HostMonitor` — the per-node Ray actor (its driver side is
  :class:`touchstone_ray.fleet.MonitorSet`).
* :func:`resources_for` / :func:`finalize_bundle` — join samples to answers by time window.
"""

from touchstone_ray.telemetry.engines import EngineTarget, EngineTracker
from touchstone_ray.telemetry.finalize import (
    CONTENDED_SHARE,
    NEAREST_MAX_S,
    RESOURCE_FIELDS,
    WINDOW_PAD_S,
    finalize_bundle,
    resources_for,
)
from touchstone_ray.telemetry.linux import SysRoot
from touchstone_ray.telemetry.monitor import HostMonitor
from touchstone_ray.telemetry.sampler import HOST_FIELDS, HostSampler

__all__ = [
    "CONTENDED_SHARE",
    "HOST_FIELDS",
    "NEAREST_MAX_S",
    "RESOURCE_FIELDS",
    "WINDOW_PAD_S",
    "EngineTarget",
    "EngineTracker",
    "HostMonitor",
    "HostSampler",
    "SysRoot",
    "finalize_bundle",
    "resources_for",
]
