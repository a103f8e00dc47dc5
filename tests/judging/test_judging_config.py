"""The judge config: judge.example.yaml loads; every bad value is one ConfigError line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from touchstone_ray.errors import ConfigError
from touchstone_ray.judging.config import load_judge_config

EXAMPLE = Path(__file__).resolve().parents[2] / "judge.example.yaml"


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "judge.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def judge(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "j1",
        "engine": "openai",
        "base_url": "http://127.0.0.1:8000/v1/",
        "model": "Qwen/Qwen3-32B",
    }
    base.update(fields)
    return base


def error(tmp_path: Path, data: Any) -> str:
    path = write(tmp_path, data)
    with pytest.raises(ConfigError) as exc:
        load_judge_config(path)
    message = str(exc.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    return message.removeprefix(f"{path}: ")


def test_example_loads() -> None:
    config = load_judge_config(EXAMPLE)
    first = config.judges[0]
    assert (first.id, first.engine, first.concurrency, first.timeout_s) == (
        "qwen3-32b",
        "openai",
        4,
        300.0,
    )
    assert config.aggregate.red_flag_vote == "majority"


def test_defaults_and_simulated_without_base_url(tmp_path: Path) -> None:
    data = {
        "judges": [
            judge(),
            {
                "id": "sim",
                "engine": "simulated",
                "model": "s",
                "sim": {"ttft_ms": 5, "fail_rate": 0.1},
            },
        ]
    }
    config = load_judge_config(write(tmp_path, data))
    j1, sim = config.judges
    assert j1.base_url == "http://127.0.0.1:8000/v1"  # trailing slash dropped
    assert (j1.temperature, j1.suppress_thinking, j1.max_consecutive_failures) == (0.0, True, 3)
    assert sim.base_url is None and sim.sim is not None and sim.sim.ttft_ms == 5
    assert config.judge("sim") is sim


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"judges": [judge(temprature=0.1)]}, "judges[0].temprature: unknown key (got 0.1)"),
        ({"judges": [judge(engine="tgi")]}, "judges[0].engine: Input should be 'openai', "),
        ({"judges": [judge(base_url=None)]}, "judges[0].base_url: required for engine openai"),
        (
            {"judges": [judge(base_url="localhost:8000")]},
            "judges[0].base_url: base_url must be an http(s) URL",
        ),
        ({"judges": [judge(), judge()]}, "judges[1].id: duplicate judge id, first at judges[0]"),
        ({"judges": [judge(id="a/b")]}, "judges[0].id: String should match pattern"),
        ({"judges": [judge(concurrency=0)]}, "judges[0].concurrency: Input should be greater"),
        ({"judges": []}, "judges: Tuple should have at least 1 item"),
        ({"judges": [judge(sim={"tps": 5})]}, "judges[0].sim: only for engine simulated"),
        (
            {"judges": [judge(engine="simulated", base_url=None, sim={"ttft": 5})]},
            "judges[0].sim.ttft: unknown key (got 5)",
        ),
        (
            {"judges": [judge()], "aggregate": {"red_flag_vote": "all"}},
            "aggregate.red_flag_vote: Input should be 'any' or 'majority' (got 'all')",
        ),
        ({"judge": [judge()]}, "judges: required key is missing"),
    ],
)
def test_bad_config_is_one_line(tmp_path: Path, data: Any, expected: str) -> None:
    assert error(tmp_path, data).startswith(expected)


def test_unset_env_var_is_named_and_a_set_one_never_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOUCHSTONE_TEST_JUDGE_KEY", raising=False)
    data = {"judges": [judge(api_key_env="TOUCHSTONE_TEST_JUDGE_KEY")]}
    assert error(tmp_path, data) == (
        "judges[0].api_key_env: environment variable TOUCHSTONE_TEST_JUDGE_KEY is not set"
    )
    monkeypatch.setenv("TOUCHSTONE_TEST_JUDGE_KEY", "s3cret-value")
    config = load_judge_config(write(tmp_path, data))
    assert "s3cret-value" not in repr(config)


def test_not_a_mapping_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "judge.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="judge config must be a YAML mapping, got a list"):
        load_judge_config(path)
    with pytest.raises(ConfigError, match="no such judge config file"):
        load_judge_config(tmp_path / "nope.yaml")
