"""Shared helpers of the ``bench/bench_eval_*.py`` scripts (not a test module).

* :func:`machine` describes the machine a figure was measured on;
* :func:`spread` turns repeated measurements into ``{min, median, max, n}``;
* :class:`SimProcess` runs the simulator in its own process (so it shares no GIL with the
  process being measured) and hands out its base URL;
* :func:`synthetic_pack` / :func:`fleet_config` write the pack and fleet config of a run;
* :func:`run_eval_cli` runs ``touchstone-ray eval`` as a child process with its own ``HOME``
  and ``RAY_TMPDIR`` (ray-notes.md), sampling the driver's RSS every ``interval_s`` seconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import yaml

MODEL_ID = "bench-model"
"""The model id every bench config serves (the simulator serves any name)."""
LOAD_AT_START = os.getloadavg()[0]
"""1-minute load average when the bench started (other work on the machine skews figures)."""
CLI = Path(sys.prefix) / "bin" / "touchstone-ray"
"""The console script itself, so the child's pid is the driver (no shell, no shim)."""

SIM_SERVER = """
import sys
from touchstone_ray.sim import SimConfig, serve_forever
serve_forever(SimConfig(**{cfg!r}), port=0, on_ready=lambda url: print(url, flush=True))
"""


def tree() -> dict[str, Any]:
    """What code was measured: git HEAD and a digest of ``touchstone_ray/**/*.py`` as they are
    on disk (several people edit the tree; the digest tells two runs of the same code)."""
    import hashlib

    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted((root / "touchstone_ray").rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        head = None
    return {"git_head": head, "touchstone_ray_sha256": digest.hexdigest()[:16]}


def machine() -> dict[str, Any]:
    """Cores, RAM, CPU model, OS, Python and Ray version of this machine, and the code tree."""
    import ray

    from touchstone_ray.fleet import cpu_model

    return {
        "cores_logical": os.cpu_count(),
        "cores_physical": psutil.cpu_count(logical=False),
        "ram_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "cpu": cpu_model(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "ray": ray.__version__,
        "loadavg_1m_at_start": round(LOAD_AT_START, 2),
        "loadavg_1m_at_end": round(os.getloadavg()[0], 2),
        **tree(),
    }


def spread(values: list[float], digits: int = 3) -> dict[str, Any]:
    """``{min, median, max, n}`` of repeated measurements (``None`` entries dropped)."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return {"min": None, "median": None, "max": None, "n": 0}
    return {
        "min": round(min(vals), digits),
        "median": round(statistics.median(vals), digits),
        "max": round(max(vals), digits),
        "n": len(vals),
    }


@contextmanager
def pinned_apart(server_pid: int) -> Iterator[dict[str, list[int]] | None]:
    """While the block runs, the server's process tree (every thread) on the last allowed CPU
    and this process's threads on the others (threads and processes it starts meanwhile
    inherit that), as a client on its own machine would be; afterwards this process's threads
    get their CPUs back. Yields ``{server, client}`` CPU lists, or ``None`` (nothing pinned)
    with fewer than 2 CPUs."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        yield None
        return
    server, client = {cpus[-1]}, set(cpus[:-1])
    root = psutil.Process(server_pid)
    for proc in [root, *root.children(recursive=True)]:
        for thread in proc.threads():
            os.sched_setaffinity(thread.id, server)
    for thread in psutil.Process().threads():
        os.sched_setaffinity(thread.id, client)
    try:
        yield {"server": sorted(server), "client": sorted(client)}
    finally:
        for thread in psutil.Process().threads():
            with contextlib.suppress(OSError):  # a thread that ended meanwhile
                os.sched_setaffinity(thread.id, set(cpus))


def pooled_ms(values: Iterable[float | None], scale: float = 1.0) -> dict[str, Any]:
    """Median and p99 of ``values`` × ``scale`` (in ms: ``scale`` 1000 for seconds) pooled from
    every repetition, with the p99's 95 % bootstrap interval ``[low, high]``
    (``scipy.stats.bootstrap``, percentile method, 2,000 resamples, seed 0; null under 20
    values, too few for a p99). ``None`` entries are dropped."""
    import numpy as np
    from scipy import stats

    vals = np.asarray([v * scale for v in values if v is not None], dtype=float)
    if not len(vals):
        return {"median_ms": None, "p99_ms": None, "p99_ci95_ms": None, "n": 0}
    ci = None
    if len(vals) >= 20:
        res = stats.bootstrap(
            (vals,),
            lambda x, axis: np.percentile(x, 99, axis=axis),
            n_resamples=2000,
            method="percentile",
            random_state=0,
        )
        ci = [
            round(float(res.confidence_interval.low), 3),
            round(float(res.confidence_interval.high), 3),
        ]
    return {
        "median_ms": round(float(np.percentile(vals, 50)), 3),
        "p99_ms": round(float(np.percentile(vals, 99)), 3),
        "p99_ci95_ms": ci,
        "n": len(vals),
    }


def log(msg: str) -> None:
    """Progress on stderr (stdout carries only the JSON summary)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@contextmanager
def scratch(prefix: str = "tsb") -> Iterator[Path]:
    """A short temp folder (Ray's socket paths must stay short), removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class SimProcess:
    """The simulator (``serve_forever``) in a child process on loopback; ``url`` is its base."""

    def __init__(self, **knobs: Any) -> None:
        self.knobs = knobs
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def __enter__(self) -> SimProcess:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SIM_SERVER.format(cfg=self.knobs)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            self.proc.kill()
            raise RuntimeError(f"simulator did not start (got {self.url!r})")
        return self

    def stats(self) -> dict[str, Any]:
        import httpx

        data: dict[str, Any] = httpx.get(f"{self.url}/sim/stats", timeout=10).json()
        return data

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def synthetic_pack(
    n_prompts: int, repeats: int, n_variants: int = 2, pack_id: str = "bench", prompt_chars: int = 0
) -> dict[str, Any]:
    """A valid pack: ``n_prompts`` prompts in 5 categories, each ``repeats`` times, and
    ``n_variants`` variants (the last has no system prompt). Cells per model:
    ``n_prompts × repeats × n_variants``. ``prompt_chars`` pads every prompt text."""
    per_cat = max(1, -(-n_prompts // 5))
    categories: list[dict[str, Any]] = []
    made = 0
    for ci, letter in enumerate("ABCDE"):
        prompts = []
        for i in range(per_cat):
            if made == n_prompts:
                break
            made += 1
            text = f"Aufgabe {letter}{i + 1}: fasse den folgenden Absatz in drei Sätzen zusammen."
            if prompt_chars > len(text):
                text += " " + ("Lorem ipsum dolor sit amet. " * (prompt_chars // 28 + 1))
                text = text[:prompt_chars]
            prompts.append(
                {"id": f"{letter}{i + 1}", "title": f"t{made}", "prompt": text, "repeats": repeats}
            )
        if prompts:
            categories.append({"id": letter, "name": f"Kategorie {ci + 1}", "prompts": prompts})
    variants: list[dict[str, Any]] = [
        {"id": f"v{i + 1}", "system_prompt": f"Du bist Assistent Nummer {i + 1}. Sei knapp."}
        for i in range(n_variants - 1)
    ]
    variants.append({"id": "none", "system_prompt": None})
    return {
        "id": pack_id,
        "title": "Bench",
        "version": 1,
        "language": "de",
        "scale": {1: "eins", 2: "zwei", 3: "drei", 4: "vier", 5: "fünf"},
        "dimensions": [{"id": "Q1", "name": "Korrektheit", "weight": 3}],
        "ko_rule": {"dimension": "Q1", "red_flag_prompts": ["A1"]},
        "prompt_variants": variants,
        "sampling": {"temperature": 0.0, "seed": 42},
        "categories": categories,
    }


def fleet_config(
    base_url: str,
    concurrency: int,
    out: Path,
    model_ids: tuple[str, ...] = (MODEL_ID,),
    monitor_interval_s: float = 0.5,
) -> dict[str, Any]:
    """A fleet config: every model on the driver's node (host ``local``), engine openai
    against ``base_url`` (the simulator), Ray without dashboard."""
    return {
        "ray": {"include_dashboard": False},
        "models": [
            {
                "id": model_id,
                "engine": "openai",
                "base_url": base_url.rstrip("/") + "/v1",
                "concurrency": concurrency,
                "timeout_s": 120,
            }
            for model_id in model_ids
        ],
        "scheduling": {"warmup": True, "max_attempts": 3},
        "monitor": {"interval_s": monitor_interval_s},
        "out": str(out),
    }


def write_yaml(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def peer_env(work: Path) -> dict[str, str]:
    """The environment of a peer tool from the bench venv (GuideLLM, Inspect, llama-benchy):
    this process's variables without its venv and Python settings, its own ``HOME`` under
    ``work``, Hugging Face offline (nothing can be downloaded here), no colour."""
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env.update(
        HOME=str(home),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        NO_COLOR="1",
        TERM="dumb",
    )
    return env


def ray_env(tmp: Path) -> dict[str, str]:
    """The environment of a child that starts Ray: own ``HOME`` and short ``RAY_TMPDIR``."""
    home = tmp / "home"
    raytmp = tmp / "r"
    home.mkdir(parents=True, exist_ok=True)
    raytmp.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(HOME=str(home), RAY_TMPDIR=str(raytmp), PYTHONUNBUFFERED="1")
    # no colour or live progress bar in a pipe
    env.setdefault("TERM", "dumb")
    return env


@dataclass
class EvalRun:
    """What one ``touchstone-ray eval`` child did."""

    rc: int
    wall_s: float
    rss_mb: list[tuple[float, float]] = field(default_factory=list)
    """(seconds since launch, driver RSS MB) every sampling interval."""
    stdout_lines: list[tuple[float, str]] = field(default_factory=list)
    """(seconds since launch, line)."""
    stderr: str = ""
    marks: dict[str, float] = field(default_factory=dict)
    """Seconds since launch when a ``watch`` callback first reported a named mark."""
    t0_epoch: float = 0.0
    """Epoch seconds of the launch (to place bundle events on the same axis)."""

    @property
    def bundle(self) -> Path | None:
        for _, line in reversed(self.stdout_lines):
            if line.strip():
                path = Path(line.strip())
                return path if path.is_dir() else None
        return None

    def rss_between(self, lo_epoch: float, hi_epoch: float) -> list[float]:
        """RSS samples (MB) taken between two epoch times."""
        lo, hi = lo_epoch - self.t0_epoch, hi_epoch - self.t0_epoch
        return [r for t, r in self.rss_mb if lo <= t <= hi]

    @property
    def peak_rss_mb(self) -> float | None:
        return max((r for _, r in self.rss_mb), default=None)

    @property
    def final_rss_mb(self) -> float | None:
        return self.rss_mb[-1][1] if self.rss_mb else None


def run_eval_cli(
    args: list[str],
    env: dict[str, str],
    interval_s: float = 0.2,
    watch: Callable[[float], dict[str, bool]] | None = None,
    timeout_s: float = 900.0,
) -> EvalRun:
    """Run ``touchstone-ray eval ARGS``; sample its RSS (the driver process itself, not its
    Ray children) every ``interval_s``; ``watch(elapsed)`` may return ``{mark: reached}`` to
    time events such as "first new record landed"."""
    t0 = time.monotonic()
    t0_epoch = time.time()
    proc = subprocess.Popen(
        [str(CLI), "eval", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    run = EvalRun(rc=-1, wall_s=0.0, t0_epoch=t0_epoch)
    err_chunks: list[str] = []

    def _read_out() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            run.stdout_lines.append((time.monotonic() - t0, line.rstrip("\n")))

    def _read_err() -> None:
        assert proc.stderr is not None
        err_chunks.append(proc.stderr.read())

    readers = [threading.Thread(target=f, daemon=True) for f in (_read_out, _read_err)]
    for r in readers:
        r.start()
    ps = psutil.Process(proc.pid)
    next_tick = time.monotonic()
    while proc.poll() is None:
        now = time.monotonic()
        if now - t0 > timeout_s:
            proc.kill()
            break
        try:
            rss = ps.memory_info().rss
            if rss:  # a zombie (exited, not yet reaped) reads as 0
                run.rss_mb.append((now - t0, rss / 2**20))
        except psutil.Error:
            pass
        if watch is not None:
            for mark, reached in watch(now - t0).items():
                if reached and mark not in run.marks:
                    run.marks[mark] = now - t0
        next_tick += interval_s
        time.sleep(max(0.0, next_tick - time.monotonic()))
    proc.wait()
    run.wall_s = time.monotonic() - t0
    run.rc = proc.returncode
    for r in readers:
        r.join(10)
    run.stderr = "".join(err_chunks)
    return run


def events(bundle: Path) -> list[dict[str, Any]]:
    """The bundle's ``events.jsonl`` records in order."""
    from touchstone_ray.bundle import Layout, read_events

    return read_events(Layout(bundle))


def event_span(evs: list[dict[str, Any]], start: str, end: str) -> float | None:
    """Seconds from the last ``start`` event to the last ``end`` event after it."""
    t_start = t_end = None
    for ev in evs:
        if ev.get("event") == start:
            t_start, t_end = ev["ts"], None
        elif ev.get("event") == end and t_start is not None:
            t_end = ev["ts"]
    return None if t_start is None or t_end is None else t_end - t_start


def count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def to_json(value: Any, indent: int = 0) -> str:
    """Indented JSON where a mapping or list of scalars stays on one line."""
    pad, inner = "  " * indent, "  " * (indent + 1)
    if isinstance(value, dict | list):
        items = value.values() if isinstance(value, dict) else value
        if not value or all(not isinstance(v, dict | list) for v in items):
            return json.dumps(value, ensure_ascii=False)
        if isinstance(value, dict):
            body = [
                f"{inner}{json.dumps(str(k))}: {to_json(v, indent + 1)}" for k, v in value.items()
            ]
            return "{\n" + ",\n".join(body) + "\n" + pad + "}"
        body = [inner + to_json(v, indent + 1) for v in value]
        return "[\n" + ",\n".join(body) + "\n" + pad + "]"
    return json.dumps(value, ensure_ascii=False)


def dump(summary: dict[str, Any]) -> None:
    """The JSON summary on stdout."""
    sys.stdout.write(to_json(summary) + "\n")
    sys.stdout.flush()


def agents(action: str, address: str, env: dict[str, str]) -> None:
    """``touchstone-ray agents <action> --address A`` (not timed); raises when it fails."""
    done = subprocess.run(
        [str(CLI), "agents", action, "--address", address],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"agents {action} exited {done.returncode}: {done.stderr[-2000:]}")
    log(done.stdout.strip())


@contextlib.contextmanager
def standing_cluster() -> Iterator[Any]:
    """A standing cluster for the timed runs to join: ``ray start --head``
    (:class:`~touchstone_ray.fleet.local_head.LocalCluster`) with ``touchstone-ray agents up``,
    both outside the timed part; stopped on exit. Yields the cluster (``address``,
    ``client_env()``)."""
    from touchstone_ray.fleet.local_head import LocalCluster

    log("ray start --head and agents up (not timed)")
    head = LocalCluster()
    try:
        env = head.client_env() | {"TERM": "dumb", "PYTHONUNBUFFERED": "1"}
        deadline = time.monotonic() + 180
        while True:  # the head takes a while to accept drivers
            try:
                agents("up", head.address, env)
                break
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(2.0)
        yield head
    finally:
        head.stop()
