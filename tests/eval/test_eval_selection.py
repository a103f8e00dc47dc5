"""``eval --limit N`` / ``--prompts ids``: a quick try runs only the selected prompts' cells,
the bundle records the selection, and ``--resume`` with a wider one adds the missing cells.
Bad selections are one line, exit 2, before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_helpers import cli, run, shard_lines, tiny_pack, write_yaml
from ray_env import RayCluster

from touchstone_ray.errors import UsageError
from touchstone_ray.eval.matrix import select_prompts
from touchstone_ray.pack import pack_from_data

FAST = {"ttft_ms": 1, "tps": 4000, "answer_tokens": 8}
PACK = tiny_pack(4)  # A1, A2, A3 in category A, E1 in E; variants baseline and none


def _config(tmp: Path) -> Path:
    return write_yaml(
        tmp / "fleet.yaml",
        {
            "ray": {"include_dashboard": False},
            "models": [{"id": "m", "engine": "simulated", "concurrency": 2, "sim": FAST}],
            "scheduling": {"warmup": False},
            "monitor": {"interval_s": 0.2, "gpu": "off"},
        },
    )


def test_select_prompts_takes_the_first_n_of_each_category_or_the_named() -> None:
    pack = pack_from_data(PACK, "tiny.yaml")
    assert select_prompts(pack) is None
    assert select_prompts(pack, limit=1) == {"A1", "E1"}
    assert select_prompts(pack, limit=2) == {"A1", "A2", "E1"}
    assert select_prompts(pack, limit=99) == {"A1", "A2", "A3", "E1"}
    assert select_prompts(pack, prompt_ids=["A3"]) == {"A3"}


@pytest.mark.parametrize(
    ("limit", "ids", "line"),
    [
        (0, None, "--limit: must be at least 1, got 0"),
        (-2, None, "--limit: must be at least 1, got -2"),
        (1, ["A1"], "--limit and --prompts: give one of them, not both"),
        (None, ["Z9"], "--prompts: unknown prompt 'Z9'; the pack has ['A1', 'A2', 'A3', 'E1']"),
    ],
)
def test_a_bad_selection_names_what_is_wrong(
    limit: int | None, ids: list[str] | None, line: str
) -> None:
    with pytest.raises(UsageError) as caught:
        select_prompts(pack_from_data(PACK, "tiny.yaml"), limit, ids)
    assert str(caught.value) == line


def test_dry_run_counts_only_the_selected_cells(tmp_path: Path) -> None:
    pack = write_yaml(tmp_path / "pack.yaml", PACK)
    outcome, printed = run(pack, _config(tmp_path), dry_run=True, limit=1)
    assert outcome.bundle is None
    assert printed.splitlines() == [
        "host local:",
        "  1. m (simulated, concurrency 2): 4 cells = 2 variants × 2 cells/variant",
        "4 cells on 1 host",
    ]
    pack = write_yaml(tmp_path / "de.yaml", {**PACK, "language": "de"})
    _, printed = run(pack, _config(tmp_path), dry_run=True, prompts=["A1"])
    assert printed.splitlines() == [
        "Host local:",
        "  1. m (simulated, Parallelität 2): 2 Zellen = 2 Varianten × 1 Zellen/Variante",
        "2 Zellen auf 1 Host",
    ]


@pytest.mark.slow
def test_a_limited_run_then_a_wider_resume_adds_the_missing_cells(
    rc: RayCluster, tmp_path: Path
) -> None:
    pack = write_yaml(tmp_path / "pack.yaml", PACK)
    config = _config(tmp_path)
    outcome, printed = run(pack, config, out=tmp_path / "runs", limit=1)
    assert outcome.exit_code == 0 and outcome.bundle is not None, printed
    bundle = outcome.bundle
    keys = sorted(r["key"] for r in shard_lines(bundle))
    assert keys == [f"m|{v}|{p}|1" for v in ("baseline", "none") for p in ("A1", "E1")]
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert (manifest["selection"], manifest["status"]) == ({"limit": 1}, "done")
    resumed, printed = run(pack, config, resume=bundle, prompts=["A1", "A3"])
    assert (resumed.n_reused, resumed.n_ok, resumed.exit_code) == (4, 2, 0), printed
    assert "4 reused, 2 to run" in printed
    added = {r["key"] for r in shard_lines(bundle)} - set(keys)
    assert added == {"m|baseline|A3|1", "m|none|A3|1"}
    manifest = json.loads((bundle / "bundle.json").read_text())
    assert manifest["selection"] == {"prompts": ["A1", "A3"]}
    whole, _ = run(pack, config, resume=bundle)  # no selection: the whole pack
    assert (whole.n_reused, whole.n_ok) == (6, 2)
    assert json.loads((bundle / "bundle.json").read_text())["selection"] is None


def test_the_cli_refuses_a_bad_limit_before_writing(tmp_path: Path) -> None:
    pack = write_yaml(tmp_path / "pack.yaml", PACK)
    out = tmp_path / "runs"
    done = cli("eval", "--pack", str(pack), "--config", str(_config(tmp_path)),
               "--out", str(out), "--limit", "0")  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["error: --limit: must be at least 1, got 0"]
    assert not out.exists()
