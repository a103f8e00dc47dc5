"""The UI's guards (issue item 8): loopback by default, a token off loopback, Host and Origin
checks, and file access confined to ``--runs`` and the packs folder.

- **Host**: bound to a loopback address, a request must name a loopback host
  (``127.0.0.1``, ``localhost``, ``[::1]``) with the UI's port — a page on another site that
  re-points its DNS name at 127.0.0.1 (DNS rebinding) is refused with 403.
- **Token**: bound elsewhere, every request needs the token: ``Authorization: Bearer <t>``,
  or the ``touchstone_ui`` cookie that ``/?token=<t>`` sets (HttpOnly, SameSite=Strict).
  Wrong or missing: 401.
- **Origin**: every state-changing request (anything but GET/HEAD/OPTIONS) must carry an
  ``Origin`` equal to ``http://<Host>``; missing or different: 403 (a cross-site form post
  cannot act).
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web
from aiohttp.typedefs import Middleware

from touchstone_ray.bundle import Bundle

__all__ = [
    "COOKIE",
    "SAFE_METHODS",
    "confined",
    "confined_bundle",
    "guard_middleware",
    "is_loopback_host",
]

COOKIE = "touchstone_ui"
"""Name of the cookie that carries the token after ``/?token=…``."""
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods that change nothing; every other one passes the Origin check first."""
LOOPBACK_NAMES = ("localhost",)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_loopback_host(host: str) -> bool:
    """``127.0.0.1``, ``::1``, ``localhost`` (any 127/8 address) → True."""
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _split_host(value: str) -> tuple[str, int | None]:
    """``127.0.0.1:8765`` → ``("127.0.0.1", 8765)``; ``[::1]:80`` → ``("::1", 80)``."""
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        name, _, port = value.rpartition(":") if value.count(":") == 1 else (value, "", "")
    return name.lower(), int(port) if port.isdigit() else None


def host_allowed(header: str | None, bind_host: str, port: int) -> bool:
    """Whether a ``Host`` header may reach a UI bound to ``bind_host``:``port``.

    Bound to loopback: only a loopback name with the UI's port. Bound elsewhere the token
    protects every request, so any Host passes.
    """
    if not is_loopback_host(bind_host):
        return True
    if not header:
        return False
    name, got_port = _split_host(header)
    return is_loopback_host(name) and got_port == port


def origin_allowed(origin: str | None, host_header: str | None) -> bool:
    """Same-origin check of a state-changing request: ``Origin`` is ``http://<Host>``."""
    return bool(origin and host_header) and origin == f"http://{host_header}"


def guard_middleware(bind_host: str, port: int, token: str | None) -> Middleware:
    """The aiohttp middleware that enforces the module's three checks, in the order Host,
    token, Origin. ``port`` is the port the UI listens on (0 is resolved by the caller)."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not host_allowed(request.headers.get("Host"), bind_host, port):
            return web.Response(status=403, text="refused: Host is not this UI's loopback address")
        if token is not None:
            query_token = request.query.get("token")
            if query_token is not None and hmac.compare_digest(query_token, token):
                response = web.HTTPSeeOther(request.rel_url.path or "/")
                response.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
                return response
            bearer = request.headers.get("Authorization", "").removeprefix("Bearer ")
            given = request.cookies.get(COOKIE) or bearer
            if not given or not hmac.compare_digest(given, token):
                return web.Response(status=401, text="refused: a valid token is required")
        if request.method not in SAFE_METHODS and not origin_allowed(
            request.headers.get("Origin"), request.headers.get("Host")
        ):
            return web.Response(status=403, text="refused: Origin does not match this UI")
        return await handler(request)

    return guard


def confined(base: Path, relative: str) -> Path | None:
    """``base / relative`` resolved, or ``None`` when it leaves ``base`` (``..``, an absolute
    path, a symlink pointing out)."""
    root = base.resolve()
    try:
        target = (root / relative).resolve()
    except (OSError, ValueError):
        return None
    return target if target == root or target.is_relative_to(root) else None


def confined_bundle(runs: Path, relative: str) -> Path | None:
    """The bundle folder ``runs / relative`` resolved (one holding a ``bundle.json``), or
    ``None`` when it leaves ``runs`` (see :func:`confined`), is ``runs`` itself or is no
    bundle."""
    root = confined(runs, relative)
    if root is None or root == runs.resolve() or not Bundle(root).layout.manifest.is_file():
        return None
    return root
