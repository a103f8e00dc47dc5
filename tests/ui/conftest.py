"""Fixtures of the UI tests: one runs folder with four bundles, a packs folder, the UI
serving them, and one headless Chromium page per test."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ui_helpers import (
    CRASHED,
    OTHER,
    PERF,
    UiServer,
    crashed_bundle,
    make_bundle,
    packs_folder,
    perf_bundle,
    perf_summary,
    renamed_pack_bundle,
    ui_server,
)

JUDGE_CHECKS = {
    "j1": {"qualified": True, "band_accuracy": 0.9, "red_flag_recall": 1.0, "score_gap": 0.3},
    "j2": {"qualified": True, "band_accuracy": 0.8, "red_flag_recall": 1.0, "score_gap": 0.2},
}


def add_judge_checks(root: Path) -> None:
    """Give the bundle's scorecard SPEC §7 ``judge_checks`` for both judges."""
    path = root / "scorecard.json"
    card = json.loads(path.read_text(encoding="utf-8"))
    card["judge_checks"] = {
        j: {**c, "n_calibration": 6, "warnings": []} for j, c in JUDGE_CHECKS.items()
    }
    path.write_text(json.dumps(card), encoding="utf-8")


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiServer]:
    """The UI over a runs folder holding a judged ``mini`` bundle (in a sub-folder), an
    unjudged ``mini2`` bundle, a crashed ``mini`` bundle and a perf bundle with its summary."""
    base = tmp_path_factory.mktemp("ui")
    runs = base / "runs"
    add_judge_checks(make_bundle(runs / "lab"))
    renamed_pack_bundle(runs, OTHER, "mini2")
    crashed_bundle(runs / "old", CRASHED.split("/")[1])
    perf_summary(perf_bundle(runs, PERF))
    with ui_server(runs, packs_folder(base)) as server:
        yield server


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium from the system package (``apt-get install chromium``)."""
    from playwright.sync_api import sync_playwright

    exe = shutil.which("chromium")
    assert exe, "chromium is not installed: apt-get install -y chromium (scripts/dev-setup.sh)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page that fails the test on any console error (a CSP violation included)."""
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield pg
    context.close()
    assert errors == []
