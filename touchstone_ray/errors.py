"""One exception tree for touchstone-ray (modelled on httpx ``_exceptions.py``).

::

    TouchstoneError
    ├── UsageError            bad input: CLI exits 2
    │   ├── PackError         a pack YAML that fails the loader's rules
    │   ├── ConfigError       a fleet or judge config that cannot be used
    │   └── BundleError       a bundle that cannot be read or resumed
    ├── EngineError           one request to a model server failed (stored as data)
    │   ├── EngineTimeout     deadline or read timeout          -> error_kind "timeout"
    │   ├── EngineConnectError cannot reach the endpoint        -> error_kind "connect"
    │   │   └── EngineRefused  refused: waited for within engine_down_timeout_s
    │   ├── EngineHTTPError   non-2xx status                    -> "http_4xx" / "http_5xx"
    │   │   ├── EngineModelLoading 503 while the model loads: retried within load_timeout_s
    │   │   ├── EngineContextError the prompt exceeds the context   -> "context", never retried
    │   │   └── EngineToolsRefused a server not started to take tools -> "config", never retried
    │   └── StreamProtocolError bad bytes or an error event in a 200 stream -> "protocol"
    └── RunError              a run that failed or was aborted: CLI exits 1
        └── BundleWriteError  the bundle's disk failed (read-only, full): the run stopped

The CLI turns any :class:`TouchstoneError` into one line and an exit code
(:attr:`TouchstoneError.exit_code`); ``--debug`` shows the traceback.

A judge that fails is not an exception: an aborted judge (``max_consecutive_failures`` in a
row, or its node or actor lost) stops alone while the other judges finish and the scorecard
is written; ``run_judge`` says so in its lines and its exit code 1.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal, TypeGuard

if TYPE_CHECKING:
    from pydantic import ValidationError

ErrorKind = Literal[
    "timeout", "http_4xx", "http_5xx", "connect", "protocol", "node_lost", "config", "context"
]
"""The ``error_kind`` values of an EvalResponse (SPEC §7)."""


class TouchstoneError(Exception):
    """Base of every error touchstone-ray raises on purpose."""

    exit_code: ClassVar[int] = 1


class UsageError(TouchstoneError):
    """Invalid usage, pack or config: the CLI exits 2."""

    exit_code: ClassVar[int] = 2


class PackError(UsageError):
    """A pack that fails validation; the message names file, YAML path and value."""


class ConfigError(UsageError):
    """A fleet or judge config that cannot be used; the message names file and key."""


class BundleError(UsageError):
    """A bundle that cannot be read, or cannot be resumed with the given inputs."""


class EngineError(TouchstoneError):
    """A request to a model server failed.

    ``error_kind`` is the SPEC §7 category stored on the failed cell; ``retryable`` says
    whether the retry policy may try again.
    """

    error_kind: ErrorKind = "protocol"
    retryable: bool = False


class EngineTimeout(EngineError):
    """The per-request deadline or a read timeout expired."""

    error_kind: ErrorKind = "timeout"
    retryable = True


class EngineConnectError(EngineError):
    """The endpoint could not be reached (refused, DNS, reset before a response)."""

    error_kind: ErrorKind = "connect"
    retryable = True


class EngineRefused(EngineConnectError):
    """The endpoint refused the connection (nothing listens on its port: an engine that
    restarts or stopped). The retry policy waits for it up to ``engine_down_timeout_s``,
    probing every ``down_probe_s``, without counting against ``max_attempts``."""


class EngineHTTPError(EngineError):
    """The server answered with a non-2xx status; 5xx retryable, 4xx not."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.error_kind = "http_5xx" if status_code >= 500 else "http_4xx"
        self.retryable = status_code >= 500


class EngineModelLoading(EngineHTTPError):
    """HTTP 503 while the server loads the model (llama.cpp ``Loading model``, the simulator's
    ``model is loading``): retried within the engine's long ``load_timeout_s`` budget instead of
    counting against ``max_attempts``."""

    def __init__(self, message: str) -> None:
        super().__init__(503, message)


class EngineContextError(EngineHTTPError):
    """The server refused the request because the prompt (+ ``max_tokens``) exceeds the
    model's context (llama.cpp 400 ``exceed_context_size_error``, vLLM 400 "maximum context
    length"): ``error_kind`` ``"context"``, never retried (the same prompt fails again)."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(status_code, message)
        self.error_kind = "context"
        self.retryable = False


class EngineToolsRefused(EngineHTTPError):
    """The server refused a request with tools because of how it was started or what the
    model's template can do (vLLM without ``--enable-auto-tool-choice --tool-call-parser``,
    llama.cpp without ``--jinja``, an Ollama model without tool support): ``error_kind``
    ``"config"``, never retried (every request with tools fails the same way); the message
    says how to start the server (:func:`touchstone_ray.engines._tools.tools_refusal`)."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(status_code, message)
        self.error_kind = "config"
        self.retryable = False


class StreamProtocolError(EngineError):
    """Malformed stream bytes, or an ``{"error": ...}`` object inside a 200 stream."""

    error_kind: ErrorKind = "protocol"


class RunError(TouchstoneError):
    """A run failed or was aborted: the CLI exits 1."""


class BundleWriteError(RunError):
    """The bundle could not be written (a disk gone read-only or full); every record written
    before is intact. Made by :func:`write_failed`."""


def is_disk_error(exc: BaseException) -> TypeGuard[OSError]:
    """Whether ``exc`` is a file system's ``OSError``, not one of Ray's (``ConnectionError``,
    ``TimeoutError``: both are ``OSError`` subclasses too)."""
    return isinstance(exc, OSError) and not isinstance(exc, ConnectionError | TimeoutError)


def write_failed(bundle: Path | str, exc: OSError, command: str) -> BundleWriteError:
    """The one line for a bundle that cannot be written: ``<bundle>: cannot write the bundle
    (<strerror>); <command> aborted, every record written before is intact``."""
    return BundleWriteError(
        f"{bundle}: cannot write the bundle ({exc.strerror or exc}); {command} aborted, "
        "every record written before is intact"
    )


@contextlib.contextmanager
def writes_into(bundle: Path | str, command: str) -> Iterator[None]:
    """Turn a disk's ``OSError`` (:func:`is_disk_error`) inside into :func:`write_failed`."""
    try:
        yield
    except OSError as exc:
        if not is_disk_error(exc):
            raise
        raise write_failed(bundle, exc, command) from exc


def field_error(exc: ValidationError) -> str:
    """``<field path>: <message>`` of the first error of ``exc``, the field path dotted
    (``hosts.gpu-a.cpu_count: Input should be a valid integer``; ``(top level)`` for the object
    itself): how a bundle file that fails its model is named in a :class:`BundleError`."""
    err = exc.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
    return f"{loc}: {err['msg']}"


def one_line(text: str, limit: int = 300) -> str:
    """``text`` with all whitespace runs folded to one space, cut to ``limit`` characters: the
    form every error message of the project takes (server bodies and tracebacks included)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
