"""Bundles as files without a browser (:mod:`touchstone_ray.ui.files`): the zip and its
import byte for byte, every refused import with its one line and nothing left behind, the
downloadable names, the trash and its restore."""

from __future__ import annotations

import io
import json
import os
import re
import stat
import time
import zipfile
from pathlib import Path

import pytest

from touchstone_ray.bundle import find_bundles
from touchstone_ray.errors import BundleError, UsageError
from touchstone_ray.ui.bundle_files import files_bar
from touchstone_ray.ui.files import (
    IMPORT_MAX_BYTES,
    download_path,
    downloads,
    import_bundle,
    restore,
    trash,
    trashed,
    zip_bundle,
)

NAME = "2026-01-02_030000_eval_mini"
MANIFEST = {"schema_version": 1, "status": "done", "started_at": 1767322800.0}
AN_HOUR_AGO = time.time() - 3600.0


def make_bundle(parent: Path, name: str = NAME, status: str = "done") -> Path:
    """A small bundle: manifest, one shard, an empty ``hosts/``, a report, an export CSV,
    every file last changed an hour ago (the empty folder too)."""
    root = parent / name
    (root / "responses").mkdir(parents=True)
    (root / "hosts").mkdir()
    (root / "export").mkdir()
    (root / "bundle.json").write_text(json.dumps({**MANIFEST, "status": status}))
    (root / "responses" / "m-fast.jsonl").write_bytes(b'{"key": "m|v|A1|1"}\n' * 50)
    (root / "report.html").write_text("<!DOCTYPE html><p>Bericht \u00fcber alles</p>")
    (root / "export" / "responses.csv").write_text("key,ok\nm|v|A1|1,true\n")
    for path in root.rglob("*"):
        os.utime(path, (AN_HOUR_AGO, AN_HOUR_AGO))
    return root


def zipped(root: Path) -> bytes:
    buf = io.BytesIO()
    zip_bundle(root, buf)
    return buf.getvalue()


def write_zip(path: Path, members: dict[str, bytes], links: tuple[str, ...] = ()) -> Path:
    """A zip with ``members`` (name → bytes); the names in ``links`` stored as symlinks."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name)
            if name in links:
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, data)
    return path


def good(top: str = NAME) -> dict[str, bytes]:
    return {f"{top}/bundle.json": json.dumps(MANIFEST).encode(), f"{top}/events.jsonl": b""}


def files_under(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_zip_import_round_trip_is_byte_identical(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    root = make_bundle(runs / "lab")
    (root / "link.txt").symlink_to("/etc/hostname")
    (root / "etc").symlink_to("/etc", target_is_directory=True)
    first = zipped(root)
    names = zipfile.ZipFile(io.BytesIO(first)).namelist()
    assert names == [
        f"{NAME}/bundle.json",
        f"{NAME}/export/responses.csv",
        f"{NAME}/hosts/",
        f"{NAME}/report.html",
        f"{NAME}/responses/m-fast.jsonl",
    ]
    upload = tmp_path / "b.zip"
    upload.write_bytes(first)
    target = import_bundle(runs, upload)
    assert target == runs / "imported" / NAME
    assert files_under(target) == {k: v for k, v in files_under(root).items() if k != "link.txt"}
    assert (target / "hosts").is_dir()
    # times come back (zip keeps 2 s steps), so the copy zips to the same bytes
    assert abs((target / "bundle.json").stat().st_mtime - AN_HOUR_AGO) <= 2.0
    assert zipped(target) == first
    assert find_bundles(runs) == [target, root]
    assert [p.name for p in (runs / "imported").iterdir()] == [NAME]


@pytest.mark.parametrize(
    ("members", "links", "line"),
    [
        ({}, (), "import: the zip holds no file"),
        (
            {**good(), f"{NAME}/../../escape.txt": b"x"},
            (),
            f"import: '{NAME}/../../escape.txt' leaves the bundle's folder",
        ),
        (
            {**good(), "/etc/cron.d/x": b"x"},
            (),
            "import: '/etc/cron.d/x' leaves the bundle's folder",
        ),
        (
            {**good(), f"{NAME}\\..\\x": b"x"},
            (),
            f"import: '{NAME}\\\\..\\\\x' leaves the bundle's folder",
        ),
        (
            {**good(), f"{NAME}/hosts": b"/etc"},
            (f"{NAME}/hosts",),
            f"import: '{NAME}/hosts' is a link",
        ),
        ({**good(), "README.txt": b"x"}, (), "import: 'README.txt' is not inside a bundle folder"),
        ({**good(), **good("other")}, (), "import: the zip holds 2 folders, not one bundle"),
        (good(".hidden"), (), "import: the folder name '.hidden' is not a bundle folder's"),
        (good("a b"), (), "import: the folder name 'a b' is not a bundle folder's"),
        (
            {f"{NAME}/notes.txt": b"hello"},
            (),
            f"import: {NAME}/bundle.json is missing: not a bundle",
        ),
        (
            {f"{NAME}/bundle.json": b"not json"},
            (),
            f"import: {NAME}/bundle.json is not a bundle manifest: not a bundle",
        ),
        (
            {f"{NAME}/bundle.json": b'{"status": "done"}'},
            (),
            f"import: {NAME}/bundle.json is not a bundle manifest: not a bundle",
        ),
        (
            {f"{NAME}/bundle.json": b'{"schema_version": 1, "models": 3}'},
            (),
            f"import: {NAME}/bundle.json is not a bundle manifest: not a bundle",
        ),
        (
            {**good(), f"{NAME}/bundle.json/x": b"x"},
            (),
            f"import: '{NAME}/bundle.json/x' cannot be unpacked (File exists)",
        ),
    ],
)
def test_a_zip_that_is_not_one_bundle_is_refused_and_leaves_nothing(
    tmp_path: Path, members: dict[str, bytes], links: tuple[str, ...], line: str
) -> None:
    runs = tmp_path / "runs"
    kept = make_bundle(runs)
    upload = write_zip(tmp_path / "x.zip", members, links)
    with pytest.raises(UsageError) as caught:
        import_bundle(runs, upload)
    assert str(caught.value) == line
    assert find_bundles(runs) == [kept]
    assert sorted(p.name for p in runs.rglob("*") if "imported" in p.parts) in ([], ["imported"])


def test_a_name_twice_and_a_file_that_is_not_a_zip_are_refused(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    upload = tmp_path / "twice.zip"
    with zipfile.ZipFile(upload, "w") as archive:
        archive.writestr(f"{NAME}/bundle.json", json.dumps(MANIFEST))
        with pytest.warns(UserWarning, match="Duplicate name"):
            archive.writestr(f"{NAME}/bundle.json", b"{}")
    with pytest.raises(UsageError, match=r"^import: '[^']+/bundle.json' is in the zip twice$"):
        import_bundle(runs, upload)
    text = tmp_path / "report.zip"
    text.write_text("<html>not a zip</html>")
    with pytest.raises(UsageError, match=r"^import: not a zip file$"):
        import_bundle(runs, text)
    assert list(runs.iterdir()) == []


def test_a_damaged_member_is_refused(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    upload = write_zip(tmp_path / "x.zip", {**good(), f"{NAME}/big.jsonl": b"A" * 4000})
    raw = bytearray(upload.read_bytes())
    at = raw.index(b"A" * 4000)
    raw[at : at + 4] = b"BBBB"  # stored data no longer matches its CRC
    upload.write_bytes(bytes(raw))
    with pytest.raises(UsageError) as caught:
        import_bundle(runs, upload)
    assert str(caught.value) == (
        f"import: '{NAME}/big.jsonl' cannot be read (Bad CRC-32 for file '{NAME}/big.jsonl')"
    )
    assert find_bundles(runs) == []
    assert [p.name for p in (runs / "imported").iterdir()] == []


def test_limits_on_files_and_unpacked_bytes(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    upload = write_zip(tmp_path / "x.zip", {**good(), f"{NAME}/a": b"0" * 1000})
    with pytest.raises(UsageError) as caught:
        import_bundle(runs, upload, max_files=2)
    assert str(caught.value) == "import: 3 files and folders, more than the 2 allowed"
    size = 1000 + len(json.dumps(MANIFEST))
    with pytest.raises(UsageError) as caught:
        import_bundle(runs, upload, max_bytes=size - 1)
    assert str(caught.value) == f"import: {size} bytes unpacked, more than the {size - 1} allowed"
    assert import_bundle(runs, upload, max_bytes=size) == runs / "imported" / NAME
    assert IMPORT_MAX_BYTES == 1024**3


def test_the_same_bundle_imported_twice_is_refused(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    upload = write_zip(tmp_path / "x.zip", good())
    import_bundle(runs, upload)
    with pytest.raises(UsageError) as caught:
        import_bundle(runs, upload)
    assert str(caught.value) == f"import: imported/{NAME} exists already under --runs"


def test_downloads_name_only_the_offered_files(tmp_path: Path) -> None:
    root = make_bundle(tmp_path)
    (root / "report.md").write_text("# Bericht")
    assert downloads(root) == ["report.html", "report.md", "export/responses.csv"]
    assert download_path(root, "export/responses.csv") == root / "export" / "responses.csv"
    for name in ("bundle.json", "../x", "export/../bundle.json", "/etc/passwd", "scorecard.json"):
        assert download_path(root, name) is None, name
    (root / "report.md").unlink()
    (root / "report.md").symlink_to("/etc/hostname")
    (root / "export" / "hosts.csv").symlink_to("/etc/hostname")
    assert downloads(root) == ["report.html", "export/responses.csv"]
    assert download_path(root, "report.md") is None


def test_trash_and_restore(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    root = make_bundle(runs / "lab")
    before = files_under(root)
    entry = trash(runs, root)
    assert not root.exists()
    assert entry.origin == f"lab/{NAME}"
    assert entry.id.endswith(f"_{NAME}") and len(entry.id) == len(NAME) + 16
    assert find_bundles(runs) == []
    assert trashed(runs) == [entry]
    # a second bundle of the same name in the same second gets its own id
    again = make_bundle(runs / "lab")
    second = trash(runs, again)
    assert re.fullmatch(rf"\d{{8}}-\d{{6}}_{NAME}(-2)?", second.id)
    assert second.id == (f"{entry.id}-2" if second.id[:15] == entry.id[:15] else second.id)
    assert second.id != entry.id
    assert {t.id for t in trashed(runs)} == {entry.id, second.id}
    assert restore(runs, entry.id) == (runs / "lab" / NAME).resolve()
    assert files_under(root) == before
    with pytest.raises(UsageError) as caught:
        restore(runs, second.id)
    assert str(caught.value) == f"restore: lab/{NAME} exists again under --runs"
    with pytest.raises(UsageError) as caught:
        restore(runs, entry.id)
    assert str(caught.value) == f"restore: {entry.id!r} is not in the trash"
    assert trashed(runs) == [second]


def test_trash_refuses_a_running_bundle_and_one_in_the_trash(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    live = make_bundle(runs, status="running")
    (live / "events.jsonl").write_text("{}\n")  # written just now: the run is alive
    with pytest.raises(BundleError) as caught:
        trash(runs, live)
    assert str(caught.value) == f"trash: {NAME} is still running; stop its run first"
    assert live.is_dir()
    (live / "bundle.json").write_text(json.dumps(MANIFEST))
    entry = trash(runs, live)
    with pytest.raises(UsageError) as caught:
        trash(runs, runs / ".trash" / entry.id)
    assert (
        str(caught.value)
        == f"trash: .trash/{entry.id} is in a hidden folder (the trash?), not a run"
    )


def test_restore_skips_bad_sidecars_and_refuses_an_origin_outside_runs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    entry = trash(runs, make_bundle(runs))
    sidecar = runs / ".trash" / f"{entry.id}.json"
    (runs / ".trash" / "junk").mkdir()
    (runs / ".trash" / "junk.json").write_text("{not json")
    assert trashed(runs) == [entry]
    sidecar.write_text(json.dumps({"origin": "../outside", "at": entry.at}))
    with pytest.raises(UsageError) as caught:
        restore(runs, entry.id)
    assert str(caught.value) == "restore: '../outside' is not a place under --runs"
    assert not (tmp_path / "outside").exists()


def test_a_perf_bundle_round_trips_too(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    root = runs / "2026-01-04_030000_perf_speed"
    (root / "points").mkdir(parents=True)
    (root / "bundle.json").write_text(json.dumps({"schema_version": 1, "kind": "perf"}))
    (root / "summary.json").write_text('{"points": []}')
    upload = tmp_path / "perf.zip"
    upload.write_bytes(zipped(root))
    target = import_bundle(runs, upload)
    assert files_under(target) == files_under(root)
    assert (target / "points").is_dir()
    assert zipped(target) == upload.read_bytes()


def test_the_files_bar_offers_the_trash_only_when_no_run_is_going(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    done = make_bundle(runs / "a b")
    html = files_bar(done, runs)
    assert f'<a id="download-zip" href="/zip/a%20b/{NAME}" download>' in html
    assert f'href="/file/a%20b/{NAME}?name=export%2Fresponses.csv" download>' in html
    assert f'<form method="post" action="/trash/a%20b/{NAME}">' in html
    live = make_bundle(runs / "live", status="running")
    (live / "events.jsonl").write_text("{}\n")
    html = files_bar(live, runs)
    assert 'id="trash-bundle"' not in html
    assert (
        '<span class="muted" id="trash-later">running: stop it to move it to the trash</span>'
        in html
    )


def test_an_encrypted_member_is_refused(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    upload = write_zip(tmp_path / "x.zip", good())
    raw = bytearray(upload.read_bytes())
    central = raw.index(b"PK\x01\x02")  # the first member's central directory record
    raw[central + 8] |= 0x01  # general purpose flag bit 0: encrypted
    upload.write_bytes(bytes(raw))
    with pytest.raises(UsageError) as caught:
        import_bundle(runs, upload)
    assert str(caught.value) == f"import: '{NAME}/bundle.json' is encrypted"
    assert list(runs.iterdir()) == []
