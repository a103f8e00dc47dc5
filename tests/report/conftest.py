"""Fixtures for the report tests: the hand-made bundle of ``report_factories`` (pytest puts
this folder on ``sys.path``), written once per module or fresh per test when a test writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_factories import make_bundle

from touchstone_ray.report import write_report


@pytest.fixture(scope="module")
def judged_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A judged bundle with report.md and report.html written."""
    root = make_bundle(tmp_path_factory.mktemp("judged"))
    write_report(root)
    return root


@pytest.fixture(scope="module")
def unjudged_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same bundle with the rating task written (rating-task.md and rating-task.html)."""
    root = make_bundle(tmp_path_factory.mktemp("unjudged"))
    write_report(root, unjudged=True)
    return root


@pytest.fixture
def fresh_bundle(tmp_path: Path) -> Path:
    """A judged bundle nobody wrote a report into yet."""
    return make_bundle(tmp_path)
