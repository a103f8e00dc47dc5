"""The UI's guards over real HTTP against the real subprocess: Origin and Host checks, the
token off loopback, and file access confined to ``--runs`` and the packs folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
from ui_helpers import JUDGED, UiServer, free_port, make_bundle, packs_folder, ui_server

ORIGIN_REFUSED = "refused: Origin does not match this UI"


def test_post_without_or_with_a_foreign_origin_is_refused(site: UiServer) -> None:
    url = site.url + "/packs/validate"
    bare = httpx.post(url, data={"yaml": "id: x"})
    assert (bare.status_code, bare.text) == (403, ORIGIN_REFUSED)
    foreign = httpx.post(url, data={"yaml": "id: x"}, headers={"Origin": "http://evil.test"})
    assert (foreign.status_code, foreign.text) == (403, ORIGIN_REFUSED)
    other_port = httpx.post(
        url, data={"yaml": "id: x"}, headers={"Origin": f"http://127.0.0.1:{site.port + 1}"}
    )
    assert other_port.status_code == 403
    for action in (
        "/jobs/start",
        "/jobs/touchstone-eval-x/stop",
        "/queue/add",
        "/queue/x/move",
        "/queue/x/remove",
        "/queue/x/stop",
        "/jobs/preflight",
        "/jobs/resume",
    ):
        job = httpx.post(site.url + action, data={"kind": "eval"})
        assert (job.status_code, job.text) == (403, ORIGIN_REFUSED)
    same = httpx.post(url, data={"yaml": "id: x"}, headers={"Origin": site.url})
    assert same.status_code == 200
    assert 'id="validate-result" class="err">pasted.yaml: ' in same.text


def test_a_foreign_host_header_is_refused_even_for_get(site: UiServer) -> None:
    r = httpx.get(site.url + "/", headers={"Host": f"rebound.example:{site.port}"})
    assert (r.status_code, r.text) == (403, "refused: Host is not this UI's loopback address")
    for path in (
        "/queue",
        "/queue/fragment",
        "/queue/choices",
        "/jobs/choices",
        "/jobs/plan",
        "/jobs/preflight/x",
    ):
        r = httpx.get(site.url + path, headers={"Host": f"rebound.example:{site.port}"})
        assert r.status_code == 403, path
    wrong_port = httpx.get(site.url + "/", headers={"Host": f"127.0.0.1:{site.port + 1}"})
    assert wrong_port.status_code == 403
    assert httpx.get(site.url + "/", headers={"Host": f"localhost:{site.port}"}).status_code == 200
    for path in (f"/judge-live/{JUDGED}", f"/judge-events/{JUDGED}"):
        r = httpx.get(site.url + path, headers={"Host": f"rebound.example:{site.port}"})
        assert (r.status_code, r.text) == (403, "refused: Host is not this UI's loopback address")


def test_paths_outside_runs_and_packs_are_not_served(site: UiServer) -> None:
    for path in (
        "/run/..%2F..%2F..%2Fetc",
        "/run/%2Fetc",
        "/run/lab",
        "/live/..%2Fpacks",
        "/judge-live/..%2Fpacks",
        "/judge-events/..%2F..%2Fetc",
        "/judge-live/lab",
        "/packs/..%2Fruns%2Flab",
        "/packs/..%2F..%2Fpyproject.toml",
    ):
        r = httpx.get(site.url + path)
        assert r.status_code == 404, path
    assert httpx.get(site.url + f"/run/{JUDGED}").status_code == 200
    assert httpx.get(site.url + f"/judge-live/{JUDGED}").status_code == 200


def test_headers_carry_the_strict_csp(site: UiServer) -> None:
    r = httpx.get(site.url + "/")
    assert r.headers["content-security-policy"] == (
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'; "
        "img-src data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
    assert r.headers["x-content-type-options"] == "nosniff"


def test_all_interfaces_without_a_token_is_refused_with_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TOUCHSTONE_UI_TOKEN"}
    args = ["ui", "--runs", str(tmp_path), "--host", "0.0.0.0", "--port", str(free_port())]
    proc = subprocess.run(
        [sys.executable, "-m", "touchstone_ray.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "error: --host 0.0.0.0: listening beyond this machine needs --token (or the "
        "TOUCHSTONE_UI_TOKEN environment variable)\n"
    )


def test_all_interfaces_with_a_token_warns_and_requires_it(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    make_bundle(runs)
    os.environ["TOUCHSTONE_UI_TOKEN"] = "s3cret-token"
    try:
        with ui_server(runs, packs_folder(tmp_path), host="0.0.0.0") as server:
            assert httpx.get(server.url + "/").status_code == 401
            wrong = httpx.get(server.url + "/", headers={"Authorization": "Bearer nope"})
            assert (wrong.status_code, wrong.text) == (401, "refused: a valid token is required")
            bearer = {"Authorization": "Bearer s3cret-token"}
            assert httpx.get(server.url + "/", headers=bearer).status_code == 200
            with httpx.Client(follow_redirects=True) as client:
                login = client.get(server.url + "/?token=s3cret-token")
                assert login.status_code == 200
                assert login.history[0].status_code == 303
                assert client.cookies.get("touchstone_ui") == "s3cret-token"
                assert "mini v1" in login.text
            no_origin = httpx.post(server.url + "/packs/validate", headers=bearer)
            assert no_origin.status_code == 403
            server.proc.terminate()
            server.proc.wait(timeout=10)
            out = server.output()
    finally:
        del os.environ["TOUCHSTONE_UI_TOKEN"]
    assert out.splitlines()[:2] == [
        f"warning: the UI listens on 0.0.0.0:{server.port}, reachable beyond this machine; "
        "every request needs the token",
        f"touchstone-ray ui: http://0.0.0.0:{server.port}/",
    ]


def test_runs_folder_that_does_not_exist_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    proc = subprocess.run(
        [sys.executable, "-m", "touchstone_ray.cli", "ui", "--runs", str(missing)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (proc.returncode, proc.stderr) == (2, f"error: --runs {missing}: no such folder\n")


def test_queue_choices_and_edits_name_no_file_outside_runs_and_packs(site: UiServer) -> None:
    r = httpx.get(site.url + "/queue/choices", params={"pack": "../../etc/passwd", "config": "x"})
    assert r.json() == {
        "error": "pack ../../etc/passwd: not a file under --runs or the packs folder"
    }
    bad = httpx.post(
        site.url + "/queue/add",
        data={"pack": "/etc/passwd", "config": "x"},
        headers={"Origin": site.url},
    )
    assert bad.status_code == 400
    line = "pack /etc/passwd: not a file under --runs or the packs folder"
    assert f'<p id="queue-message" class="err">{line}</p>' in bad.text
    wrong = httpx.post(
        site.url + "/queue/x/move", data={"step": "sideways"}, headers={"Origin": site.url}
    )
    assert wrong.status_code == 400
    assert '<p id="queue-message" class="err">step: expected up or down</p>' in wrong.text
