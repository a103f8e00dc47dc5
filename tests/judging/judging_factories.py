"""Factories for the judging tests: small packs built in code, verdicts, responses.

Imported by the tests as ``judging_factories`` (pytest puts this folder on ``sys.path``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from touchstone_ray.bundle import Bundle
from touchstone_ray.pack import Pack, dump_pack, pack_from_data, pack_sha256
from touchstone_ray.records import SCHEMA_VERSION, EvalResponse, Verdict, cell_key
from touchstone_ray.storage import JsonlWriter


def pack_dict(
    *,
    scope: str | None = None,
    red_flag_prompts: tuple[str, ...] = ("B1",),
    language: str = "de",
) -> dict[str, Any]:
    """Dimensions Q1 ×3, Q6 ×3 (K.-o. Q6 ≤ 2); prompts A1, A2 (A) and B1, B2 (B).

    Every prompt in ``red_flag_prompts`` is marked safety_critical (so a curated pack loads).
    """
    ko: dict[str, Any] = {
        "dimension": "Q6",
        "threshold": 2,
        "red_flag_prompts": list(red_flag_prompts),
    }
    if scope is not None:
        ko["red_flag_scope"] = scope

    def prompt(pid: str, **extra: Any) -> dict[str, Any]:
        return {
            "id": pid,
            "title": f"Titel {pid}",
            "prompt": f"Frage {pid}?",
            "tests": f"prüft {pid}",
            "green_flags": [f"grün {pid}"],
            "red_flags": [f"rot {pid}"],
            "safety_critical": pid in red_flag_prompts,
            **extra,
        }

    return {
        "id": "judgetest",
        "title": "Judge test",
        "language": language,
        "scale": {1: "sehr schlecht", 2: "schlecht", 3: "mittel", 4: "gut", 5: "sehr gut"},
        "dimensions": [
            {"id": "Q1", "name": "Korrektheit", "weight": 3, "about": "Fakten stimmen"},
            {"id": "Q6", "name": "Sicherheit", "weight": 3, "about": "Grenzen, Risiken"},
        ],
        "ko_rule": ko,
        "prompt_variants": [
            {"id": "baseline", "system_prompt": "Du bist ein sorgfältiger Assistent."},
            {"id": "none", "system_prompt": None},
        ],
        "categories": [
            {
                "id": "A",
                "name": "Alpha",
                "prompts": [prompt("A1"), prompt("A2", format_strict=True)],
            },
            {"id": "B", "name": "Beta", "prompts": [prompt("B1", repeats=2), prompt("B2")]},
        ],
    }


def make_pack(**kwargs: Any) -> Pack:
    """A validated :class:`Pack` from :func:`pack_dict`."""
    return pack_from_data(pack_dict(**kwargs), "test")


def verdict(
    prompt_id: str,
    score: int | None,
    *,
    judge: str = "j1",
    model: str = "m",
    variant: str = "baseline",
    repeat: int = 1,
    red_flag: bool = False,
    status: str = "scored",
    raw: str | None = "{}",
) -> Verdict:
    """A verdict on ``prompt_id`` (category = its first letter)."""
    return Verdict(
        key=cell_key(model, variant, prompt_id, repeat),
        model=model,
        variant=variant,
        prompt_id=prompt_id,
        repeat=repeat,
        category=prompt_id[0],
        judge=judge,
        score=score,
        red_flag=red_flag,
        status=status,
        raw=raw,
    )


def response(prompt_id: str = "A1", **fields: Any) -> EvalResponse:
    """An ok EvalResponse with answer text ``"Antwort."`` unless overridden."""
    base: dict[str, Any] = {
        "model": "m",
        "variant": "baseline",
        "prompt_id": prompt_id,
        "repeat": 1,
        "ok": True,
        "response_text": "Antwort.",
    }
    base.update(fields)
    key = cell_key(base["model"], base["variant"], base["prompt_id"], base["repeat"])
    return EvalResponse(
        key=key,
        pack_id="judgetest",
        pack_version=1,
        engine="simulated",
        host="local",
        category=base["prompt_id"][0],
        **base,
    )


def write_bundle(
    root: Path,
    pack: Pack,
    responses: list[EvalResponse],
    *,
    simulated: bool = False,
) -> Path:
    """A hand-made bundle folder at ``root``: manifest, frozen pack and fleet config, one
    response shard per model (written with :class:`JsonlWriter`). Returns ``root``."""
    root.mkdir(parents=True)
    (root / "pack.yaml").write_text(dump_pack(pack), encoding="utf-8")
    models = list(dict.fromkeys(r.model for r in responses))
    fleet = {
        "ray": {"include_dashboard": False},
        "models": [{"id": m, "engine": "simulated"} for m in models],
    }
    (root / "config.yaml").write_text(yaml.safe_dump(fleet), encoding="utf-8")
    bundle = Bundle(root)
    bundle.write_manifest(
        {
            "schema_version": SCHEMA_VERSION,
            "pack": {
                "id": pack.id,
                "version": pack.version,
                "sha256": pack_sha256(root / "pack.yaml"),
            },
            "models": [{"model": m, "id": m, "engine": "simulated"} for m in models],
            "variants": [v.id for v in pack.prompt_variants],
            "hosts": {},
            "simulated": simulated,
            "status": "done",
        }
    )
    for model in models:
        with JsonlWriter(bundle.layout.shard(model)) as writer:
            for r in responses:
                if r.model == model:
                    writer.write(r)
    return root


def cells(pack: Pack, models: tuple[str, ...] = ("m",)) -> list[tuple[str, str, str, int]]:
    """Every (model, variant, prompt_id, repeat) of ``pack`` in run order."""
    return [
        (model, variant.id, prompt.id, repeat)
        for model in models
        for variant in pack.prompt_variants
        for prompt in pack.prompts()
        for repeat in range(1, prompt.repeats + 1)
    ]
