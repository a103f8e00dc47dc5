"""Compare and judges pages in the headless Chromium, and the compare downloads over HTTP."""

from __future__ import annotations

import csv
import io
from typing import Any

import httpx
from ui_helpers import JUDGED, OTHER, UiServer, shot


def test_compare_puts_what_differs_in_the_head_and_lists_what_is_shared(
    site: UiServer, page: Any
) -> None:
    page.goto(site.url + "/compare")
    page.check(f'input[value="{JUDGED}|m-fast|none"]')
    page.check(f'input[value="{OTHER}|m-slow|none"]')
    page.click('#compare-pick button[type="submit"]')
    page.locator("table#compare").wait_for()
    heads = page.locator("table#compare th.differs").all_inner_texts()
    assert heads == ["bundle", "pack", "host / GPUs", "judges", "model"]
    # rows in the chooser's order: bundles sorted by path
    cells = page.locator("table#compare tbody tr").nth(1).locator("td").all_inner_texts()
    assert cells[:5] == [
        "2026-01-02_030000_eval_mini",
        "mini v1",
        "gpu-a: NVIDIA H200 (140 GB)",
        "j1, j2",
        "m-fast",
    ]
    first = page.locator("table#compare tbody tr").nth(0).locator("td").all_inner_texts()
    # the page speaks --lang (en), also where the rows' German packs would say "keine GPU"
    assert first[:5] == [OTHER, "mini2 v1", "local: no GPU", "(not judged)", "m-slow"]
    assert page.locator("#shared li").all_inner_texts() == [
        "engine: simulated",
        "touchstone: 0.1.0",
        "variant: none",
    ]
    shot(page, "compare")
    query = page.locator("#csv").get_attribute("href")
    assert query is not None
    table = list(csv.DictReader(io.StringIO(httpx.get(site.url + query).text)))
    assert [(r["model"], r["quality_pct"], r["ko_passed"]) for r in table] == [
        ("m-slow", "", ""),
        ("m-fast", "85.0", "true"),
    ]
    unjudged = page.locator("#md-unjudged").get_attribute("href")
    assert unjudged is not None
    md = httpx.get(site.url + unjudged).text
    assert md.startswith("# touchstone compare\n")
    assert "85" not in md.split("| m-fast |")[1].splitlines()[0]


def test_judges_page_shows_qualification_agreement_spread_and_best(
    site: UiServer, page: Any
) -> None:
    page.goto(site.url + "/judges")
    section = page.locator('section.judges[data-pack="mini v1"]')
    j1 = section.locator('tr[data-judge="j1"] td').all_inner_texts()
    assert j1 == [
        "j1",
        JUDGED,
        "qualified",
        "0.90",
        "1.00",
        "0.30",
        "45.0–85.0 %",
        "α Q1 0.61; α Q2 —; κ red flags 0.50; τ j1 vs j2 0.67",
    ]
    assert section.locator("ul li").all_inner_texts() == [
        "band accuracy: j1 (0.90)",
        "red-flag recall: j1 (1.00)",
        "score gap: j2 (0.20)",
    ]
    shot(page, "judges")
