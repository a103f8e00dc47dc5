"""A Ray head started as a child process for one command's lifetime (``ray start --head
--block`` on free ports, dashboard on 127.0.0.1), stopped with it: the UI's jobs and the
queue's stages run on it, so Ray starts once, not once per run.

Its jobs end with it: Ray's job supervisor starts each entrypoint in a session of its own and
SIGKILLs that group only from a shell loop that polls the supervisor, so a driver could outlive
the head, or die unfinalized. :meth:`LocalCluster.stop` notes the head's whole process tree
(psutil) first and ends what of it is left once the head is down; the head's environment gives
a stopped job's driver :data:`JOB_STOP_WAIT_S` s after SIGTERM before Ray SIGKILLs it (Ray's
default, 3 s, is shorter than a driver's finalize, :data:`~touchstone_ray.fleet.lifeline.END_S`).

Token authentication (Ray 2.60): with ``RAY_AUTH_MODE`` unset, the head runs with a token of
its own (a file in its temporary folder, mode 0600); :meth:`LocalCluster.client_env` is the
environment a driver or CLI child needs to join it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["AUTH_MODE", "JOB_STOP_WAIT_S", "LocalCluster", "die_with_parent"]

AUTH_MODE = "RAY_AUTH_MODE"
"""Ray's switch for token authentication (``token`` | ``disabled``)."""

JOB_STOP_WAIT_S = 10
"""Seconds Ray waits after a stopped job's SIGTERM before it SIGKILLs the driver
(``RAY_JOB_STOP_WAIT_TIME_S`` of the head's job supervisors); above the lifeline's
:data:`~touchstone_ray.fleet.lifeline.END_S`, 8 s."""
LEFT_WAIT_S = 10.0
"""Seconds a process of the head's tree that is left after the head stopped gets between
SIGTERM and SIGKILL."""

PR_SET_PDEATHSIG = 1
"""``prctl`` option: the signal a process gets when its parent dies (Linux, ``prctl(2)``)."""


def die_with_parent() -> None:
    """``preexec_fn`` of a child that must not outlive this process, even when it is
    SIGKILLed: the child gets SIGTERM when its parent exits — precisely, when the *thread*
    that started it ends (Linux ``PR_SET_PDEATHSIG``, ``prctl(2)``; a no-op elsewhere)."""
    import ctypes
    import signal

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalCluster:
    """A Ray head started by this process (``ray start --head --block``), stopped with it;
    with ``RAY_AUTH_MODE`` unset it requires its own token, :attr:`token_file`."""

    def __init__(self, *, tied: bool = False) -> None:
        """Start the head; ``tied``: it gets SIGTERM when the thread that started it ends (or
        its process is killed, :func:`die_with_parent`), for a head started on the main
        thread of a command that may be SIGKILLed."""
        self.tmp = Path(tempfile.mkdtemp(prefix="tsui-", dir="/tmp"))
        self.dashboard_port = _free_port()
        self.gcs_port = _free_port()
        ray = shutil.which("ray") or str(Path(sys.executable).with_name("ray"))
        cmd = [ray, "start", "--head", "--block", "--disable-usage-stats"]
        cmd += ["--port", str(self.gcs_port), "--dashboard-host", "127.0.0.1"]
        cmd += ["--dashboard-port", str(self.dashboard_port)]
        cmd += ["--dashboard-agent-listen-port", str(_free_port())]
        cmd += ["--temp-dir", str(self.tmp / "ray")]
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        env["RAY_JOB_STOP_WAIT_TIME_S"] = str(JOB_STOP_WAIT_S)
        self.token_file: Path | None = None
        """The token the head requires (``RAY_AUTH_MODE`` unset), else None."""
        if AUTH_MODE not in os.environ:
            self.token_file = self.tmp / "auth_token"
            fd = os.open(self.token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(32))  # as ``ray get-auth-token --generate``
            env.pop("RAY_AUTH_TOKEN", None)
            env.update({AUTH_MODE: "token", "RAY_AUTH_TOKEN_PATH": str(self.token_file)})
        self._env = env
        self.log = open(self.tmp / "ray-start.log", "w")  # noqa: SIM115 - lives with the head
        self.proc = subprocess.Popen(
            cmd,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            preexec_fn=die_with_parent if tied else None,
        )

    @property
    def address(self) -> str:
        """The head's GCS address (``127.0.0.1:<port>``), for ``--address`` / ``ray.init``."""
        return f"127.0.0.1:{self.gcs_port}"

    def client_env(self) -> dict[str, str]:
        """The environment of a process that joins this head (its token settings)."""
        return dict(self._env)

    @property
    def url(self) -> str:
        """The head's dashboard address (``http://127.0.0.1:<port>``)."""
        return f"http://127.0.0.1:{self.dashboard_port}"

    @property
    def headers(self) -> dict[str, str] | None:
        """The HTTP headers a client of this head sends: ``Authorization: Bearer <token>``
        when it has its own token, else None (Ray's settings decide)."""
        if self.token_file is None:
            return None
        return {"Authorization": "Bearer " + self.token_file.read_text().strip()}

    def stop(self) -> None:
        """Stop the head process (``--block`` takes its cluster down with it), then every
        process of its tree, as noted just before, that is still running: SIGTERM, up to
        :data:`LEFT_WAIT_S` s, SIGKILL (a job's driver finalizes on SIGTERM)."""
        import psutil

        tree: list[psutil.Process] = []
        with contextlib.suppress(psutil.Error):
            tree = psutil.Process(self.proc.pid).children(recursive=True)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        _, left = psutil.wait_procs(tree, timeout=0)
        for proc in left:
            with contextlib.suppress(psutil.Error):
                proc.terminate()
        _, left = psutil.wait_procs(left, timeout=LEFT_WAIT_S)
        for proc in left:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(left, timeout=LEFT_WAIT_S)
        self.log.close()
