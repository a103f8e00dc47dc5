"""The matrix: the compact set of finished cells (one bit per cell) and bounded task names.
No Ray here; real packs and configs (resume's background scan: test_eval_resume_scan.py)."""

from __future__ import annotations

from pathlib import Path

from eval_helpers import tiny_pack, write_yaml

from touchstone_ray.config import FleetConfig
from touchstone_ray.eval.matrix import CellIndex, CellSet, plan_models
from touchstone_ray.fleet import TASK_NAMES_PER_MODEL
from touchstone_ray.pack import Pack, load_pack


def _matrix(tmp_path: Path) -> tuple[Pack, FleetConfig]:
    data = tiny_pack(4)
    data["categories"][0]["prompts"][1]["repeats"] = 3  # A2 × 3: offsets are not all 1 apart
    pack = load_pack(write_yaml(tmp_path / "pack.yaml", data))
    config = FleetConfig.model_validate(
        {
            "hosts": {"a": {"label": "a"}, "b": {"label": "b"}},
            "models": [
                {"id": "m|1", "engine": "simulated", "host": "a"},
                {"id": "m2", "engine": "simulated", "host": "b"},
            ],
        }
    )
    return pack, config


def test_index_numbers_cells_in_run_order_and_back(tmp_path: Path) -> None:
    pack, config = _matrix(tmp_path)
    plans = plan_models(pack, config)
    index = CellIndex(pack, plans)
    keys = [c.key for ms in plans.values() for p in ms for c in p.cells(pack)]
    assert index.n_cells == len(keys) == 2 * plans["a"][0].n_cells(pack) == 2 * 2 * 6
    assert index.position("m2|" + keys[0].split("|", 2)[2].replace("A1", "A2")[:-1] + "3") == (
        12 + 3  # m2's base, then A1 × 1, A2 repeat 3
    )
    assert [index.position(k) for k in keys] == list(range(len(keys)))
    assert [index.key_at(i) for i in range(len(keys))] == keys
    assert keys[0].startswith("m|1|")  # a label with "|" still parses from the right
    # not cells of this matrix: another model, a repeat too many, a non-canonical repeat
    first = keys[0].rsplit("|", 1)[0]
    assert index.position("gone|" + keys[0].split("|", 2)[2]) is None
    assert index.position(first + "|99") is None
    assert index.position(first + "|01") is None
    assert index.position(first + "|0") is None
    assert index.position("no bars") is None


def test_cell_set_is_a_set_of_keys_in_n_over_8_bytes(tmp_path: Path) -> None:
    pack, config = _matrix(tmp_path)
    plans = plan_models(pack, config)
    index = CellIndex(pack, plans)
    keys = [c.key for ms in plans.values() for p in ms for c in p.cells(pack)]
    done = CellSet(index, [keys[3], keys[0], keys[3], "other|v|X|1"])
    assert len(done) == 3 and done == {keys[0], keys[3], "other|v|X|1"}
    assert list(done) == [keys[0], keys[3], "other|v|X|1"]  # run order, then the others
    assert keys[3] in done and keys[1] not in done and 5 not in done
    done.discard(keys[3])
    done.discard(keys[3])
    done.discard("other|v|X|1")
    assert set(done) == {keys[0]} and len(done) == 1
    assert len(done._bits) == (index.n_cells + 7) // 8
    # a plan skips by position and leaves out exactly the keys in the set
    done.add(keys[-1])
    left = [c.key for ms in plans.values() for p in ms for c in p.cells(pack, done)]
    assert left == keys[1:-1]


def test_task_names_name_the_prompt_while_they_stay_few(tmp_path: Path) -> None:
    pack, config = _matrix(tmp_path)
    plan = plan_models(pack, config)["b"][0]
    names = {c.task_name for c in plan.cells(pack)}
    assert len(names) == 2 * 4 and "eval:m2:baseline:A2" in names  # 2 variants × 4 prompts
    data = tiny_pack(TASK_NAMES_PER_MODEL // 2 + 1)  # 2 × 129 = 258 names: too many
    big = load_pack(write_yaml(tmp_path / "big.yaml", data))
    plan = plan_models(big, config)["b"][0]
    assert {c.task_name for c in plan.cells(big)} == {"eval:m2:baseline", "eval:m2:none"}
