"""The Queue page in headless Chromium with the queue running for real as a Ray job on the
UI's own local head: entries added from the form (the config's models and the pack's variants
as checkboxes), one moved up, one removed, the states changing live without a reload, the
running entry stopped from the page, and an eval started from the Jobs page on the busy host
waiting in the queue instead of a 409; the driver follows the file, so every entry added while
it runs is run, in the file's order."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import yaml
from test_ui_queue_edit import TWO_VARIANTS
from ui_helpers import UiServer, shot, ui_server

from touchstone_ray.queue.state import stop_file


def _fleet(model: str, **sim: Any) -> dict[str, Any]:
    return {
        "ray": {"include_dashboard": False},
        "models": [{"id": model, "engine": "simulated", "concurrency": 1, "sim": sim}],
        "scheduling": {"warmup": False},
        "monitor": {"interval_s": 0.5, "gpu": "off"},
    }


SLOW = _fleet("sim-slow", ttft_ms=300, tps=10, answer_tokens=20)
"""About 2.2 s a cell: 8 cells keep the first entry running while the page edits the rest."""
FAST = _fleet("sim-fast", ttft_ms=5, tps=2000, answer_tokens=5)


def _order(page: Any) -> list[str]:
    return [
        str(n)
        for n in page.eval_on_selector_all("tr[data-entry]", "r => r.map(x => x.dataset.entry)")
    ]


def _state(page: Any, entry: str) -> str:
    return str(page.locator(f'tr[data-entry="{entry}"] .state .badge').inner_text())


def _wait_state(page: Any, entry: str, state: str, timeout_s: float) -> None:
    page.wait_for_function(
        '([e, s]) => { const b = document.querySelector(`tr[data-entry="${e}"] .state .badge`);'
        " return b !== null && b.textContent === s; }",
        arg=[entry, state],
        timeout=timeout_s * 1000,
    )


def _add(page: Any, server: UiServer, name: str, config: str, **opts: str) -> list[Any]:
    """Fill and send the add form; the model checkboxes it offered (``[value, checked]``)."""
    page.select_option('#queue-add select[name="pack"]', label="live.yaml")
    page.fill('#queue-add input[name="config"]', config)
    page.wait_for_selector('#queue-variants input[value="knapp"]')
    if opts.get("variant"):
        page.uncheck('#queue-variants input[value="knapp"]')
    page.fill('#queue-add input[name="limit"]', opts.get("limit", ""))
    page.fill('#queue-add input[name="name"]', name)
    models = page.eval_on_selector_all(
        "#queue-models input", "r => r.map(x => [x.value, x.checked])"
    )
    page.click('#queue-add button[type="submit"]')
    page.wait_for_selector(f'tr[data-entry="{name}"]')
    assert page.url == server.url + "/queue"
    return list(models)


def test_the_queue_page_adds_moves_removes_stops_and_shows_states_live(
    tmp_path: Path, page: Any
) -> None:
    runs, packs = tmp_path / "runs", tmp_path / "packs"
    runs.mkdir()
    packs.mkdir()
    (packs / "live.yaml").write_text(yaml.safe_dump(TWO_VARIANTS), encoding="utf-8")
    (packs / "fleet-slow.yaml").write_text(yaml.safe_dump(SLOW), encoding="utf-8")
    (packs / "fleet-fast.yaml").write_text(yaml.safe_dump(FAST), encoding="utf-8")
    with ui_server(runs, packs) as server:
        page.set_default_timeout(60_000)
        page.goto(server.url + "/queue")
        assert page.locator("#queue-empty").inner_text() == "The queue is empty."
        assert _add(page, server, "slow", "fleet-slow.yaml") == [["sim-slow", True]]
        for name in ("fast-a", "fast-b", "fast-c"):
            _add(page, server, name, "fleet-fast.yaml", limit="1", variant="baseline")
        assert _order(page) == ["slow", "fast-a", "fast-b", "fast-c"]
        page.click('tr[data-entry="fast-c"] button.up')
        page.wait_for_function(
            "() => [...document.querySelectorAll('tr[data-entry]')].map(r => r.dataset.entry)"
            ".join() === 'slow,fast-a,fast-c,fast-b'"
        )
        page.click('tr[data-entry="fast-a"] button.remove')
        page.wait_for_function("() => !document.querySelector('tr[data-entry=\"fast-a\"]')")
        assert _order(page) == ["slow", "fast-c", "fast-b"]
        fast_c = yaml.safe_load((runs / "queue.yaml").read_text())["entries"][1]
        assert (fast_c["limit"], fast_c["variants"]) == (1, ["baseline"])
        assert "models" not in fast_c  # every model checked: all of them
        # the ticker submits the queue job; the page shows the entry running, live
        _wait_state(page, "slow", "running", timeout_s=240)
        assert _state(page, "fast-c") == "pending"
        shot(page, "queue")
        queued = httpx.post(
            server.url + "/jobs/start",
            data={"kind": "eval", "pack": "live.yaml", "config": "fleet-fast.yaml"},
            headers={"Origin": server.url},
            timeout=60,
            follow_redirects=False,
        )
        assert (queued.status_code, queued.headers["Location"]) == (
            303,
            "/queue?queued=eval-fleet-fast-1",
        )
        page.wait_for_selector('tr[data-entry="eval-fleet-fast-1"]')
        # stop the running entry once its bundle has records
        deadline = time.monotonic() + 120
        while not list((runs / "queue" / "slow").glob("*/responses/*.jsonl")):
            assert time.monotonic() < deadline, "slow wrote no record"
            time.sleep(0.3)
        page.click('tr[data-entry="slow"] button.stop')
        _wait_state(page, "slow", "skipped", timeout_s=90)
        assert stop_file(runs / "queue", "slow").is_file()
        assert page.locator('tr[data-entry="slow"] .reason').inner_text() == "stopped on request"
        for name in ("fast-c", "fast-b", "eval-fleet-fast-1"):
            _wait_state(page, name, "done", timeout_s=180)
        log = [
            json.loads(x)
            for x in (runs / "queue" / "queue-state.jsonl").read_text().split("\n")
            if x
        ]
        started = [e["entry"] for e in log if e["event"] == "entry_started"]
        assert started == ["slow", "fast-c", "fast-b", "eval-fleet-fast-1"]
        ended = {e["entry"]: e["state"] for e in log if e["event"] == "entry_ended"}
        assert ended == {"slow": "skipped", "fast-c": "done", "fast-b": "done",
                         "eval-fleet-fast-1": "done"}  # fmt: skip
        link = page.locator('tr[data-entry="fast-c"] a')
        assert re.fullmatch(
            r"/run/queue/fast-c/\d{4}-\d\d-\d\d_\d{6}_eval_livepack",
            str(link.get_attribute("href")),
        )
        shards = list((runs / "queue" / "fast-c").glob("*/responses/*.jsonl"))
        assert [len(s.read_text().splitlines()) for s in shards] == [1]  # limit 1, baseline only
        jobs_html = httpx.get(server.url + "/jobs", timeout=60).text
        assert len(re.findall(r"<td>queue</td>", jobs_html)) == 1
        page.goto("about:blank")  # the page's polling stops before the UI does
