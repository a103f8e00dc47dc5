"""Which Ray dashboard the live page links: the one the bundle recorded
(``bundle.json`` ``ray.dashboard_url``), only as an http(s) URL, none when it is null,
missing, another scheme or the manifest is unreadable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from touchstone_ray.ui.live import recorded_dashboard


def bundle(tmp_path: Path, ray: Any) -> Path:
    root = tmp_path / "b"
    root.mkdir()
    manifest: dict[str, Any] = {"kind": "perf", "status": "done"}
    if ray is not None:
        manifest["ray"] = ray
    (root / "bundle.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


@pytest.mark.parametrize(
    ("ray", "expected"),
    [
        ({"dashboard_url": "http://127.0.0.1:8265"}, "http://127.0.0.1:8265"),
        ({"dashboard_url": "https://head.example:8443/"}, "https://head.example:8443/"),
        ({"dashboard_url": None}, None),
        ({"version": "2.60.0", "address": "127.0.0.1:6379"}, None),  # recorded before the field
        (None, None),
        ({"dashboard_url": "javascript:alert(1)"}, None),
        ({"dashboard_url": "127.0.0.1:8265"}, None),  # no scheme: not a link
        ({"dashboard_url": 8265}, None),
        ("not a mapping", None),
    ],
)
def test_recorded_dashboard(tmp_path: Path, ray: Any, expected: str | None) -> None:
    assert recorded_dashboard(bundle(tmp_path, ray)) == expected


def test_unreadable_manifest_links_nothing(tmp_path: Path) -> None:
    root = tmp_path / "b"
    root.mkdir()
    (root / "bundle.json").write_text('{"ray": {"dashboard_url": "http://x:1"', encoding="utf-8")
    assert recorded_dashboard(root) is None
    assert recorded_dashboard(tmp_path / "missing") is None
