"""Fleet-config errors and host → node resolution: exact one-line messages, no Ray."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import cli, tiny_pack, write_yaml

from touchstone_ray.config import load_config
from touchstone_ray.errors import ConfigError
from touchstone_ray.fleet.hosts import HOST_LABEL, NodeInfo, resolve_hosts

SIM = {"engine": "simulated"}


def _config_error(tmp_path: Path, data: dict[str, Any]) -> tuple[Path, str]:
    path = write_yaml(tmp_path / "fleet.yaml", data)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return path, str(info.value)


def test_unknown_host_name(tmp_path: Path) -> None:
    path, msg = _config_error(
        tmp_path,
        {
            "hosts": {"gpu-a": {"label": "gpu-a"}, "gpu-b": {"hostname": "b.lan"}},
            "models": [{"id": "m1", **SIM, "host": "gpu-a"}, {"id": "m2", **SIM, "host": "gpu-x"}],
        },
    )
    assert msg == (
        f"{path}: models[1].host: unknown host, expected one of "
        "['gpu-a', 'gpu-b', 'local'] (got 'gpu-x')"
    )


@pytest.mark.parametrize("engine", ["openai", "ollama"])
def test_model_without_base_url(tmp_path: Path, engine: str) -> None:
    path, msg = _config_error(tmp_path, {"models": [{"id": "m1", "engine": engine}]})
    assert msg == f"{path}: models[0].base_url: required for engine {engine} (got None)"


def test_simulated_needs_no_base_url(tmp_path: Path) -> None:
    config = load_config(write_yaml(tmp_path / "fleet.yaml", {"models": [{"id": "m1", **SIM}]}))
    assert config.models[0].base_url is None
    assert config.models[0].host_name == "local"


def test_unset_api_key_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOUCHSTONE_TEST_UNSET_KEY", raising=False)
    data = {
        "models": [
            {
                "id": "m1",
                "engine": "openai",
                "base_url": "http://127.0.0.1:8000/v1",
                "api_key_env": "TOUCHSTONE_TEST_UNSET_KEY",
            }
        ]
    }
    path, msg = _config_error(tmp_path, data)
    assert msg == (
        f"{path}: models[0].api_key_env: environment variable TOUCHSTONE_TEST_UNSET_KEY is not set"
    )
    monkeypatch.setenv("TOUCHSTONE_TEST_UNSET_KEY", "s3cr3t-value")
    config = load_config(path)  # set: accepted, and the value is not part of the config
    assert "s3cr3t-value" not in config.model_dump_json()


def test_duplicate_model_host_pair(tmp_path: Path) -> None:
    path, msg = _config_error(
        tmp_path,
        {
            "hosts": {"gpu-a": {"label": "gpu-a"}},
            "models": [
                {"id": "m1", **SIM, "host": "gpu-a"},
                {"id": "m1", **SIM},
                {"id": "m1", **SIM, "host": "gpu-a"},
            ],
        },
    )
    assert msg == (
        f"{path}: models[2]: duplicate (model id, host) pair, first at models[0] "
        "(got 'm1 on gpu-a')"
    )


def test_duplicate_pair_on_implicit_local(tmp_path: Path) -> None:
    path, msg = _config_error(
        tmp_path, {"models": [{"id": "m1", **SIM}, {"id": "m1", **SIM, "host": "local"}]}
    )
    assert msg == (
        f"{path}: models[1]: duplicate (model id, host) pair, first at models[0] "
        "(got 'm1 on local')"
    )


def test_same_id_on_two_hosts_gets_labels(tmp_path: Path) -> None:
    config = load_config(
        write_yaml(
            tmp_path / "fleet.yaml",
            {
                "hosts": {"gpu-a": {"label": "gpu-a"}},
                "models": [{"id": "m1", **SIM, "host": "gpu-a"}, {"id": "m1", **SIM}],
            },
        )
    )
    assert [config.model_label(m) for m in config.models] == ["m1@gpu-a", "m1@local"]


@pytest.mark.parametrize("url", ["localhost:8000/v1", "ftp://h/v1", "http:///v1", "127.0.0.1"])
def test_bad_url(tmp_path: Path, url: str) -> None:
    path, msg = _config_error(
        tmp_path, {"models": [{"id": "m1", "engine": "openai", "base_url": url}]}
    )
    assert msg.startswith(f"{path}: models[0].base_url: ")
    assert msg.endswith(f"base_url must be an http(s) URL with a host (got {url!r})")
    assert "\n" not in msg


def test_cli_config_error_is_one_line_before_ray(tmp_path: Path) -> None:
    """The CLI exits 2 with one line, and no Ray was started (nothing under RAY_TMPDIR)."""
    pack = write_yaml(tmp_path / "pack.yaml", tiny_pack())
    config = write_yaml(tmp_path / "fleet.yaml", {"models": [{"id": "m1", **SIM, "host": "gpu-x"}]})
    home, raytmp = tmp_path / "home", tmp_path / "raytmp"
    home.mkdir()
    saved = {k: os.environ.get(k) for k in ("HOME", "RAY_TMPDIR")}
    os.environ.update(HOME=str(home), RAY_TMPDIR=str(raytmp))
    try:
        proc = cli("eval", "--pack", str(pack), "--config", str(config), "--out", str(tmp_path))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"error: {config}: models[0].host: unknown host, expected one of ['local'] (got 'gpu-x')"
    ]
    assert proc.stdout == ""
    assert not raytmp.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleet.yaml", "home", "pack.yaml"]


# --- host → node resolution (pure over NodeInfo lists) -----------------------------------
def _node(n: int, label: str | None = None, alive: bool = True) -> NodeInfo:
    return NodeInfo(
        node_id=f"{n:02d}" * 28,
        ip=f"10.0.0.{n}",
        hostname=f"box{n}",
        labels={HOST_LABEL: label} if label else {},
        alive=alive,
    )


def _fleet(tmp_path: Path, hosts: dict[str, Any], models: list[dict[str, Any]]) -> Any:
    return load_config(write_yaml(tmp_path / "fleet.yaml", {"hosts": hosts, "models": models}))


def test_resolve_by_label_hostname_ip_and_local(tmp_path: Path) -> None:
    config = _fleet(
        tmp_path,
        {"a": {"label": "gpu-a"}, "b": {"hostname": "box2"}, "c": {"ip": "10.0.0.3"}},
        [
            {"id": "m", **SIM, "host": "a"},
            {"id": "m", **SIM, "host": "b"},
            {"id": "m", **SIM, "host": "c"},
            {"id": "m", **SIM},
        ],
    )
    nodes = [_node(1, "gpu-a"), _node(2), _node(3), _node(4)]
    got = resolve_hosts(config, nodes, driver_node_id=nodes[3].node_id)
    assert {h: n.node_id for h, n in got.items()} == {
        "a": nodes[0].node_id,
        "b": nodes[1].node_id,
        "c": nodes[2].node_id,
        "local": nodes[3].node_id,
    }


def test_resolve_label_wins_over_hostname_and_dead_nodes_never_match(tmp_path: Path) -> None:
    config = _fleet(
        tmp_path,
        {"a": {"label": "gpu-a", "hostname": "box2"}},
        [{"id": "m", **SIM, "host": "a"}],
    )
    dead, labelled, named = _node(1, "gpu-a", alive=False), _node(3, "gpu-a"), _node(2)
    got = resolve_hosts(config, [dead, named, labelled], driver_node_id=named.node_id)
    assert got["a"].node_id == labelled.node_id  # label first; the dead one is skipped
    got = resolve_hosts(config, [dead, named], driver_node_id=named.node_id)
    assert got["a"].node_id == named.node_id  # no alive label match: hostname


def test_resolve_no_match_lists_the_nodes(tmp_path: Path) -> None:
    config = _fleet(
        tmp_path,
        {"gpu-a": {"label": "gpu-a"}, "gpu-z": {"label": "gpu-z", "ip": "10.9.9.9"}},
        [{"id": "m", **SIM, "host": "gpu-a"}, {"id": "m", **SIM, "host": "gpu-z"}],
    )
    nodes = [_node(1), _node(2, "gpu-a"), _node(3, "gpu-z", alive=False)]
    with pytest.raises(ConfigError) as info:
        resolve_hosts(config, nodes, driver_node_id=nodes[0].node_id)
    assert str(info.value) == (
        "hosts.gpu-z: matches no alive Ray node (label=gpu-z, ip=10.9.9.9); nodes: "
        "01010101 10.0.0.1 box1; 02020202 10.0.0.2 box2 [gpu-a]"
    )


def test_resolve_local_needs_the_driver_node_alive(tmp_path: Path) -> None:
    config = _fleet(tmp_path, {}, [{"id": "m", **SIM}])
    nodes = [_node(1), _node(2, alive=False)]
    with pytest.raises(ConfigError) as info:
        resolve_hosts(config, nodes, driver_node_id=nodes[1].node_id)
    assert str(info.value) == (
        "hosts.local: matches no alive Ray node (node 02020202); nodes: 01010101 10.0.0.1 box1"
    )
