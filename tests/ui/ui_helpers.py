"""Helpers for the UI tests: bundle folders to serve, the UI as a real subprocess on a free
loopback port, and a headless Chromium (Debian's ``chromium``, driven by Playwright without
downloading a browser)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
from report_factories import T0, make_bundle

REPO = Path(__file__).resolve().parents[2]

JUDGED = "lab/2026-01-02_030000_eval_mini"
OTHER = "2026-01-03_030000_eval_mini2"
CRASHED = "old/2026-01-01_030000_eval_mini"
PERF = "2026-01-04_030000_perf_speed"
"""Bundles of the session's runs folder (paths under it): judged ``mini`` in a sub-folder,
unjudged ``mini2``, crashed ``mini``, a perf bundle."""

BAD_PACK = {
    "id": "broken",
    "title": "Broken",
    "scale": {1: "a", 2: "b", 3: "c", 4: "d", 5: "e"},
    "dimensions": [{"id": "Q1", "name": "Korrektheit", "weight": 0}],
    "ko_rule": {"dimension": "Q1"},
    "prompt_variants": [{"id": "baseline"}],
    "categories": [
        {"id": "A", "name": "A", "prompts": [{"id": "A1", "title": "t", "prompt": "p"}]}
    ],
}
"""A pack the loader refuses (weight 0)."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def renamed_pack_bundle(parent: Path, name: str, pack_id: str) -> Path:
    """The report fixture bundle with its pack id changed to ``pack_id`` (pack.yaml and the
    manifest's ``pack`` agree, sha256 included), unjudged."""
    root = make_bundle(parent, name, judged=False)
    data = yaml.safe_load((root / "pack.yaml").read_text(encoding="utf-8"))
    data["id"] = pack_id
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    (root / "pack.yaml").write_text(text, encoding="utf-8")
    manifest = json.loads((root / "bundle.json").read_text(encoding="utf-8"))
    manifest["pack"] = {
        "id": pack_id,
        "version": 1,
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
    }
    manifest["started_at"] = T0 + 86400.0
    (root / "bundle.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def crashed_bundle(parent: Path, name: str) -> Path:
    """A bundle whose manifest says ``running`` but whose files last changed an hour ago."""
    root = make_bundle(parent, name, judged=False)
    manifest = json.loads((root / "bundle.json").read_text(encoding="utf-8"))
    manifest.update(status="running", finished_at=None, started_at=T0 - 86400.0)
    (root / "bundle.json").write_text(json.dumps(manifest), encoding="utf-8")
    old = time.time() - 3600.0
    for path in root.rglob("*"):
        os.utime(path, (old, old))
    return root


def perf_bundle(parent: Path, name: str) -> Path:
    """A finished perf bundle (SPEC §7b manifest: ``kind: perf``, no pack)."""
    root = parent / name
    (root / "points").mkdir(parents=True)
    manifest: dict[str, Any] = {
        "schema_version": 1,
        "kind": "perf",
        "models": [{"model": "gemma3-270m", "id": "gemma3-270m", "host": "gpu-a"}],
        "hosts": {"gpu-a": {}},
        "started_at": T0 + 2 * 86400.0,
        "status": "done",
    }
    (root / "bundle.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def perf_summary(root: Path) -> Path:
    """Give the perf bundle ``root`` a ``summary.json`` (SPEC §7b) of one point and its
    capacity, so its result page shows the perf report's tables."""
    q = {"p50": 0.1, "p95": 0.2, "p99": 0.3}
    point = {
        "model": "gemma3-270m",
        "host": "gpu-a",
        "context": "256",
        "context_target_tokens": 256,
        "concurrency": 1,
        "n": 3,
        "cached": False,
        **{k: q for k in ("ttft_s", "tpot_s", "e2e_s", "send_lateness_s")},
        "ttft_cv_pct": 5.0,
        "decode_tps_median": 48.0,
        "prefill_tps_median": 600.0,
        "total_tps": 47.0,
        "slo_share": 1.0,
        "n_excluded": {},
    }
    capacity = {"model": "gemma3-270m", "host": "gpu-a", "context": 256, "capacity": 1}
    summary = {
        "slo": {"ttft": 0.5},
        "points": [point],
        "capacity": {"gemma3-270m|gpu-a": {**capacity, "line": "1 user at once"}},
    }
    (root / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return root


def packs_folder(parent: Path) -> Path:
    """A packs folder with the shipped ``buero.yaml`` and the invalid ``broken.yaml``."""
    folder = parent / "packs"
    folder.mkdir()
    shutil.copyfile(REPO / "packs" / "buero.yaml", folder / "buero.yaml")
    (folder / "broken.yaml").write_text(yaml.safe_dump(BAD_PACK), encoding="utf-8")
    return folder


@dataclass
class UiServer:
    """A running ``touchstone-ray ui`` subprocess."""

    url: str
    port: int
    proc: subprocess.Popen[str]

    def output(self) -> str:
        """What the process printed so far (stdout and stderr), after it stopped."""
        return self.proc.stdout.read() if self.proc.stdout else ""


@contextlib.contextmanager
def ui_server(
    runs: Path,
    packs: Path,
    *extra: str,
    host: str = "127.0.0.1",
    env: dict[str, str] | None = None,
) -> Iterator[UiServer]:
    """Start ``touchstone-ray ui`` on a free port (with ``env``, default this process's);
    wait until it answers; stop it at exit."""
    port = free_port()
    cmd = [sys.executable, "-m", "touchstone_ray.cli", "ui", "--runs", str(runs)]
    cmd += ["--packs", str(packs), "--port", str(port), "--host", host, *extra]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=dict(os.environ) if env is None else env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30.0
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"ui exited {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}"
                )
            try:
                httpx.get(url + "/static/live.js", timeout=1.0)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield UiServer(url, port, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def first_bundle_rel(server: UiServer, run: subprocess.Popen[str], timeout_s: float = 120) -> str:
    """The overview's first bundle (its ``data-bundle`` path) once a run started it; fails
    with the run's output when none appears within ``timeout_s`` or the run ends first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and run.poll() is None:
        found = re.search(
            r'data-bundle="([^"]+)"', httpx.get(server.url + "/fragment/overview").text
        )
        if found:
            return found[1]
        time.sleep(0.3)
    raise AssertionError(run.stdout.read() if run.stdout else "no bundle appeared")


def shot(page: Any, name: str) -> None:
    """With ``UI_SCREENSHOTS=<folder>`` set, save a PNG of ``page`` there (docs/ui.md)."""
    folder = os.environ.get("UI_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=False)
