"""Byte framing shared by the protocol parsers: NDJSON lines (Ollama) and SSE events (OpenAI).

A :class:`StreamParser` is fed raw body chunks with their arrival time and hands each complete
payload to :meth:`StreamParser.on_payload`, which a protocol subclass implements. Everything is
synchronous and network-free, so it is unit-tested on byte chunks directly.

SSE framing follows the WHATWG "server-sent events" format as OpenAI-compatible servers use it:
``data: <json>`` lines, an empty line ending the event, ``: comment`` lines (keep-alives)
ignored, ``event:``/``id:``/``retry:`` fields ignored, ``data: [DONE]`` the end marker. Any
other line is garbage and a :class:`StreamProtocolError`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from touchstone_ray.engines.normalize import StreamNormalizer
from touchstone_ray.errors import StreamProtocolError

MAX_LINE_BYTES = 16 * 1024 * 1024
"""A line longer than this (bytes) without a newline is a protocol error."""

_SSE_IGNORED = (b"event", b"id", b"retry")


def _preview(data: bytes) -> str:
    return repr(data[:80])


class StreamParser(ABC):
    """Frames body bytes into payloads and parses them into :class:`StreamNormalizer` events.

    ``framing`` is ``"ndjson"`` (one JSON object per line) or ``"sse"`` (server-sent events).
    :attr:`done` turns true on the protocol's end marker. Methods raise
    :class:`StreamProtocolError` on malformed bytes or an error object in the stream.
    """

    framing: ClassVar[str] = "ndjson"

    def __init__(self, norm: StreamNormalizer) -> None:
        self.norm = norm
        self.done = False
        """Whether the protocol's end marker arrived."""
        self.t_done: float | None = None
        """perf_counter time of the end marker, else ``None``."""
        self._buf = b""
        self._data: list[bytes] = []
        self._data_t = 0.0

    def feed(self, t: float, chunk: bytes) -> None:
        """Parse body bytes that arrived at perf_counter time ``t`` (any split is fine).

        A piece that is exactly one SSE event of one ``data: `` line (``data: <payload>\\n\\n``,
        no ``\\r``), with nothing buffered before it, the usual piece when the reader keeps up,
        goes to the payload without the line loop; the result is the same."""
        if (
            self.framing == "sse"
            and not self._buf
            and not self._data
            and not self.done
            and chunk.startswith(b"data: ")
            and chunk.find(b"\n") == len(chunk) - 2
            and chunk.endswith(b"\n")
            and b"\r" not in chunk
        ):
            self._data_t = t
            self._data.append(chunk[6:-2])
            self._dispatch()
            return
        buf = self._buf + chunk if self._buf else chunk
        start = 0
        while not self.done:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            self._line(t, buf[start:nl])
            start = nl + 1
        self._buf = buf[start:] if not self.done else b""
        if len(self._buf) > MAX_LINE_BYTES:
            raise StreamProtocolError(f"stream line longer than {MAX_LINE_BYTES} bytes")

    def eof(self, t: float) -> None:
        """The body ended at perf_counter time ``t``: flush a last unterminated line or event,
        then check that the stream was complete (:meth:`check_complete`)."""
        if not self.done and self._buf.strip():
            self._line(t, self._buf)
        self._buf = b""
        if not self.done and self._data:
            self._dispatch()
        self.check_complete()

    def _line(self, t: float, line: bytes) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if self.framing == "ndjson":
            if line.strip():
                self.on_payload(t, line)
            return
        if not line:
            if self._data:
                self._dispatch()
            return
        if line.startswith(b"data:"):  # the common line first, without splitting it
            self._data.append(line[6:] if line.startswith(b" ", 5) else line[5:])
            self._data_t = t
            return
        if line.startswith(b":"):
            return
        field = line.partition(b":")[0]
        if field == b"data":  # "data" without a colon: an empty data line
            self._data.append(b"")
            self._data_t = t
        elif field not in _SSE_IGNORED:
            raise StreamProtocolError(f"malformed SSE line {_preview(line)}")

    def _dispatch(self) -> None:
        data = self._data
        payload = data[0] if len(data) == 1 else b"\n".join(data)
        data.clear()
        if len(payload) < 16 and payload.strip() == b"[DONE]":
            self.mark_done(self._data_t)
        else:
            self.on_payload(self._data_t, payload)

    def mark_done(self, t: float) -> None:
        """Record the protocol's end marker, arrived at perf_counter time ``t``."""
        self.done = True
        self.t_done = t

    @abstractmethod
    def on_payload(self, t: float, payload: bytes) -> None:
        """Parse one NDJSON line or SSE ``data`` payload that arrived at ``t``."""

    @abstractmethod
    def check_complete(self) -> None:
        """Raise :class:`StreamProtocolError` if the body ended before the stream was
        complete (no end marker)."""


_decode = json.JSONDecoder().decode


def load_object(payload: bytes) -> dict[str, Any]:
    """Parse one JSON payload that must be an object; raises :class:`StreamProtocolError`
    on invalid UTF-8, invalid JSON or a non-object. A payload that opens with ``{`` and a
    byte other than NUL is UTF-8 by ``json.loads``'s own detection, so it is decoded as such
    and handed to the decoder directly (what ``json.loads`` does, without its checks)."""
    try:
        if payload[:1] == b"{" and payload[1:2] != b"\x00":
            obj = _decode(payload.decode("utf-8", "surrogatepass"))
        else:
            obj = json.loads(payload)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise StreamProtocolError(f"malformed chunk {_preview(payload)}") from exc
    if not isinstance(obj, dict):
        raise StreamProtocolError(f"chunk is not a JSON object: {_preview(payload)}")
    return obj


def error_text(error: Any) -> str:
    """A readable one-liner for an ``error`` value found in a stream (str or object)."""
    if isinstance(error, dict):
        message = error.get("message") or error.get("error") or json.dumps(error)
        return str(message)
    return str(error)


def text_or_none(value: Any) -> str | None:
    """``value`` if it is a string, else ``None`` (nulls and odd types carry no token)."""
    return value if isinstance(value, str) else None


def int_or_none(value: Any) -> int | None:
    """``value`` if it is a non-negative int (not bool), else ``None``."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


SERVER_TIMING_KEYS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n")
"""The ``server_timings`` keys (SPEC §7): token counts and milliseconds, as llama.cpp names them."""


def server_timings(value: Any) -> dict[str, float | int | None] | None:
    """The :data:`SERVER_TIMING_KEYS` of a llama.cpp ``timings`` object (a number, else
    ``None``, per key), or ``None`` when ``value`` is not an object with any of them."""
    if not isinstance(value, dict):
        return None
    out: dict[str, float | int | None] = {}
    for key in SERVER_TIMING_KEYS:
        item = value.get(key)
        out[key] = item if isinstance(item, int | float) and not isinstance(item, bool) else None
    return out if any(v is not None for v in out.values()) else None


def incomplete(message: str) -> StreamProtocolError:
    """A retryable protocol error for a body that ended before the protocol's end."""
    error = StreamProtocolError(message)
    error.retryable = True
    return error
