"""Shared fixtures: a minimal valid pack as data, and a writer for YAML files."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

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
