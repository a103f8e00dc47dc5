"""Shared fixtures: a minimal valid pack as data, a writer for YAML files, the suite's Ray
(``ray_local``, ``rc``), the tiers (``real`` and ``ui`` by folder) and the check that the
run leaves no process behind."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from procs import RunProcesses, describe, kill_all, tag_run
from ray_env import LocalRay, RayCluster, local_ray, ray_cluster

TESTS = Path(__file__).resolve().parent
FOLDER_MARKS = {"real": "real", "ui": "ui"}
"""Folder under tests/ → the marker every test in it gets (pyproject.toml registers them)."""
RUN = pytest.StashKey[RunProcesses]()

MINIMAL_PACK: dict[str, Any] = {
    "id": "mini",
    "title": "Mini",
    "scale": {1: "eins", 2: "zwei", 3: "drei", 4: "vier", 5: "fünf"},
    "dimensions": [
        {"id": "Q1", "name": "Korrektheit", "weight": 3},
        {"id": "Q6", "name": "Sicherheit", "weight": 3},
    ],
    "ko_rule": {"dimension": "Q6", "red_flag_prompts": ["E1"]},
    "prompt_variants": [{"id": "baseline", "system_prompt": "Sei hilfreich."}, {"id": "none"}],
    "categories": [
        {
            "id": "A",
            "name": "Alpha",
            "prompts": [
                {"id": "A1", "title": "t", "prompt": "Hallo?"},
                {"id": "A2", "title": "t", "prompt": "Wie geht's?", "repeats": 3},
            ],
        },
        {
            "id": "E",
            "name": "Querschnitt",
            "prompts": [
                {"id": "E1", "title": "t", "prompt": "Notfall", "safety_critical": True},
            ],
        },
    ],
}


@pytest.fixture
def pack_data() -> dict[str, Any]:
    """A fresh deep copy of a minimal valid pack (3 prompts, 5 cells/variant, max 30)."""
    return copy.deepcopy(MINIMAL_PACK)


@pytest.fixture
def write_yaml(tmp_path: Path) -> Callable[[Any, str], Path]:
    """Write data as YAML into tmp_path/name and return the path."""

    def _write(data: Any, name: str = "pack.yaml") -> Path:
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
        return path

    return _write


def pytest_configure(config: pytest.Config) -> None:
    config.stash[RUN] = RunProcesses(tag_run())


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = item.path.resolve()
        if path.is_relative_to(TESTS) and (
            mark := FOLDER_MARKS.get(path.relative_to(TESTS).parts[0])
        ):
            item.add_marker(mark)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    item.config.stash[RUN].note_descendants()  # a child orphaned later is still the run's


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind(pytestconfig: pytest.Config) -> Iterator[None]:
    """Fail the run if a process it started (a descendant of pytest, or anything carrying
    the run's tag: Ray workers, jobs, ``ray start`` nodes) is still running once the tests
    ended and their fixtures stopped; those are killed after the report."""
    yield
    left = pytestconfig.stash[RUN].left_behind()
    if left:
        lines = describe(left)
        kill_all(left)
        pytest.fail(
            "processes the tests started still ran after the last test (now killed):\n  "
            + "\n  ".join(lines),
            pytrace=False,
        )


@pytest.fixture(scope="module")
def ray_local(request: pytest.FixtureRequest) -> Iterator[LocalRay]:
    """One local Ray per test module that asks for it (``RAY_CPUS`` in the module, default 2);
    see ``ray_env.local_ray``."""
    with local_ray(getattr(request.module, "RAY_CPUS", 2)) as ray:
        yield ray


@pytest.fixture(scope="module")
def rc(request: pytest.FixtureRequest) -> Iterator[RayCluster]:
    """One Ray cluster per test module that asks for it: a head and a worker per host label in
    the module's ``RAY_HOSTS`` (default none); see ``ray_env.ray_cluster``."""
    with ray_cluster(list(getattr(request.module, "RAY_HOSTS", ()))) as handle:
        yield handle
