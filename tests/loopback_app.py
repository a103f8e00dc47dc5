"""A test HTTP server: an aiohttp app on a free 127.0.0.1 port, in a daemon thread with its
own event loop (the engines' replay server and the judging tests' canned judge use it)."""

from __future__ import annotations

import asyncio
import threading

from aiohttp import web


class LoopbackApp:
    """Subclasses add their handlers in :meth:`add_routes`; ``url`` is ``http://127.0.0.1:PORT``
    once :meth:`start` returned. ``_stopping`` is set when :meth:`stop` is called (a handler
    that hangs on purpose can watch it)."""

    thread_name = "loopback-app"

    def __init__(self) -> None:
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopping: asyncio.Event | None = None

    def add_routes(self, app: web.Application) -> None:
        """Register the handlers on ``app``."""
        raise NotImplementedError

    def start(self) -> str:
        """Start serving on a free loopback port; returns the base URL."""
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._stopping = asyncio.Event()
            app = web.Application()
            self.add_routes(app)
            runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
            loop.run_until_complete(runner.setup())
            site = web.TCPSite(runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            host, port = runner.addresses[0][:2]
            self.url = f"http://{host}:{port}"
            ready.set()
            loop.run_until_complete(self._stopping.wait())
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name=self.thread_name, daemon=True)
        self._thread.start()
        assert ready.wait(10), f"{self.thread_name} did not start"
        return self.url

    def stop(self) -> None:
        """Stop serving (cuts hanging streams)."""
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(10)
