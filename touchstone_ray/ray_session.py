"""Joining or starting Ray (SPEC §8: embedded default, ``--address`` joins a cluster)."""

from __future__ import annotations

import ipaddress
import sys
from typing import Any

from touchstone_ray.config import RaySettings


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def ensure_ray(address: str | None, settings: RaySettings) -> dict[str, Any]:
    """Connect the driver to Ray and return ``{"version", "address", "embedded"}``.

    Reuses an already initialised Ray (tests, ``ray job submit``); with an address (flag, then
    config) joins that cluster; otherwise starts a local Ray with the dashboard bound to
    ``settings.dashboard_host`` — a non-loopback bind prints a warning.
    """
    import ray

    address = address or settings.address
    embedded = False
    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            if settings.include_dashboard and not is_loopback(settings.dashboard_host):
                print(
                    f"warning: the Ray dashboard will listen on {settings.dashboard_host}, "
                    "reachable from other machines; use 127.0.0.1 and an SSH tunnel instead",
                    file=sys.stderr,
                )
            ray.init(
                include_dashboard=settings.include_dashboard,
                dashboard_host=settings.dashboard_host,
                log_to_driver=False,
            )
            embedded = True
    context = ray.get_runtime_context()
    return {
        "version": ray.__version__,
        "address": address or context.gcs_address,
        "embedded": embedded,
    }
