"""The wire as a yardstick: a loopback capture of one server port and, per streamed request,
when its last request byte and its first content token crossed the wire (not a test module).

The kernel stamps every packet as it passes ``lo`` (``tcpdump --time-stamp-precision=nano``),
so ``wire TTFT`` = (time of the TCP segment that completes the server's first SSE event with a
non-empty ``delta.content`` or ``delta.reasoning_content``) − (time of the segment holding the
request's last body byte). A client's TTFT minus that is what the client itself adds: its
clock start before the send, and its wake-up and parsing after the token arrived. The server's
own phase (which batch a request met, how long it waited for a slot) is in both terms and
cancels, which ``TTFT − prompt_ms`` cannot do at concurrency > 1.

Needs ``tcpdump`` (Debian package) and root, and ``dpkt`` to read the capture
(``pip install dpkt``); :func:`available` says whether both are there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

NONCE = re.compile(rb"\[[A-Za-z0-9_.-]+-\d+-\d+\]")
"""A request's cache-busting first line, ``[<tool><rep>-<level>-<i>]`` (bench_real_fidelity)."""


def available() -> str | None:
    """None when a capture can run here, else why not (one line)."""
    if shutil.which("tcpdump") is None:
        return "tcpdump not found (apt-get install tcpdump)"
    try:
        import dpkt  # noqa: F401
    except ImportError:
        return "dpkt not installed (pip install dpkt)"
    return None


@contextmanager
def capture(port: int, path: Path, cpus: set[int] | None = None) -> Iterator[Path]:
    """Capture TCP port ``port`` on ``lo`` into ``path`` (pcap, ns stamps) while the block runs,
    and after it until the file stops growing (tcpdump reads the kernel's buffer late on a busy
    machine); tcpdump runs on ``cpus`` (all when None). Raises RuntimeError when tcpdump does not
    start listening within 10 s."""
    cmd = ["tcpdump", "-i", "lo", "-U", "--immediate-mode", "-s", "0", "-B", "16384", "-n"]
    cmd += ["--time-stamp-precision=nano", "-w", str(path), f"tcp port {port}"]
    err = path.with_suffix(".log")
    with err.open("w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    if cpus is not None:
        os.sched_setaffinity(proc.pid, cpus)
    try:
        deadline = time.monotonic() + 10
        while "listening on" not in err.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"tcpdump did not start: {err.read_text()[-500:]}")
            time.sleep(0.05)
        yield path
    finally:
        size, deadline = -1, time.monotonic() + 10
        while path.stat().st_size != size and time.monotonic() < deadline:  # the last segments
            size = path.stat().st_size
            time.sleep(0.5)
        proc.send_signal(2)
        proc.wait(timeout=10)


@dataclass
class _Flow:
    """One direction of one TCP connection: its bytes in order, and where each segment ends
    (byte offset, capture time s)."""

    data: bytearray = field(default_factory=bytearray)
    ends: list[tuple[int, float]] = field(default_factory=list)
    next_seq: int | None = None

    def add(self, seq: int, payload: bytes, ts: float) -> None:
        if self.next_seq is not None and seq < self.next_seq:  # a retransmission
            return
        self.data += payload
        self.next_seq = seq + len(payload)
        self.ends.append((len(self.data), ts))

    def time_of(self, offset: int) -> float:
        """Capture time of the segment that holds byte ``offset - 1``."""
        for end, ts in self.ends:
            if end >= offset:
                return ts
        raise ValueError(f"offset {offset} past the flow's {len(self.data)} bytes")


@dataclass(frozen=True)
class WireRequest:
    """One streamed request as the wire saw it (times in ms from the request's last byte)."""

    nonce: str | None
    """The request body's cache-busting line, if any."""
    prompt_n: int | None
    """The server's prompt token count (``timings.prompt_n`` or ``usage.prompt_tokens``)."""
    ttft_ms: float | None
    """First content token's segment − the request's last byte."""
    e2e_ms: float | None
    """The response's last byte (``[DONE]``, else the stream's last segment) − the request's."""


def _headers_end(data: bytes | bytearray, start: int) -> tuple[int, dict[str, str]] | None:
    end = data.find(b"\r\n\r\n", start)
    if end < 0:
        return None
    lines = bytes(data[start:end]).decode("latin-1").split("\r\n")[1:]
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines)}
    return end + 4, headers


def _dechunk(data: bytearray, start: int) -> tuple[bytes, list[int]]:
    """A chunked body from ``start``: the payload and, per payload byte, its offset in
    ``data``."""
    out, where = bytearray(), []
    pos = start
    while True:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            break
        size = int(bytes(data[pos:eol]).split(b";")[0] or b"0", 16)
        if size == 0:
            break
        body = eol + 2
        out += data[body : body + size]
        where.extend(range(body, body + size))
        pos = body + size + 2
    return bytes(out), where


def _response(flow: _Flow, start: int) -> tuple[int, float | None, float | None, int | None]:
    """``(next start, t first content, t last byte, prompt_n)`` of the response at ``start``."""
    parsed = _headers_end(flow.data, start)
    if parsed is None:
        return len(flow.data), None, None, None
    body_at, headers = parsed
    if "chunked" in headers.get("transfer-encoding", ""):
        payload, where = _dechunk(flow.data, body_at)
        end = flow.data.find(b"0\r\n\r\n", where[-1] if where else body_at)
        nxt = end + 5 if end >= 0 else len(flow.data)
    else:
        n = int(headers.get("content-length", len(flow.data) - body_at))
        payload = bytes(flow.data[body_at : body_at + n])
        where = list(range(body_at, body_at + n))
        nxt = body_at + n
    t_first = t_last = None
    prompt_n = None
    pos = 0
    while True:
        eol = payload.find(b"\n", pos)
        if eol < 0:
            break
        line = payload[pos:eol].strip()
        pos = eol + 1
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        t_line = flow.time_of(where[eol] + 1)
        if data == b"[DONE]":
            t_last = t_line
            continue
        try:
            chunk = json.loads(data)
        except ValueError:
            continue
        if t_first is None:
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content") or delta.get("reasoning_content"):
                    t_first = t_line
        timings = chunk.get("timings") or {}
        usage = chunk.get("usage") or {}
        prompt_n = timings.get("prompt_n", usage.get("prompt_tokens", prompt_n))
    if t_last is None and flow.ends:
        t_last = flow.time_of(min(nxt, len(flow.data)))
    return nxt, t_first, t_last, prompt_n


def requests(path: Path, port: int) -> list[WireRequest]:
    """Every HTTP request to ``port`` in the capture, with its response's wire times."""
    import dpkt

    flows: dict[tuple[int, int, str], _Flow] = {}
    generation: dict[int, int] = {}  # a client port used again is another connection
    order: list[tuple[int, int]] = []
    with path.open("rb") as fh:
        for ts, buf in dpkt.pcap.Reader(fh):
            ip = dpkt.ethernet.Ethernet(buf).data
            tcp = ip.data if isinstance(ip, (dpkt.ip.IP, dpkt.ip6.IP6)) else None
            if not isinstance(tcp, dpkt.tcp.TCP):
                continue
            up = tcp.dport == port
            client_port = tcp.sport if up else tcp.dport
            if up and tcp.flags & dpkt.tcp.TH_SYN:
                generation[client_port] = generation.get(client_port, -1) + 1
                order.append((client_port, generation[client_port]))
            if not tcp.data or client_port not in generation:
                continue
            key = (client_port, generation[client_port], "up" if up else "down")
            flows.setdefault(key, _Flow()).add(tcp.seq, bytes(tcp.data), float(ts))
    out: list[WireRequest] = []
    for client in order:
        up, down = flows.get((*client, "up")), flows.get((*client, "down"))
        if up is None:
            continue
        start = down_at = 0
        while start < len(up.data):
            parsed = _headers_end(up.data, start)
            if parsed is None:
                break
            body_at, headers = parsed
            end = body_at + int(headers.get("content-length", "0"))
            body = bytes(up.data[body_at:end])
            t_sent = up.time_of(end)
            start = end
            nonce = NONCE.search(body)
            first = last = prompt_n = None
            if down is not None and down_at < len(down.data):
                down_at, first, last, prompt_n = _response(down, down_at)
            out.append(
                WireRequest(
                    nonce.group().decode() if nonce else None,
                    prompt_n,
                    (first - t_sent) * 1000 if first is not None else None,
                    (last - t_sent) * 1000 if last is not None else None,
                )
            )
    return out
