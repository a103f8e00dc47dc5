"""Joining or starting Ray (SPEC §8: embedded default, ``--address`` joins a cluster).

Where the driver connects, first match wins:

1. Ray is already initialised in this process (tests, a caller that did ``ray.init``): reuse it.
2. ``--address`` (the flag).
3. ``RAY_ADDRESS`` from the environment: ``ray job submit`` sets it for the entrypoint, so
   ``ray job submit -- touchstone-ray eval …`` joins the cluster it was submitted to.
4. ``ray.address`` of the fleet config (``auto``, ``host:port``, ``ray://head:10001``).
5. Otherwise a new local Ray (``address="local"``, never an unrelated cluster that a
   ``ray start`` left on this machine), its dashboard bound to ``ray.dashboard_host``
   (127.0.0.1 by default; anything else prints a warning).

Starting a local Ray on a loaded machine can fail: Ray 2.60 waits 30 s for the new node to
register with the GCS ("The current node timed out during startup"), a wait hard-coded in
``ray/_private/node.py`` (``raylet_start_wait_time_s``, no environment variable or
``_system_config`` key lengthens it). :func:`start_local` therefore tries a local start
twice, with a ``ray.shutdown()`` between, and then fails with one line that says what to do
(:func:`start_failed_line`).

Ray's own start-up lines (the token-auth warning, INFO lines such as "Started a local Ray
instance" with the dashboard URL) stay out of the terminal unless ``--debug``
(:func:`show_ray_logs`); touchstone's own warnings are printed either way.

:func:`dashboard_url` and :func:`dashboard_exposure_warning` tell where a joined cluster's
dashboard listens; ``touchstone-ray hosts`` warns when that is not a loopback address.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from touchstone_ray.config import RaySettings
from touchstone_ray.errors import RunError, one_line
from touchstone_ray.fleet.lifeline import watch_cluster

T = TypeVar("T")

_ray_logs = {"on": False}


def show_ray_logs(on: bool) -> None:
    """Let Ray's own log lines reach the terminal (``on``: the CLI's ``--debug``) or keep
    them out (default: only errors). Sets the ``ray`` logger's level now and the
    ``logging_level`` of every later ``ray.init`` here (:func:`ray_logging_level`)."""
    _ray_logs["on"] = on
    logging.getLogger("ray").setLevel(ray_logging_level())


def ray_logging_level() -> int:
    """The ``logging_level`` for ``ray.init``: ``INFO`` with :func:`show_ray_logs`, else
    ``ERROR``."""
    return logging.INFO if _ray_logs["on"] else logging.ERROR


def start_failed_line(exc: BaseException) -> str:
    """The one line for a local Ray that did not start, twice."""
    return (
        f"could not start a local Ray on this machine (tried twice; {_brief(exc)}); join a "
        "running cluster with --address, or retry on a quieter machine"
    )


def _brief(exc: BaseException) -> str:
    return one_line(f"{type(exc).__name__}: {exc}")


def start_local(start: Callable[[], T], stop: Callable[[], object]) -> T:
    """Run ``start()`` (a local Ray start); when it raises, print one line, ``stop()``, and
    run it once more. Raises :class:`RunError` (exit 1, :func:`start_failed_line`) when the
    second try fails too; ``stop()`` has then run after it as well."""
    try:
        return start()
    except Exception as exc:
        print(
            f"Ray did not start ({_brief(exc)}); shutting it down and trying once more",
            file=sys.stderr,
            flush=True,
        )
        with contextlib.suppress(Exception):
            stop()
    try:
        return start()
    except Exception as exc:
        with contextlib.suppress(Exception):
            stop()
        raise RunError(start_failed_line(exc)) from exc


RAY_ADDRESS_ENV = "RAY_ADDRESS"
"""Set by ``ray job submit`` for the entrypoint (and by users who want every driver to join)."""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def resolve_address(address: str | None, settings: RaySettings) -> str | None:
    """The address to join (flag, then ``RAY_ADDRESS``, then config), or ``None`` to start
    a local Ray."""
    return address or os.environ.get(RAY_ADDRESS_ENV) or settings.address or None


def ensure_ray(address: str | None, settings: RaySettings) -> dict[str, Any]:
    """Connect the driver to Ray and return ``{"version", "address", "embedded",
    "dashboard_url"}`` (the last: :func:`dashboard_http_url`, ``None`` without a dashboard).

    Reuses an already initialised Ray; with an address (flag, ``RAY_ADDRESS``, config, in
    that order) joins that cluster; otherwise starts a local Ray with the dashboard bound to
    ``settings.dashboard_host`` — a non-loopback bind prints a warning — and tries that
    twice (:func:`start_local`; raises :class:`RunError` if both fail). A Ray connected here
    is watched (:func:`~touchstone_ray.fleet.lifeline.watch_cluster`): in a CLI command, its
    loss ends the command with one line.
    """
    import ray

    logging.getLogger("ray").setLevel(ray_logging_level())
    address = resolve_address(address, settings)
    embedded = False
    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False, logging_level=ray_logging_level())
        else:
            if settings.include_dashboard and not is_loopback(settings.dashboard_host):
                print(
                    f"warning: the Ray dashboard will listen on {settings.dashboard_host}, "
                    "reachable from other machines; use 127.0.0.1 and an SSH tunnel instead",
                    file=sys.stderr,
                )
            start_local(
                lambda: ray.init(
                    address="local",
                    include_dashboard=settings.include_dashboard,
                    dashboard_host=settings.dashboard_host,
                    log_to_driver=False,
                    logging_level=ray_logging_level(),
                ),
                ray.shutdown,
            )
            embedded = True
        with contextlib.suppress(Exception):  # a Ray Client connection has no GCS address
            watch_cluster(ray.get_runtime_context().gcs_address)
    context = ray.get_runtime_context()
    return {
        "version": ray.__version__,
        "address": address or context.gcs_address,
        "embedded": embedded,
        "dashboard_url": dashboard_http_url(),
    }


def _decode(value: object) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return value if isinstance(value, str) and value else None


def dashboard_url() -> str | None:
    """``host:port`` where the connected cluster's dashboard listens, or ``None`` (no
    dashboard, or not knowable). Requires an initialised Ray.

    The dashboard head writes its address into the GCS internal KV (namespace
    ``dashboard``, key ``dashboard``; ``webui:url`` from the node that started it). A bind to
    ``0.0.0.0`` is stored as the head's IP, so a non-loopback value means "reachable from
    other machines".
    """
    try:
        from ray.experimental.internal_kv import _internal_kv_get

        for key in ("dashboard", "webui:url"):
            url = _decode(_internal_kv_get(key, namespace="dashboard"))
            if url:
                return url
    except Exception:
        pass
    try:
        import ray

        node = ray._private.worker.global_worker.node
        return _decode(node.address_info.get("webui_url")) if node is not None else None
    except Exception:
        return None


def dashboard_http_url() -> str | None:
    """The connected cluster's dashboard web UI as a link, ``http://host:port``, or ``None``
    when it serves none (``include_dashboard: false``, ``--include-dashboard false``) or
    that is not knowable. Requires an initialised Ray.

    Read from the GCS internal KV key ``webui:url`` (namespace ``dashboard``), which the head
    fills only when it serves the web UI; the ``dashboard`` key that :func:`dashboard_url`
    reads first is set even without it (measured on Ray 2.60: ``127.0.0.1:8265`` with
    ``include_dashboard=False``, ``webui:url`` empty)."""
    url: str | None = None
    try:
        from ray.experimental.internal_kv import _internal_kv_get

        url = _decode(_internal_kv_get("webui:url", namespace="dashboard"))
    except Exception:
        url = None
    if not url:
        return None
    return url if "://" in url else f"http://{url}"


def url_host(url: str) -> str:
    """The host part of ``host:port``, ``[v6]:port`` or ``http://host:port/…``."""
    parts = urlsplit(url if "://" in url else f"//{url}")
    return parts.hostname or url


def dashboard_exposure_warning(url: str | None = None) -> str | None:
    """A one-line warning when the cluster's dashboard listens on a non-loopback address
    (``url`` defaults to :func:`dashboard_url`); ``None`` when it is loopback or unknown."""
    url = url if url is not None else dashboard_url()
    if not url:
        return None
    host = url_host(url)
    if is_loopback(host):
        return None
    return (
        f"warning: this cluster's Ray dashboard listens on {url}, reachable from other "
        "machines (it takes job submissions: code that runs on every node); restart the head "
        "with --dashboard-host 127.0.0.1 and open it through an SSH tunnel "
        "(ssh -L 8265:127.0.0.1:8265 HEAD)"
    )
