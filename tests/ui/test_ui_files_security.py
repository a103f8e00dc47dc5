"""The guards on the routes of bundles as files, over real HTTP: Host on every one, Origin on
every POST, nothing served from outside ``--runs``, uploads size-limited (by
``Content-Length`` at the real subprocess, and while a chunked body streams, at an app with
a small limit)."""

from __future__ import annotations

import asyncio
import io
import json
import re
import socket
import zipfile
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import httpx
from aiohttp import test_utils, web
from test_ui_security import ORIGIN_REFUSED
from ui_helpers import JUDGED, UiServer

from touchstone_ray.ui.bundle_files import BundleFiles
from touchstone_ray.ui.files import IMPORT_MAX_BYTES

HOST_REFUSED = "refused: Host is not this UI's loopback address"
T = TypeVar("T")


def in_process(files: BundleFiles, run: Callable[[test_utils.TestClient], Awaitable[T]]) -> T:
    """``run`` against an app of only ``files``' routes on a loopback port, in a thread of
    its own (Playwright's sync API holds this thread's event loop)."""

    async def serve() -> T:
        app = web.Application()
        app.add_routes(files.routes())
        async with test_utils.TestClient(test_utils.TestServer(app, host="127.0.0.1")) as client:
            return await run(client)

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(serve())).result(timeout=60)


BUNDLE_ZIP = io.BytesIO()
with zipfile.ZipFile(BUNDLE_ZIP, "w") as _archive:
    _archive.writestr("2026-01-09_030000_eval_x/bundle.json", json.dumps({"schema_version": 1}))


def test_every_post_needs_the_origin_and_changes_nothing_without(site: UiServer) -> None:
    posts = {
        f"/trash/{JUDGED}": {},
        "/restore/20260101-000000_x": {},
        "/bundles/import": {"files": {"file": ("b.zip", BUNDLE_ZIP.getvalue(), "application/zip")}},
    }
    for path, extra in posts.items():
        for headers in ({}, {"Origin": "http://evil.test"}, {"Origin": "null"}):
            r = httpx.post(site.url + path, headers=headers, **extra)
            assert (r.status_code, r.text) == (403, ORIGIN_REFUSED), (path, headers)
    assert httpx.get(f"{site.url}/run/{JUDGED}").status_code == 200
    trash = httpx.get(site.url + "/trash")
    assert 'id="trash-empty"' in trash.text
    assert "imported/" not in httpx.get(site.url + "/fragment/overview").text


def test_every_route_checks_the_host(site: UiServer) -> None:
    host = {"Host": f"rebound.example:{site.port}"}
    for path in (f"/zip/{JUDGED}", f"/file/{JUDGED}?name=scorecard.json", "/trash"):
        r = httpx.get(site.url + path, headers=host)
        assert (r.status_code, r.text) == (403, HOST_REFUSED), path
    for path in (f"/trash/{JUDGED}", "/restore/x", "/bundles/import"):
        r = httpx.post(site.url + path, headers={**host, "Origin": f"http://{host['Host']}"})
        assert (r.status_code, r.text) == (403, HOST_REFUSED), path


def test_nothing_outside_runs_is_zipped_served_or_trashed(site: UiServer) -> None:
    for path in ("/zip/..%2F..%2Fetc", "/zip/%2Fetc", "/zip/lab", "/file/..%2Fpacks?name=x"):
        r = httpx.get(site.url + path)
        assert (r.status_code, r.text) == (404, "no such bundle under --runs"), path
    r = httpx.post(site.url + "/trash/..%2F..%2Fetc", headers={"Origin": site.url})
    assert r.status_code == 404
    r = httpx.get(f"{site.url}/file/{JUDGED}", params={"name": "../../../../etc/hostname"})
    assert (r.status_code, r.text) == (404, "no such file of the bundle to download")
    z = httpx.get(f"{site.url}/zip/{JUDGED}")
    assert z.status_code == 200
    assert z.headers["content-disposition"] == (
        'attachment; filename="2026-01-02_030000_eval_mini.zip"; '
        "filename*=UTF-8''2026-01-02_030000_eval_mini.zip"
    )
    assert z.headers["content-security-policy"].startswith("default-src 'none'")
    names = zipfile.ZipFile(io.BytesIO(z.content)).namelist()
    assert all(n.startswith("2026-01-02_030000_eval_mini/") for n in names)


def test_an_upload_declared_over_the_limit_is_refused_before_its_body(site: UiServer) -> None:
    head = (
        "POST /bundles/import HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{site.port}\r\nOrigin: {site.url}\r\n"
        "Content-Type: multipart/form-data; boundary=xyz\r\n"
        f"Content-Length: {IMPORT_MAX_BYTES + 1}\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", site.port), timeout=10) as sock:
        sock.sendall(head.encode())  # and no byte of the body
        answer = b""
        while b"</html>" not in answer:  # the server keeps the socket open while it lingers
            answer += sock.recv(65536)
    status, _, rest = answer.partition(b"\r\n")
    assert status == b"HTTP/1.1 413 Request Entity Too Large"
    assert (
        f'id="import-error">import: the upload is larger than the {IMPORT_MAX_BYTES} bytes '
        "allowed</p>"
    ).encode() in rest


def test_a_chunked_upload_is_cut_at_the_limit(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    limit = 64 * 1024
    boundary = "b0undary"

    async def body() -> AsyncIterator[bytes]:
        yield (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.zip"'
            "\r\nContent-Type: application/zip\r\n\r\n"
        ).encode()
        for _ in range(8):
            yield b"\0" * 16 * 1024
        yield f"\r\n--{boundary}--\r\n".encode()

    async def run(client: test_utils.TestClient) -> tuple[int, str]:
        headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
        r = await client.post("/bundles/import", data=body(), headers=headers)
        assert r.request_info.headers.get("Content-Length") is None
        return r.status, await r.text()

    status, text = in_process(BundleFiles(runs.resolve(), max_upload_bytes=limit), run)
    assert status == 413
    assert f"import: the upload is larger than the {limit} bytes allowed" in text
    assert list(runs.iterdir()) == []


def test_refusals_answer_with_their_status_and_line(tmp_path: Path) -> None:
    runs = (tmp_path / "runs").resolve()
    name = "2026-01-02_030000_eval_mini"
    live = runs / "lab" / name
    live.mkdir(parents=True)
    (live / "bundle.json").write_text(json.dumps({"schema_version": 1, "status": "running"}))
    done = runs / name
    done.mkdir()
    (done / "bundle.json").write_text(json.dumps({"schema_version": 1, "status": "done"}))

    async def run(client: test_utils.TestClient) -> list[tuple[int, str]]:
        got = []
        for path, data in (
            (f"/trash/lab/{name}", None),
            ("/restore/20260101-000000_gone", None),
            ("/bundles/import", {"file": ""}),
            (f"/trash/{name}", None),
        ):
            r = await client.post(path, data=data, allow_redirects=False)
            found = re.search(r'<p class="err" id="[a-z-]+">([^<]*)</p>', await r.text())
            got.append((r.status, found[1] if found else r.headers.get("Location", "")))
        return got

    answers = in_process(BundleFiles(runs), run)
    assert answers[:3] == [
        (409, f"trash: lab/{name} is still running; stop its run first"),
        (409, "restore: &#x27;20260101-000000_gone&#x27; is not in the trash"),
        (200, "import: no file chosen; pick a bundle&#x27;s .zip"),
    ]
    assert answers[3][0] == 303
    assert re.fullmatch(rf"/trash\?moved=\d{{8}}-\d{{6}}_{name}", answers[3][1])
    assert live.is_dir() and not done.exists()
