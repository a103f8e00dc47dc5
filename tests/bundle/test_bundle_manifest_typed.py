"""The manifest's parts are typed (hosts, models, points, settings …) and still write back the
bytes they were read from: unknown keys and key order kept, at every level."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from touchstone_ray.bundle import (
    Bundle,
    Footprint,
    HostFacts,
    HostGpu,
    Manifest,
    TemplateCheck,
    WarmupProbe,
    edit_manifest,
    read_manifest,
    write_manifest,
)
from touchstone_ray.errors import BundleError

# an eval manifest as an older version wrote it: plain GPU names, an int ram_gb, keys this
# version does not know (top level, per host, per model) and its own key order everywhere
OLDER: dict[str, Any] = {
    "schema_version": 1,
    "pack": {"id": "mini", "version": 2, "sha256": "ab" * 32, "source": "packs/mini.yaml"},
    "models": [
        {"model": "m1", "engine": "ollama", "base_url": "http://a:11434", "host": "gpu-a",
         "concurrency": 2, "timeout_s": 600, "id": "qwen3:8b", "future_knob": [1, "x"]},
        {"model": "sim", "engine": "simulated", "base_url": None, "id": "sim"},
    ],
    "variants": ["baseline", "none"],
    "hosts": {
        "gpu-a": {"hostname": "a.lan", "node_id": "n" * 56, "ip": None, "cpu": "Ryzen",
                  "cpu_count": 16, "ram_gb": 64, "gpus": ["RTX 4090"], "os": "Linux",
                  "python": "3.11.7", "client_pid": 4242,
                  "engines": {"http://a:11434": {"pid": 77, "found_by": "port", "reason": None}},
                  "touchstone_footprint": {"host": "gpu-a", "rss_mb": {"4242": 180.5},
                                           "total_rss_mb": 180.5, "monitor_pid": 9}},
        "gpu-b": {"gpus": [{"index": 0, "name": "NVIDIA H200", "mem_total_mb": 144384.0}],
                  "monitoring_lost_at": 1700000050, "monitoring_lost_reason": "node died"},
    },
    "sampling": {"temperature": 0.2, "seed": 7},
    "ray": {"version": "2.40.0", "address": None, "dashboard_url": "http://127.0.0.1:8265"},
    "touchstone_version": "0.9.0",
    "simulated": True,
    "started_at": 1700000000,
    "finished_at": 1700000100.25,
    "status": "done",
    "servers": {"m1": {"engine_kind": None, "server_facts": {"n_ctx": 4096}, "more": 1}},
    "renamed_later": {"kept": True},
}  # fmt: skip


def _write(path: Path, data: dict[str, Any]) -> bytes:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    return text.encode()


def test_an_older_manifest_reads_typed_and_writes_back_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "bundle.json"
    before = _write(path, OLDER)
    m = read_manifest(path)
    assert m.pack is not None and m.pack.sha256 == "ab" * 32
    assert m.model_labels() == ["m1", "sim"] and m.model_concurrency() == {"m1": 2}
    a, b = m.hosts["gpu-a"], m.hosts["gpu-b"]
    assert (a.cpu_count, a.ram_gb, a.ip, a.gpu_labels()) == (16, 64, None, ["RTX 4090"])
    assert isinstance(a.ram_gb, int)
    assert a.engines is not None and a.engines["http://a:11434"].found_by == "port"
    assert a.touchstone_footprint is not None and a.touchstone_footprint.total_rss_mb == 180.5
    assert b.gpu_labels() == ["NVIDIA H200 (141 GB)"] and b.gpu_names() == ["NVIDIA H200"]
    assert b.monitoring_lost_reason == "node died" and b.cpu_count is None
    assert m.ray is not None and m.ray.dashboard_url == "http://127.0.0.1:8265"
    assert m.run_started_at() == 1700000000.0
    assert m.servers is not None and m.servers["m1"].server_facts == {"n_ctx": 4096}
    assert (m.servers["m1"].template, m.servers["m1"].warmup) == (None, None)
    assert m.to_dict() == OLDER
    assert list(m.to_dict()["hosts"]["gpu-a"]) == list(OLDER["hosts"]["gpu-a"])
    assert list(m.to_dict()["models"][0]) == list(OLDER["models"][0])
    write_manifest(path, m)
    assert path.read_bytes() == before


def test_a_new_host_keeps_the_order_its_facts_were_set_in(tmp_path: Path) -> None:
    path = tmp_path / "bundle.json"
    _write(path, {"status": "running", "hosts": {}})
    facts = {"node_id": "n1", "hostname": "c.lan", "gpus": [], "python": "3.11", "cpu_count": 4}
    with edit_manifest(path) as m:
        m.host("gpu-c").update(facts)
        m.host("gpu-c").capabilities = {"gpu": {"supported": False, "reason": "no NVML"}}
    with edit_manifest(path) as m:
        m.host("gpu-c").stopped_reason = "preflight failed (1 problems): x"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert list(data["hosts"]["gpu-c"]) == [*facts, "capabilities", "stopped_reason"]
    assert read_manifest(path).hosts["gpu-c"].cpu_count == 4


def test_a_server_entry_keeps_its_template_check_and_warmup_probe_typed(tmp_path: Path) -> None:
    path = tmp_path / "bundle.json"
    _write(path, {"status": "running", "servers": {"old": {"engine_kind": "vllm"}}})
    check = TemplateCheck(source="/props", families=["Gemma"], unknown_markers=[], fix=None)
    with edit_manifest(path) as m:
        m.server("new").update({"engine_kind": "llamacpp", "template": check})
    with edit_manifest(path) as m:
        m.server("new").warmup = WarmupProbe(flags=["template_leak"], example="x<|im_end|>")
        m.server("new").stopped_reason = "warm-up answer shows template_leak"
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["servers"] == {
        "old": {"engine_kind": "vllm"},
        "new": {
            "engine_kind": "llamacpp",
            "template": {
                "source": "/props",
                "families": ["Gemma"],
                "unknown_markers": [],
                "fix": None,
            },
            "warmup": {"flags": ["template_leak"], "example": "x<|im_end|>"},
            "stopped_reason": "warm-up answer shows template_leak",
        },
    }
    server = (read_manifest(path).servers or {})["new"]
    assert server.template is not None and server.template.families == ["Gemma"]
    assert server.warmup is not None and server.warmup.flags == ["template_leak"]


def test_a_gpu_without_a_name_key_shows_gpu_and_a_null_name_reads_none() -> None:
    gpus = [HostGpu.model_validate({"mem_total_mb": 8192}), HostGpu.model_validate({"name": None})]
    assert [g.label for g in gpus] == ["GPU (8 GB)", "None"]
    assert HostFacts().gpu_labels() == []


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"hosts": {"gpu-a": {"cpu_count": "many"}}},
         "hosts.gpu-a.cpu_count: Input should be a valid integer, unable to parse string as an "
         "integer"),
        ({"models": [{"id": "m1"}]}, "models.0.model: Field required"),
        ({"models": ["m1"]}, "models.0: Input should be a valid dictionary or instance of "
         "ModelEntry"),
        ({"points": [{"model": "m", "host": "h", "context": "512", "concurrency": 1}]},
         "points.0.runs: Field required"),
        ({"settings": {"contexts": "1024"}}, "settings.contexts: Input should be a valid list"),
    ],
)  # fmt: skip
def test_a_malformed_manifest_is_one_line_naming_the_file_and_the_field(
    tmp_path: Path, data: dict[str, Any], message: str
) -> None:
    path = tmp_path / "bundle.json"
    _write(path, data)
    with pytest.raises(BundleError) as err:
        read_manifest(path)
    assert str(err.value) == f"{path}: {message}"


def test_a_wrong_type_set_in_an_edit_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "bundle.json"
    before = _write(path, OLDER)
    with pytest.raises(BundleError) as err, edit_manifest(path) as m:
        m.host("gpu-a").update({"cpu_count": "sixteen"})
    assert str(err.value) == (
        f"{path}: hosts.gpu-a.cpu_count: Input should be a valid integer, unable to parse "
        "string as an integer"
    )
    assert path.read_bytes() == before


def test_the_eval_bundle_reader_returns_the_typed_manifest(tmp_path: Path) -> None:
    _write(tmp_path / "bundle.json", OLDER)
    manifest = Bundle.open(tmp_path).manifest()
    assert isinstance(manifest, Manifest) and manifest.variants == ["baseline", "none"]
    assert Bundle(tmp_path).pack_sha256() == "ab" * 32


def test_facts_set_as_mappings_are_written_and_read_back_typed(tmp_path: Path) -> None:
    path = tmp_path / "bundle.json"
    _write(path, {"status": "running", "hosts": {}})
    engines = {"http://a:1": {"pid": 7, "found_by": "port", "reason": None}}
    gpus = [{"index": 0, "name": "NVIDIA H200", "mem_total_mb": 144384.0}]
    with edit_manifest(path) as m:  # as the monitors' answers arrive: plain mappings
        m.host("a").update({"gpus": gpus})
        m.host("a").engines = engines  # type: ignore[assignment]
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["hosts"] == {"a": {"gpus": gpus, "engines": engines}}
    facts = read_manifest(path).hosts["a"]
    assert facts.gpu_labels() == ["NVIDIA H200 (141 GB)"]
    assert facts.engines is not None and facts.engines["http://a:1"].pid == 7


def test_the_footprint_carries_the_harness_cpu_typed() -> None:
    fp = Footprint.model_validate(
        {
            "host": "a",
            "monitor_pid": 9,
            "rss_mb": {"9": 90.0, "4242": None},
            "total_rss_mb": 90.0,
            "cpu_s": {"9": 0.5, "4242": None},
            "ray_cpu_s": {"100": 1.25, "101": 0.25},
            "total_cpu_s": 2.0,
            "span_s": 40.0,
            "cpu_pct_mean": 5.0,
        }
    )
    assert fp.cpu_s == {"9": 0.5, "4242": None} and fp.ray_cpu_s == {"100": 1.25, "101": 0.25}
    assert (fp.total_cpu_s, fp.span_s, fp.cpu_pct_mean) == (2.0, 40.0, 5.0)
    assert Footprint.model_validate({"rss_mb": {}}).cpu_pct_mean is None  # an older bundle
