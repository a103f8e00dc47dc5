"""Bundles as files in headless Chromium (issue 31, item 3): a bundle downloaded as a zip and
imported again gives the same bytes, a zip that is no bundle or that holds a path leaving its
folder is refused with one line, a bundle moved to the trash comes back with undo, and single
files download as they are on disk; no page logs a console error."""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import httpx
import pytest
from ui_helpers import UiServer, make_bundle, packs_folder, shot, ui_server

NAME = "2026-01-02_030000_eval_mini"
ODD = 'Läufe #1 & "alt"'
"""A folder under ``--runs`` whose name needs quoting in a URL and escaping in HTML."""


@pytest.fixture(scope="module")
def files_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[UiServer, Path]]:
    """The UI over its own runs folder (these tests move bundles): a judged ``mini`` bundle
    under ``lab/`` and an unjudged one under :data:`ODD`."""
    base = tmp_path_factory.mktemp("ui-files")
    runs = base / "runs"
    make_bundle(runs / "lab")
    make_bundle(runs / ODD, judged=False)
    with ui_server(runs, packs_folder(base)) as server:
        yield server, runs


def _download(page: Any, selector: str) -> tuple[str, bytes]:
    with page.expect_download() as info:
        page.click(selector)
    download = info.value
    return download.suggested_filename, Path(download.path()).read_bytes()


def _import(page: Any, server: UiServer, upload: Path) -> None:
    page.goto(server.url + "/")
    page.set_input_files('#import input[name="file"]', str(upload))
    page.click("#import-submit")


def test_zip_downloaded_and_imported_again_is_byte_identical(
    files_site: tuple[UiServer, Path], page: Any, tmp_path: Path
) -> None:
    server, runs = files_site
    page.goto(f"{server.url}/run/lab/{NAME}")
    name, first = _download(page, "#download-zip")
    assert name == f"{NAME}.zip"
    upload = tmp_path / name
    upload.write_bytes(first)
    members = zipfile.ZipFile(upload).namelist()
    on_disk = sorted(p for p in (runs / "lab" / NAME).rglob("*") if p.is_file())
    assert members == [f"{NAME}/{p.relative_to(runs / 'lab' / NAME).as_posix()}" for p in on_disk]
    _import(page, server, upload)
    page.wait_for_url(f"**/run/imported/{NAME}")
    assert page.locator("h1").first.inner_text() == "Touchstone-Bericht · Mini-Pack"
    shot(page, "bundle-imported")
    for path in on_disk:
        copy = runs / "imported" / NAME / path.relative_to(runs / "lab" / NAME)
        assert copy.read_bytes() == path.read_bytes(), path.name
    _, again = _download(page, "#download-zip")
    assert hashlib.sha256(again).hexdigest() == hashlib.sha256(first).hexdigest()
    assert again == first
    # the overview lists the copy beside the original
    page.goto(server.url + "/")
    bundles = page.locator("[data-bundle]").evaluate_all("rows => rows.map(r => r.dataset.bundle)")
    assert f"imported/{NAME}" in bundles and f"lab/{NAME}" in bundles


def test_single_files_download_as_stored(files_site: tuple[UiServer, Path], page: Any) -> None:
    server, runs = files_site
    root = runs / "lab" / NAME
    (root / "export").mkdir(exist_ok=True)
    (root / "export" / "responses.csv").write_text("key,ok\nm|v|A1|1,true\n", encoding="utf-8")
    (root / "report.md").write_text("# Bericht über «mini»\n", encoding="utf-8")
    (root / "report.html").write_bytes(b"<!DOCTYPE html><p>Bericht \xc3\xbcber mini</p>\n")
    page.goto(f"{server.url}/run/lab/{NAME}")
    offered = page.locator("#bundle-files a.download").all_inner_texts()
    assert offered == ["report.html", "report.md", "scorecard.json", "export/responses.csv"]
    for shown in offered:
        name, data = _download(page, f'#bundle-files a.download:text-is("{shown}")')
        assert (name, data) == (Path(shown).name, (root / shown).read_bytes())
    for refused in ("bundle.json", "../../packs/buero.yaml", "export/../bundle.json"):
        r = httpx.get(f"{server.url}/file/lab/{NAME}", params={"name": refused})
        assert (r.status_code, r.text) == (404, "no such file of the bundle to download")


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_import_refuses_a_non_bundle_and_a_path_leaving_the_folder(
    files_site: tuple[UiServer, Path], page: Any, tmp_path: Path
) -> None:
    server, runs = files_site
    before = sorted(p.relative_to(runs).as_posix() for p in runs.rglob("*"))
    cases = {
        "photos.zip": (
            {"holiday/beach.jpg": b"\xff\xd8\xff", "holiday/notes.txt": b"sun"},
            "import: holiday/bundle.json is missing: not a bundle",
        ),
        "slip.zip": (
            {
                f"{NAME}/bundle.json": json.dumps({"schema_version": 1}).encode(),
                f"{NAME}/../../../../escaped.txt": b"owned",
            },
            f"import: '{NAME}/../../../../escaped.txt' leaves the bundle's folder",
        ),
    }
    for file_name, (members, line) in cases.items():
        upload = _zip(tmp_path / file_name, members)
        with page.expect_response("**/bundles/import") as answer:
            _import(page, server, upload)
        assert answer.value.status == 200
        assert page.locator("#import-error").inner_text() == line
        assert page.locator("#import-error").count() == 1
    shot(page, "bundle-import-refused")
    assert not (runs.parent / "escaped.txt").exists()
    after = sorted(p.relative_to(runs).as_posix() for p in runs.rglob("*"))
    assert [p for p in after if p not in before] in ([], ["imported"])


def test_trash_and_undo(files_site: tuple[UiServer, Path], page: Any) -> None:
    server, runs = files_site
    rel = f"{ODD}/{NAME}"
    root = runs / ODD / NAME
    stored = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    page.goto(f"{server.url}/run/{quote(rel)}")
    page.click("#trash-bundle")
    page.wait_for_url("**/trash?moved=*")
    assert page.locator("#moved span").inner_text() == f"moved {rel} to the trash"
    assert page.locator("#trash tbody tr td").first.inner_text() == rel
    assert not root.exists()
    shot(page, "bundle-trash")
    page.goto(server.url + "/")
    rows = page.locator("[data-bundle]").evaluate_all("rows => rows.map(r => r.dataset.bundle)")
    assert rel not in rows
    page.go_back()
    page.click("#undo")
    page.wait_for_url(lambda url: unquote(urlsplit(url).path) == f"/run/{rel}")
    assert page.locator("#download-zip").count() == 1
    assert {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()} == stored
    page.goto(server.url + "/trash")
    assert page.locator("#trash-empty").inner_text() == "The trash is empty."
