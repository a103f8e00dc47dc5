"""The engine's own footprint against the real llama.cpp server, through a real eval on Ray.

One eval runs three models on the local host, one after another: ``small`` (llama-server with
``--ctx-size 2048``), ``big`` (``--ctx-size 16384``) and ``proxied`` (the small server again,
behind a loopback TCP proxy in this process, found through ``engine_process``). While the
small model's cells run, two CPU burners spin beside the server: from the end of its first cell
until one second after its third (at most ``BURN_CAP_S``), so the third cell runs wholly inside.

Timing depends on a 2-core machine shared with other work, so the contention test checks the
classification from what was recorded (the burner's start and end, the samples), never
absolute speeds: every cell inside the burner's time is contended, every cell's flag agrees
with the samples of its window, and the decode median leaves the contended cells out.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from llama_server import LlamaServer, free_port, llama_server
from ray_env import local_ray

from touchstone_ray.eval.run import EvalOptions, busy_line, run_eval
from touchstone_ray.records import EvalResponse, HostSample
from touchstone_ray.scoring import row_stats
from touchstone_ray.storage import read_jsonl
from touchstone_ray.telemetry.finalize import CONTENDED_SHARE

MB = 2**20
N_PROMPTS = 3
MAX_TOKENS = 16
BURN_CAP_S = 120.0
"""Hard bound on the burner (it normally stops after two of the small model's cells)."""


def _pack() -> dict[str, Any]:
    prompts = [
        {"id": f"A{i}", "title": "t", "prompt": f"Nenne {i} Farben.", "max_tokens": MAX_TOKENS}
        for i in range(1, N_PROMPTS)
    ]
    return {
        "id": "footprint",
        "title": "Footprint",
        "scale": {1: "eins", 2: "zwei", 3: "drei", 4: "vier", 5: "fünf"},
        "dimensions": [
            {"id": "Q1", "name": "Korrektheit", "weight": 3},
            {"id": "Q6", "name": "Sicherheit", "weight": 3},
        ],
        "ko_rule": {"dimension": "Q6", "red_flag_prompts": ["E1"]},
        "prompt_variants": [{"id": "baseline", "system_prompt": "Antworte kurz."}],
        "categories": [
            {"id": "A", "name": "Alpha", "prompts": prompts},
            {
                "id": "E",
                "name": "Querschnitt",
                "prompts": [
                    {
                        "id": "E1",
                        "title": "t",
                        "prompt": "Notfall!",
                        "max_tokens": MAX_TOKENS,
                        "safety_critical": True,
                    }
                ],
            },
        ],
    }


class TcpProxy:
    """A loopback TCP proxy (asyncio, in a thread) forwarding every connection to ``port``."""

    def __init__(self, port: int) -> None:
        self.upstream = port
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        assert ready.wait(10)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(OSError):
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", self.port)
        )
        ready.set()
        self.loop.run_forever()
        server.close()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@dataclass
class Burner:
    """Two spinning processes from when the shard has ``start_at`` lines until 1 s after it
    has ``stop_at`` (bounded by ``BURN_CAP_S``); start and end in epoch s."""

    shard_glob: tuple[Path, str]
    start_at: int = 1
    stop_at: int = 3
    started: float | None = None
    ended: float | None = None
    pids: list[int] = field(default_factory=list)

    def watch(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, daemon=True)
        thread.start()
        return thread

    def _lines(self) -> int:
        folder, pattern = self.shard_glob
        return sum(p.read_bytes().count(b"\n") for p in folder.glob(pattern))

    def _wait_for(self, lines: int, deadline: float) -> bool:
        while self._lines() < lines:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def _run(self) -> None:
        if not self._wait_for(self.start_at, time.monotonic() + 300):
            return
        code = (
            "import time\nprint('go', flush=True)\n"
            f"end = time.time() + {BURN_CAP_S}\nwhile time.time() < end: pass"
        )
        procs = [
            subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE) for _ in range(2)
        ]
        try:
            for p in procs:
                assert p.stdout is not None and p.stdout.readline() == b"go\n"
            self.started = time.time()
            self.pids = [p.pid for p in procs]
            if self._wait_for(self.stop_at, time.monotonic() + BURN_CAP_S - 2):
                time.sleep(1.0)
        finally:
            self.ended = time.time()
            for p in procs:
                p.kill()
                p.wait()


@dataclass
class Run:
    bundle: Path
    small: LlamaServer
    big: LlamaServer
    rss_mb: dict[str, float]
    """Label → the serving tree's RSS read with psutil right after the eval (MB)."""
    burner: Burner
    records: dict[str, list[EvalResponse]]
    samples: list[HostSample]
    manifest: dict[str, Any]
    printed: str
    """What the eval printed."""


def _tree_rss(pid: int) -> float:
    root = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)]) / MB


def _listener(server: LlamaServer) -> int:
    """The llama-server child of the wrapper (the process holding the port)."""
    (child,) = psutil.Process(server.pid).children()
    return child.pid


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    logs = tmp_path_factory.mktemp("llama")
    with (
        llama_server(logs, ctx_size=2048, parallel=1) as small,
        llama_server(logs, ctx_size=16384, parallel=1) as big,
    ):
        proxy = TcpProxy(small.port)
        try:
            with local_ray():
                yield _run_eval(tmp_path_factory.mktemp("eval"), small, big, proxy)
        finally:
            proxy.close()


def _run_eval(work: Path, small: LlamaServer, big: LlamaServer, proxy: TcpProxy) -> Run:
    pack = work / "pack.yaml"
    pack.write_text(yaml.safe_dump(_pack(), allow_unicode=True))
    config = {
        "ray": {"include_dashboard": False},
        "models": [
            {"id": "small", "engine": "openai", "base_url": small.base_url},
            {"id": "big", "engine": "openai", "base_url": big.base_url},
            {
                "id": "proxied",
                "engine": "openai",
                "base_url": f"http://127.0.0.1:{proxy.port}/v1",
                "engine_process": f"--port {small.port} ",
            },
        ],
        "scheduling": {"warmup": True},
        "monitor": {"interval_s": 0.5, "gpu": "off"},
    }
    cfg = work / "fleet.yaml"
    cfg.write_text(yaml.safe_dump(config))
    out = work / "runs"
    burner = Burner((out, "*/responses/small.jsonl"))
    watcher = burner.watch()
    printed = io.StringIO()
    outcome = run_eval(EvalOptions(pack=pack, config=cfg, out=out), printed)
    watcher.join(timeout=BURN_CAP_S + 10)
    rss = {
        "small": _tree_rss(_listener(small)),
        "big": _tree_rss(_listener(big)),
        "proxied": _tree_rss(small.pid),  # the wrapper and its llama-server child
    }
    assert outcome.bundle is not None and outcome.n_failed == 0, outcome
    records = {
        label: [
            EvalResponse.model_validate(r)
            for r in read_jsonl(outcome.bundle / "responses" / f"{label}.jsonl").records
        ]
        for label in ("small", "big", "proxied")
    }
    samples = [
        HostSample.model_validate(s)
        for p in (outcome.bundle / "hosts").glob("*.jsonl")
        for s in read_jsonl(p).records
    ]
    manifest = json.loads((outcome.bundle / "bundle.json").read_text())
    return Run(
        outcome.bundle, small, big, rss, burner, records, samples, manifest, printed.getvalue()
    )


def test_engine_rss_matches_psutil_and_grows_with_context(run: Run) -> None:
    engines = run.manifest["hosts"]["local"]["engines"]
    assert engines[run.small.base_url] == {
        "pid": _listener(run.small),
        "found_by": "port",
        "reason": None,
    }
    assert engines[run.big.base_url]["pid"] == _listener(run.big)
    base = {}  # the engine's RSS in each model's baseline tick
    for label, url in (("small", run.small.base_url), ("big", run.big.base_url)):
        (tick,) = [s for s in run.samples if s.baseline and s.model == label]
        (e,) = [e for e in tick.engines or [] if e.endpoint == url]
        assert e.rss_mb is not None
        base[label] = e.rss_mb
    for label in ("small", "big"):
        recs = run.records[label]
        assert len(recs) == N_PROMPTS
        for r in recs:
            assert r.engine_rss_mb == pytest.approx(run.rss_mb[label], rel=0.05), label
            assert r.engine_cpu_pct is not None and r.engine_cpu_pct > 0
            assert r.engine_gpu_mem_mb is None  # gpu: off, never 0
            assert r.engine_rss_mb is not None
            assert r.engine_rss_delta_mb == pytest.approx(r.engine_rss_mb - base[label])
    small_peak = max(r.engine_rss_mb or 0.0 for r in run.records["small"])
    big_peak = min(r.engine_rss_mb or 0.0 for r in run.records["big"])
    assert big_peak > small_peak + 0.5 * (run.rss_mb["big"] - run.rss_mb["small"]) > small_peak


def test_server_behind_a_proxy_is_found_by_engine_process(run: Run) -> None:
    proxy_url = next(m["base_url"] for m in run.manifest["models"] if m["model"] == "proxied")
    st = run.manifest["hosts"]["local"]["engines"][proxy_url]
    assert st == {"pid": run.small.pid, "found_by": "engine_process", "reason": None}
    for r in run.records["proxied"]:
        assert r.engine_rss_mb == pytest.approx(run.rss_mb["proxied"], rel=0.05)


def test_cpu_burner_marks_exactly_its_cells_contended(run: Run) -> None:
    b = run.burner
    assert b.started is not None and b.ended is not None, "the burner never started"
    threshold = CONTENDED_SHARE * (os.cpu_count() or 1) * 100.0
    by_ts = sorted(run.samples, key=lambda s: s.ts)
    inside, report = [], []
    for r in run.records["small"]:
        assert r.t_start is not None and r.t_end is not None
        win = [s for s in by_ts if r.t_start < s.ts <= r.t_end + 0.5]
        foreign = [s.foreign_cpu_pct for s in win if s.foreign_cpu_pct is not None]
        assert foreign, "every cell has CPU samples"
        # the record's flag agrees with the samples it was derived from
        assert r.foreign_cpu_pct == pytest.approx(statistics.fmean(foreign))
        assert r.host_contended == (statistics.fmean(foreign) > threshold)
        if r.t_start >= b.started + 0.5 and r.t_end + 0.5 <= b.ended:
            inside.append(r)
        report.append((round(r.t_start - b.started, 2), r.host_contended, r.foreign_cpu_pct))
    assert inside, f"no cell ran fully inside the burner's time: {report}"
    assert all(r.host_contended for r in inside), report
    timed = [
        r.decode_tps
        for r in run.records["small"]
        if r.ok and not r.is_cold_start and not r.host_contended and r.decode_tps is not None
    ]
    stats = row_stats(run.records["small"])
    assert stats.n_contended == sum(1 for r in run.records["small"] if r.host_contended) >= 1
    every = [r for rs in run.records.values() for r in rs]
    contended = sum(1 for r in every if r.host_contended)
    throttled = sum(1 for r in every if r.throttled)
    flagged = Counter(finalized=len(every), contended=contended, throttled=throttled)
    assert busy_line(flagged) in run.printed.splitlines()
    assert stats.decode_tps_median == (statistics.median(timed) if timed else None)
