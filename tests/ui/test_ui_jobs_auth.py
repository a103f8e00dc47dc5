"""Ray 2.60's token authentication and the UI's jobs.

A ``~/.ray/auth_token`` left by any earlier local ``ray.init`` made ``ray start --head`` turn
token auth on, while the UI's own client, with ``RAY_AUTH_MODE`` unset, sent no token: every
submission from the page answered 500. Now the UI's head has a token of its own that its client
sends, and a UI given ``--address`` of a cluster it has no (or the wrong) token for says which
variables to set, in one line, with 502, instead of a traceback."""

from __future__ import annotations

import html
import os
import stat
import tempfile
from pathlib import Path

import httpx
import yaml
from test_ui_jobs_run import FLEET, job_log, start, wait_done
from test_ui_live import PACK
from ui_helpers import UiServer, ui_server

TOKEN_SOURCES = "RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token"


def ui_env(home: str, **auth: str) -> dict[str, str]:
    """This process's environment with ``HOME`` = ``home``, no ``RAY_*`` auth or address
    variables, then ``auth``."""
    env = {**os.environ, "HOME": home}
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        env.pop(name, None)
    return {**env, **auth}


def page_message(server: UiServer) -> tuple[int, str]:
    """``(status, message)`` of starting an eval from the form."""
    resp = httpx.post(
        server.url + "/jobs/start",
        data={"kind": "eval", "pack": "live.yaml", "config": "fleet.yaml"},
        headers={"Origin": server.url},
        timeout=120,
    )
    text = resp.text.split('<p id="job-message" class="err">', 1)[-1].split("</p>", 1)[0]
    return resp.status_code, html.unescape(text)


def test_jobs_run_on_the_uis_head_with_a_stray_token_in_home(tmp_path: Path) -> None:
    runs, packs = tmp_path / "runs", tmp_path / "packs"
    runs.mkdir()
    packs.mkdir()
    (packs / "live.yaml").write_text(yaml.safe_dump(PACK, allow_unicode=True), encoding="utf-8")
    (packs / "fleet.yaml").write_text(yaml.safe_dump(FLEET), encoding="utf-8")
    home = tempfile.mkdtemp(prefix="uiauth", dir="/tmp")
    (Path(home) / ".ray").mkdir()
    (Path(home) / ".ray" / "auth_token").write_text("a-token-left-by-an-earlier-ray-init")
    with ui_server(runs, packs, env=ui_env(home)) as server:
        eval_id = start(server, kind="eval", pack="live.yaml", config="fleet.yaml")
        assert wait_done(server, eval_id) == {eval_id: "SUCCEEDED"}, job_log(server, eval_id)
        jobs_html = httpx.get(server.url + "/jobs", timeout=60).text
        head = jobs_html.split('Ray dashboard: <a href="', 1)[1].split('"', 1)[0]
        token_file = Path(jobs_html.split("(its token: <code>", 1)[1].split("</code>", 1)[0])
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text()
        assert len(token) == 64 and token != "a-token-left-by-an-earlier-ray-init"
        assert httpx.get(head + "/api/jobs/", timeout=30).status_code == 401
        bearer = {"Authorization": f"Bearer {token}"}
        listed = httpx.get(head + "/api/jobs/", headers=bearer, timeout=30).json()
        assert eval_id in {j["submission_id"] for j in listed}

        # a second UI on that cluster (``--address``): no token, a wrong one, the right one
        address = ("--address", head)
        with ui_server(runs, packs, *address, env=ui_env(home)) as other:
            assert page_message(other) == (
                502,
                f"Ray cluster at {head} requires a token the UI did not send: start the UI "
                f"with RAY_AUTH_MODE=token and the cluster's token in {TOKEN_SOURCES}",
            )
        wrong = ui_env(home, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="0" * 64)
        with ui_server(runs, packs, *address, env=wrong) as other:
            assert page_message(other) == (
                502,
                f"Ray cluster at {head} refused the UI's token: put the cluster's token in "
                f"{TOKEN_SOURCES}",
            )
        right = ui_env(home, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token_file))
        with ui_server(runs, packs, *address, env=right) as other:
            listing = httpx.get(other.url + "/jobs", timeout=60).text
            assert f'<tr data-job="{eval_id}">' in listing
            assert "(its token:" not in listing  # not this UI's head
