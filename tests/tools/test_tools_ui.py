"""A tools bundle in the web UI without a browser: its overview row (grouped by pack, the best
model's pass rate), its result page (the per-model table, each cell's turns and checks behind
a filter), its live view (cells done of planned, the model in flight) and the pages' language;
then the same pages served by the app on loopback."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from pathlib import Path

import httpx
import pytest
from aiohttp.test_utils import TestServer
from tools_bundles import mini_pack, standard_records, write_tools_bundle

from touchstone_ray.report.tools import write_tools_report
from touchstone_ray.ui import UiSettings, make_app
from touchstone_ray.ui._page import bundle_lang
from touchstone_ray.ui.live import live_body, live_state
from touchstone_ray.ui.overview import summaries, table_html
from touchstone_ray.ui.tools_pages import tools_result_html

EVENTS = [
    {"ts": 1000.0, "event": "model_start", "host": "h1", "model": "alpha"},
    {"ts": 1010.0, "event": "model_done", "host": "h1", "model": "alpha"},
    {"ts": 1000.0, "event": "model_start", "host": "h2", "model": "beta"},
]
"""``alpha`` done on h1, ``beta`` in flight on h2."""


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """A done tools bundle with its report, and a running one with alpha's cells and beta's
    first."""
    runs = tmp_path / "runs"
    done = write_tools_bundle(runs / "2025-01-01_000000_tools_mini-tools", standard_records())
    write_tools_report(done)
    records = standard_records()
    write_tools_bundle(
        runs / "2025-01-02_000000_tools_mini-tools",
        records[:5],
        models=[("alpha", "h1"), ("beta", "h2")],
        status="running",
        manifest={"started_at": 2000.0},
        events=EVENTS,
    )
    return runs


def test_overview_groups_tools_bundles_by_pack_with_their_pass_rate(runs: Path) -> None:
    rows = {s.name: s for s in summaries(runs)}
    done, running = (
        rows["2025-01-01_000000_tools_mini-tools"],
        rows["2025-01-02_000000_tools_mini-tools"],
    )
    assert (done.kind, done.pack, done.state, done.best, done.pass_pct) == (
        "tools",
        "mini-tools v3",
        "done",
        "alpha · 3/4",
        75.0,
    )
    # the running one counts its cells so far: alpha 3 of 4, beta 0 of 1
    assert (running.state, running.best, running.pass_pct) == ("running", "alpha · 3/4", 75.0)
    html = table_html(list(rows.values()), {})
    assert html.count('<section class="pack-group" data-pack="mini-tools v3">') == 1
    assert '75.0 %<br><span class="muted">pass rate</span>' in html
    assert html.count('href="/run/2025-01-0') == 2  # a running tools bundle has a result too


def test_result_page_shows_the_tables_and_each_cell(runs: Path) -> None:
    root = runs / "2025-01-01_000000_tools_mini-tools"
    title, body = tools_result_html(root, {}, "/run/x")
    assert title == "Tools report · Mini tools"
    assert 'id="tools-models"' in body
    assert '<th scope="col" title="passed / scored × 100 (%).">pass %</th>' in body
    assert '<p class="muted" id="cell-count">8 / 8</p>' in body
    assert (
        '<details class="callout callout-failure"><summary>weather · alpha #2 ✗</summary>' in body
    )
    assert body.index('id="cell-list"') < body.index("How to read this")
    _, beta = tools_result_html(root, {"model": "beta", "failed": "1"}, "/run/x")
    assert '<p class="muted" id="cell-count">4 / 8</p>' in beta
    _, alpha = tools_result_html(root, {"model": "alpha", "failed": "1"}, "/run/x")
    assert '<p class="muted" id="cell-count">1 / 8</p>' in alpha
    assert "<summary>weather · alpha #2 ✗</summary>" in alpha
    assert "<summary>chat · alpha #1 ✓</summary>" not in alpha
    _, item = tools_result_html(root, {"item": "notes"}, "/run/x")
    assert '<p class="muted" id="cell-count">2 / 8</p>' in item


def test_live_view_counts_cells_and_the_model_in_flight(runs: Path) -> None:
    root = runs / "2025-01-02_000000_tools_mini-tools"
    later = live_state(root, now=time.time() + 1000)  # no write for long: crashed
    assert (later.state, later.hosts[1].current_model, later.hosts[1].eta_s) == (
        "crashed",
        None,
        None,
    )
    view = live_state(root)
    assert view.state == "running"
    h1, h2 = view.hosts
    assert (h1.host, h1.planned, h1.ok, h1.failed, h1.current_model, h1.in_flight) == (
        "h1",
        4,
        4,
        0,
        None,
        0,
    )
    assert (h2.host, h2.planned, h2.ok, h2.failed, h2.current_model, h2.in_flight) == (
        "h2",
        4,
        1,
        0,
        "beta",
        1,
    )
    html = live_body(view)
    assert "5/8" not in html  # per host
    assert "1/4 cells (1 ok, " in html


def test_pages_speak_the_packs_language(tmp_path: Path) -> None:
    pack = mini_pack(language="de")
    root = write_tools_bundle(tmp_path / "de", standard_records(pack), pack=pack)
    assert bundle_lang(root, "en") == "de"
    title, body = tools_result_html(root, {}, "/run/de")
    assert title == "Werkzeug-Bericht · Mini tools"
    assert ">Zellen</h2>" in body


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_app_serves_the_tools_pages(runs: Path, tmp_path: Path) -> None:
    port = free_port()
    packs = tmp_path / "packs"
    packs.mkdir()
    app = make_app(UiSettings(runs=runs, packs=packs, port=port))

    async def fetch() -> dict[str, httpx.Response]:
        server = TestServer(app, host="127.0.0.1", port=port)
        await server.start_server()
        try:
            base = f"http://127.0.0.1:{port}"
            async with httpx.AsyncClient(base_url=base) as client:
                done = "2025-01-01_000000_tools_mini-tools"
                running = "2025-01-02_000000_tools_mini-tools"
                return {
                    "overview": await client.get("/"),
                    "result": await client.get(f"/run/{done}?model=beta&failed=1"),
                    "live": await client.get(f"/live/{running}"),
                }
        finally:
            await server.close()

    pages = asyncio.run(fetch())
    assert {k: r.status_code for k, r in pages.items()} == {
        "overview": 200,
        "result": 200,
        "live": 200,
    }
    assert "mini-tools v3" in pages["overview"].text
    assert '<p class="muted" id="cell-count">4 / 8</p>' in pages["result"].text
    assert 'id="judges-live"' not in pages["result"].text  # no judges on a tools run
    assert '<html lang="en">' in pages["live"].text
    assert "1/4 cells" in pages["live"].text
    assert json.loads((runs / "2025-01-01_000000_tools_mini-tools" / "summary.json").read_text())
