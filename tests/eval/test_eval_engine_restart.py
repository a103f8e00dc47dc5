"""An engine restarted mid-run (its port closed for a while) is waited for: the cells sent
during the outage wait for it without spending their attempts, one line says so, and the run
ends with every cell ok. Real Ray, a real simulator server stopped and started on its port."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from eval_helpers import count_lines, run, shard_lines, tiny_pack, write_yaml
from ray_env import RayCluster

from touchstone_ray.sim import SimConfig, SimServer

pytestmark = pytest.mark.slow

SIM = SimConfig(models=["m"], ttft_ms=150, tps=2000, answer_tokens=8)
DOWN_S = 1.5
"""How long the engine's port stays closed (s)."""


def test_cells_wait_for_a_restarting_engine(
    rc: RayCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = write_yaml(tmp_path / "pack.yaml", tiny_pack(6))  # 12 cells
    sim = SimServer(SIM)
    url = sim.start()
    again = SimServer(SIM, port=urlsplit(url).port or 0)
    config = write_yaml(
        tmp_path / "fleet.yaml",
        {
            "ray": {"include_dashboard": False},
            "models": [{"id": "m", "engine": "openai", "base_url": f"{url}/v1"}],
            "scheduling": {"warmup": False, "max_attempts": 1, "engine_down_timeout_s": 60},
            "monitor": {"interval_s": 0.2, "gpu": "off"},
        },
    )
    runs = tmp_path / "runs"

    def restart_after_three_cells() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            shards = list(runs.glob("*/responses/*.jsonl"))
            if shards and count_lines(shards[0]) >= 3:
                break
            time.sleep(0.02)
        sim.stop()
        time.sleep(DOWN_S)
        again.start()

    restarter = threading.Thread(target=restart_after_three_cells, daemon=True)
    restarter.start()
    try:
        outcome, printed = run(pack, config, out=runs)
    finally:
        restarter.join(70)
        sim.stop()
        again.stop()
    assert outcome.bundle is not None and outcome.exit_code == 0, printed
    records = shard_lines(outcome.bundle)
    assert len(records) == 12 and all(r["ok"] and r["attempt"] == 1 for r in records)
    waited = [r["engine_down_s"] for r in records if r["engine_down_s"] is not None]
    # concurrency 1: one cell waited, the port's closed time up to one probe interval (2 s)
    assert len(waited) == 1 and DOWN_S - 0.3 < waited[0] < DOWN_S + 2.5
    stderr = capsys.readouterr().err  # the progress display's console
    lines = [line for line in stderr.splitlines() if "refused connections" in line]
    assert lines == [
        f"local m: the endpoint refused connections (engine restarting?); a cell waited "
        f"{waited[0]:.1f} s, attempts not spent; it is back"
    ]
    events = [
        json.loads(line)
        for line in (outcome.bundle / "events.jsonl").read_text().splitlines()
        if '"engine_down"' in line
    ]
    assert [(e["host"], e["model"], e["waited_s"], e["back"]) for e in events] == [
        ("local", "m", waited[0], True)
    ]
