"""Helpers for the eval tests: a real multi-node Ray cluster, tiny packs and configs on disk,
shard readers and the simulator's own counters.

A Ray-using module asks for the suite's ``rc`` fixture (``tests/conftest.py``): one
:class:`RayCluster` for the module, with a worker per host label in its ``RAY_HOSTS``. Nothing
here mocks Ray, HTTP or files.
"""

from __future__ import annotations

import copy
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import yaml

from touchstone_ray.eval.run import EvalOptions, EvalOutcome, run_eval
from touchstone_ray.fleet.probe import WARMUP_PROMPT
from touchstone_ray.sim._text import request_key

REPO = Path(__file__).resolve().parents[2]
BUERO_PACK = REPO / "packs" / "buero.yaml"
SIM_FLEET = REPO / "tests" / "eval" / "sim_fleet.yaml"

VARIANTS = [{"id": "baseline", "system_prompt": "Sei hilfreich."}, {"id": "none"}]


def tiny_pack(n_prompts: int = 4, pack_id: str = "tiny") -> dict[str, Any]:
    """A valid pack with ``n_prompts`` prompts (repeats 1) and 2 variants.

    Every prompt text is distinct and repeats are 1, so each cell maps to exactly one
    simulator request key (the simulator keys requests by (model, messages)).
    """
    assert n_prompts >= 2
    a_prompts = [
        {"id": f"A{i}", "title": "t", "prompt": f"Frage Nummer {i}: was ist zu tun?"}
        for i in range(1, n_prompts)
    ]
    return {
        "id": pack_id,
        "title": "Tiny",
        "scale": {1: "eins", 2: "zwei", 3: "drei", 4: "vier", 5: "fünf"},
        "dimensions": [
            {"id": "Q1", "name": "Korrektheit", "weight": 3},
            {"id": "Q6", "name": "Sicherheit", "weight": 3},
        ],
        "ko_rule": {"dimension": "Q6", "red_flag_prompts": ["E1"]},
        "prompt_variants": copy.deepcopy(VARIANTS),
        "categories": [
            {"id": "A", "name": "Alpha", "prompts": a_prompts},
            {
                "id": "E",
                "name": "Querschnitt",
                "prompts": [
                    {"id": "E1", "title": "t", "prompt": "Notfall!", "safety_critical": True}
                ],
            },
        ],
    }


def write_yaml(path: Path, data: Any) -> Path:
    """Write ``data`` as YAML to ``path`` and return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def quick_fleet(path: Path, models: list[dict[str, Any]]) -> Path:
    """A fleet config of ``models`` at ``path`` for a quick local run: no dashboard, no
    warm-up, one attempt per cell, host samples every 0.2 s, no GPU sampling."""
    return write_yaml(
        path,
        {
            "ray": {"include_dashboard": False},
            "models": models,
            "scheduling": {"warmup": False, "max_attempts": 1},
            "monitor": {"interval_s": 0.2, "gpu": "off"},
        },
    )


def all_keys(pack: dict[str, Any], models: list[str]) -> set[str]:
    """Every cell key of ``pack`` for ``models`` (all variants)."""
    return {
        f"{m}|{v['id']}|{p['id']}|{r}"
        for m in models
        for v in pack["prompt_variants"]
        for c in pack["categories"]
        for p in c["prompts"]
        for r in range(1, int(p.get("repeats", 1)) + 1)
    }


def sim_keys(pack: dict[str, Any], model_id: str, label: str | None = None) -> dict[str, str]:
    """Simulator request key (sha256 of model + messages) → cell key, for a repeats-1 pack."""
    label = label or model_id
    out: dict[str, str] = {}
    for v in pack["prompt_variants"]:
        for c in pack["categories"]:
            for p in c["prompts"]:
                assert int(p.get("repeats", 1)) == 1
                messages = []
                if v.get("system_prompt") is not None:
                    messages.append({"role": "system", "content": v["system_prompt"]})
                messages.append({"role": "user", "content": p["prompt"]})
                out[request_key(model_id, messages)] = f"{label}|{v['id']}|{p['id']}|1"
    return out


def warmup_key(model_id: str) -> str:
    """The simulator request key of the driver's warm-up request."""
    return request_key(model_id, [{"role": "user", "content": WARMUP_PROMPT}])


def sim_stats(base_url: str) -> dict[str, Any]:
    """``GET /sim/stats`` of a simulator (``base_url`` without ``/v1``)."""
    data: dict[str, Any] = httpx.get(f"{base_url}/sim/stats", timeout=10).json()
    return data


def shard_lines(bundle: Path) -> list[dict[str, Any]]:
    """Every line of every response shard, parsed strictly (a bad line fails the test)."""
    out: list[dict[str, Any]] = []
    for shard in sorted((bundle / "responses").glob("*.jsonl")):
        text = shard.read_text(encoding="utf-8")
        assert text == "" or text.endswith("\n"), f"{shard}: torn last line"
        out.extend(json.loads(line) for line in text.splitlines() if line.strip())
    return out


def count_lines(path: Path) -> int:
    """Complete lines in ``path`` (0 when missing)."""
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Relative path → (bytes, mtime_ns) of every file below ``root``."""
    out: dict[str, tuple[bytes, int]] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            out[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mtime_ns)
    return out


def run(
    pack: Path,
    config: Path,
    out: Path | None = None,
    resume: Path | None = None,
    **kw: Any,
) -> tuple[EvalOutcome, str]:
    """``run_eval`` in this process (it reuses the test's Ray connection); returns the
    outcome and what it printed."""
    buf = io.StringIO()
    outcome = run_eval(EvalOptions(pack=pack, config=config, out=out, resume=resume, **kw), buf)
    return outcome, buf.getvalue()


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m touchstone_ray.cli ARGS`` in a subprocess with this process's env."""
    return subprocess.run(
        [sys.executable, "-m", "touchstone_ray.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(os.environ),
        cwd=REPO,
    )
