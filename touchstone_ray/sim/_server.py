"""The aiohttp application and its runners: :class:`SimServer` (a daemon thread with its own
event loop, usable from tests and from a Ray actor) and :func:`serve_forever` (the CLI).

Both protocols share one port: Ollama under ``/api/…``, OpenAI under ``/v1/…`` (plus
``/version``), and the simulator's own ``/sim/stats``, ``/sim/reset``, ``/sim/trace``,
``/sim/config``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from types import TracebackType

from aiohttp import web

from touchstone_ray.sim import _ollama, _openai
from touchstone_ray.sim._config import SimConfig
from touchstone_ray.sim._state import SimState
from touchstone_ray.sim._wire import STATE_KEY, STOPPING_KEY

SHUTDOWN_TIMEOUT_S = 1.0
"""How long stopping waits for open streams before cutting them, seconds."""


async def _stats(request: web.Request) -> web.Response:
    """``GET /sim/stats``: requests, in_flight, max_in_flight per model; requests_by_key."""
    return web.json_response(request.app[STATE_KEY].stats())


async def _reset(request: web.Request) -> web.Response:
    """``POST /sim/reset``: forget counters, traces and loaded models."""
    request.app[STATE_KEY].reset()
    return web.json_response({"ok": True})


async def _trace(request: web.Request) -> web.Response:
    """``GET /sim/trace?limit=N``: the last N request traces (default 100), oldest first."""
    try:
        limit = max(0, int(request.query.get("limit", "100")))
    except ValueError:
        return web.json_response({"error": "limit must be an integer"}, status=400)
    traces = list(request.app[STATE_KEY].traces)
    chosen = traces[-limit:] if limit else []
    return web.json_response({"traces": [t.to_json() for t in chosen]})


async def _config(request: web.Request) -> web.Response:
    """``GET /sim/config``: the knobs this server runs with."""
    return web.json_response(request.app[STATE_KEY].config.model_dump(mode="json"))


def build_app(config: SimConfig) -> web.Application:
    """The simulator's aiohttp application (both protocols and ``/sim/…``)."""
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[STATE_KEY] = SimState(config)
    app[STOPPING_KEY] = asyncio.Event()

    async def _on_shutdown(app: web.Application) -> None:
        app[STOPPING_KEY].set()

    app.on_shutdown.append(_on_shutdown)
    _ollama.add_routes(app)
    _openai.add_routes(app)
    app.router.add_get("/sim/stats", _stats)
    app.router.add_post("/sim/reset", _reset)
    app.router.add_get("/sim/trace", _trace)
    app.router.add_get("/sim/config", _config)
    return app


async def _start(config: SimConfig, host: str, port: int) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(build_app(config), access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT_S)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0]
    shown = f"[{bound[0]}]" if ":" in str(bound[0]) else str(bound[0])
    return runner, f"http://{shown}:{bound[1]}"


class SimServer:
    """A simulated model server on a daemon thread with its own event loop.

    ``start()`` returns the base URL (``http://127.0.0.1:PORT``; Ollama paths below it, the
    OpenAI base URL is that plus ``/v1``) once the socket listens; ``stop()`` shuts it down,
    cutting open streams after :data:`SHUTDOWN_TIMEOUT_S`. ``port=0`` picks a free port.
    Usable as a context manager, from plain Python and inside a Ray actor.
    """

    def __init__(
        self, config: SimConfig | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.config = config if config is not None else SimConfig()
        self.host = host
        self.port = port
        self.url: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._done: asyncio.Event | None = None

    def start(self, timeout_s: float = 10.0) -> str:
        """Start serving; returns the base URL. Raises what binding raised (e.g. port in use)."""
        if self.url is not None:
            return self.url
        ready = threading.Event()
        failure: list[BaseException] = []

        def _run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                self._runner, self.url = loop.run_until_complete(
                    _start(self.config, self.host, self.port)
                )
                self._done = asyncio.Event()
            except BaseException as exc:  # reported to start()
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_until_complete(self._done.wait())
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=_run, name="touchstone-sim", daemon=True)
        self._thread.start()
        if not ready.wait(timeout_s):
            raise TimeoutError(f"simulated server did not start within {timeout_s} s")
        if failure:
            self._thread.join()
            raise failure[0]
        assert self.url is not None
        return self.url

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop serving and join the thread (idempotent)."""
        loop, done, thread = self._loop, self._done, self._thread
        if loop is not None and done is not None and not loop.is_closed():
            loop.call_soon_threadsafe(done.set)
        if thread is not None:
            thread.join(timeout_s)
        self.url = None
        self._loop = self._done = self._thread = self._runner = None

    def __enter__(self) -> SimServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def serve_forever(
    config: SimConfig,
    host: str = "127.0.0.1",
    port: int = 11435,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve in the current thread until interrupted (Ctrl-C); ``on_ready(base_url)`` is
    called once the socket listens."""

    async def _main() -> None:
        runner, url = await _start(config, host, port)
        if on_ready is not None:
            on_ready(url)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main())
