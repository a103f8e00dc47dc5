"""The files under ``cluster/`` and the exposure helpers of ``fleet.session``, without a cluster:
shell scripts (``bash -n``, shellcheck, dry runs), the ``ray up`` config (Ray's own schema, the
per-worker label map run with stub commands), the KubeRay manifest, the Grafana dashboard
(every query names an exported metric; promtool parses them where installed)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from touchstone_ray.config import RaySettings
from touchstone_ray.fleet.metrics import PROMETHEUS_CELL_METRICS, PROMETHEUS_HOST_METRICS
from touchstone_ray.fleet.session import (
    dashboard_exposure_warning,
    is_loopback,
    resolve_address,
    url_host,
)

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "cluster"
SCRIPTS = sorted(CLUSTER.glob("*.sh"))
GRAFANA = CLUSTER / "grafana" / "touchstone.json"


def _sh(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", *args], capture_output=True, text=True, timeout=30, env=env, cwd=REPO
    )


# --- shell scripts -------------------------------------------------------------------------
def test_there_are_start_scripts() -> None:
    assert {p.name for p in SCRIPTS} >= {"start-head.sh", "start-worker.sh"}
    for script in SCRIPTS:
        assert script.stat().st_mode & stat.S_IXUSR, f"{script.name} is not executable"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_parses(script: Path) -> None:
    done = _sh("-n", str(script))
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
def test_scripts_pass_shellcheck() -> None:
    done = subprocess.run(
        ["shellcheck", *map(str, SCRIPTS)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_head_defaults_to_a_loopback_dashboard_with_token_auth_and_a_label() -> None:
    done = _sh(str(CLUSTER / "start-head.sh"), "gpu-h", "--dry-run", "--", "--num-gpus", "1")
    assert done.returncode == 0, done.stderr
    cmd = done.stdout.strip()
    assert cmd.startswith("RAY_AUTH_MODE=token ray start --head ")
    assert "--dashboard-host 127.0.0.1" in cmd
    assert "--include-dashboard true" in cmd
    assert "--labels touchstone.host=gpu-h" in cmd
    assert cmd.endswith("--num-gpus 1")
    assert done.stderr == ""  # no warning


def test_head_warns_when_the_dashboard_binds_elsewhere() -> None:
    done = _sh(str(CLUSTER / "start-head.sh"), "--dry-run", "--dashboard-host", "0.0.0.0")
    assert done.returncode == 0
    assert "--dashboard-host 0.0.0.0" in done.stdout
    assert done.stderr.startswith("warning: the Ray dashboard will listen on 0.0.0.0:8265")
    for loopback in ("127.0.0.1", "localhost", "::1"):
        quiet = _sh(str(CLUSTER / "start-head.sh"), "--dry-run", "--dashboard-host", loopback)
        assert quiet.returncode == 0 and quiet.stderr == "", (loopback, quiet.stderr)


@pytest.mark.parametrize(
    "args",
    [
        ["--dry-run", "--", "--dashboard-host", "0.0.0.0"],  # only through the flag
        ["--dry-run", "--", "--labels", "x=y"],
        ["--dry-run", "bad name!"],
        ["--dry-run", "--bogus"],
    ],
)
def test_head_refuses(args: list[str]) -> None:
    done = _sh(str(CLUSTER / "start-head.sh"), *args)
    assert done.returncode == 2, done.stdout
    assert done.stderr.startswith("start-head.sh: ")


def test_worker_dry_run_labels_and_auth() -> None:
    done = _sh(
        str(CLUSTER / "start-worker.sh"), "gpu-a", "--address", "10.0.0.10:6379", "--dry-run"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "RAY_AUTH_MODE=token ray start --address 10.0.0.10:6379 "
        "--labels touchstone.host=gpu-a --disable-usage-stats"
    )


def test_worker_needs_name_address_and_the_token(tmp_path: Path) -> None:
    worker = str(CLUSTER / "start-worker.sh")
    assert _sh(worker, "--address", "h:1").returncode == 2
    no_address = _sh(worker, "gpu-a")
    assert no_address.returncode == 2 and "--address" in no_address.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")} | {
        "HOME": str(tmp_path)
    }
    no_token = _sh(worker, "gpu-a", "--address", "127.0.0.1:1", env=env)
    assert no_token.returncode == 2, no_token.stdout + no_token.stderr
    assert "no Ray auth token" in no_token.stderr


# --- ray up (on-prem) ----------------------------------------------------------------------
def _onprem() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((CLUSTER / "onprem.example.yaml").read_text())
    return data


def test_onprem_config_passes_the_ray_launcher_schema() -> None:
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = prepare_config(_onprem())
    validate_config(config)
    assert config["provider"]["type"] == "local"
    head = " ".join(config["head_start_ray_commands"])
    assert "RAY_AUTH_MODE=token ray start --head" in head
    assert "--dashboard-host=127.0.0.1" in head
    assert "~/.ray/auth_token" in config["file_mounts"]
    assert any("pip install" in c and "touchstone-ray" in c for c in config["setup_commands"])


def test_onprem_labels_each_worker_by_its_address(tmp_path: Path) -> None:
    """Run the worker start command with stub ``ray`` and ``hostname`` commands."""
    config = _onprem()
    start = next(c for c in config["worker_start_ray_commands"] if "ray start" in c)
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "ray").write_text('#!/bin/sh\necho "RAY_AUTH_MODE=$RAY_AUTH_MODE ray $*"\n')
    (stubs / "hostname").write_text(
        '#!/bin/sh\nif [ "$1" = -I ]; then echo "$FAKE_IPS"; else echo spare-box; fi\n'
    )
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    names = dict(zip(config["provider"]["worker_ips"], ["gpu-a", "gpu-b", "gpu-c"], strict=True))
    names["10.9.9.9"] = "spare-box"  # not in the map: its short hostname
    for ip, name in names.items():
        env = {
            "PATH": f"{stubs}:{os.environ['PATH']}",
            "RAY_HEAD_IP": "10.0.0.10",
            "FAKE_IPS": f"172.17.0.1 {ip} fd00::5",
        }
        done = subprocess.run(
            ["bash", "-c", start], capture_output=True, text=True, env=env, timeout=10
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == (
            "RAY_AUTH_MODE=token ray start --address=10.0.0.10:6379 "
            f"--labels=touchstone.host={name} --disable-usage-stats"
        )


# --- KubeRay -------------------------------------------------------------------------------
def test_kuberay_cluster_has_one_labelled_group_per_box_kind() -> None:
    docs = list(yaml.safe_load_all((CLUSTER / "kuberay.example.yaml").read_text()))
    assert len(docs) == 1
    rc = docs[0]
    assert (rc["apiVersion"], rc["kind"]) == ("ray.io/v1", "RayCluster")
    spec = rc["spec"]
    assert spec["rayVersion"].startswith("2.60")
    assert spec["authOptions"] == {"mode": "token"}
    head = spec["headGroupSpec"]
    assert head["rayStartParams"]["dashboard-host"] == "127.0.0.1"
    assert head["serviceType"] == "ClusterIP"
    groups = spec["workerGroupSpecs"]
    assert len(groups) >= 2
    for group in groups:
        assert group["labels"] == {"touchstone.host": group["groupName"]}
        assert group["replicas"] == group["minReplicas"] == group["maxReplicas"] == 1
        containers = group["template"]["spec"]["containers"]
        assert any(c["name"] == "ray-worker" for c in containers)


# --- Grafana -------------------------------------------------------------------------------
def _dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(GRAFANA.read_text(encoding="utf-8"))
    return data


def _targets(dash: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(p["title"], t) for p in dash["panels"] for t in p.get("targets", [])]


def test_grafana_dashboard_uses_a_prometheus_datasource_variable() -> None:
    dash = _dashboard()
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for title, target in _targets(dash):
        assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, title


def test_grafana_dashboard_covers_every_exported_metric_and_only_those() -> None:
    dash = _dashboard()
    exported = set(PROMETHEUS_CELL_METRICS) | set(PROMETHEUS_HOST_METRICS)
    used = {
        re.sub(r"_(bucket|sum|count)$", "", name)
        for _, target in _targets(dash)
        for name in re.findall(r"\bray_touchstone_\w+", target["expr"])
    }
    assert used == exported
    titles = " | ".join(p["title"] for p in dash["panels"]).lower()
    for topic in ("status", "in flight", "ttft", "decode", "memory in use", "pressure", "gpu"):
        assert topic in titles, topic


def test_grafana_panels_do_not_overlap() -> None:
    cells: set[tuple[int, int]] = set()
    for panel in _dashboard()["panels"]:
        g = panel["gridPos"]
        assert g["x"] + g["w"] <= 24
        mine = {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }
        assert not cells & mine, panel["title"]
        cells |= mine


def test_host_metric_names_match_the_monitor() -> None:
    source = (REPO / "touchstone_ray" / "telemetry" / "monitor.py").read_text()
    for name in PROMETHEUS_HOST_METRICS:
        assert f'"{name.removeprefix("ray_")}"' in source, name


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_grafana_queries_parse_with_promtool(tmp_path: Path) -> None:
    rules = [
        {
            "record": f"touchstone:check:{i}",
            "expr": target["expr"]
            .replace("$__rate_interval", "1m")
            .replace("$host", ".*")
            .replace("$model", ".*"),
        }
        for i, (_, target) in enumerate(_targets(_dashboard()))
    ]
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "touchstone", "rules": rules}]}))
    done = subprocess.run(
        ["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


# --- fleet.session exposure helpers ----------------------------------------------------------
@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("127.0.0.1:8265", "127.0.0.1"),
        ("192.0.2.2:38266", "192.0.2.2"),
        ("[::1]:8265", "::1"),
        ("http://10.0.0.10:8265", "10.0.0.10"),
        ("localhost:8265", "localhost"),
    ],
)
def test_url_host(url: str, host: str) -> None:
    assert url_host(url) == host


def test_exposure_warning_only_for_non_loopback_dashboards() -> None:
    for quiet in ("127.0.0.1:8265", "localhost:8265", "[::1]:8265", "127.0.0.2:1"):
        assert dashboard_exposure_warning(quiet) is None, quiet
    warning = dashboard_exposure_warning("192.0.2.2:38266")
    assert warning is not None
    assert warning.startswith("warning: this cluster's Ray dashboard listens on 192.0.2.2:38266")
    assert "ssh -L 8265:127.0.0.1:8265" in warning
    assert is_loopback("[::1]") and not is_loopback("0.0.0.0")


def test_address_precedence_flag_then_env_then_config(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = RaySettings(address="auto")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert resolve_address(None, RaySettings()) is None  # embedded
    assert resolve_address(None, settings) == "auto"
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.10:6379")  # what `ray job submit` sets
    assert resolve_address(None, RaySettings()) == "10.0.0.10:6379"
    assert resolve_address(None, settings) == "10.0.0.10:6379"
    assert resolve_address("ray://head:10001", settings) == "ray://head:10001"
    monkeypatch.setenv("RAY_ADDRESS", "")
    assert resolve_address(None, RaySettings()) is None
