"""The matrix model × variant × prompt × repeat, expanded lazily per (host, model).

Cells are generated on demand so the driver's memory does not grow with the matrix; only the
set of finished keys is held.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from touchstone_ray.config import FleetConfig, ModelSpec
from touchstone_ray.errors import UsageError
from touchstone_ray.pack import Pack
from touchstone_ray.records import cell_key


@dataclass(frozen=True)
class Cell:
    """One request of the matrix, as sent to a host's client actor."""

    key: str
    model: str
    """Model label (the id, or ``id@host`` when an id is served by several hosts)."""
    variant: str
    system_prompt: str | None
    category: str
    prompt_id: str
    prompt: str
    repeat: int
    max_tokens: int | None

    @property
    def task_name(self) -> str:
        """Readable Ray task name: ``eval:qwen3:8b:baseline:B3``.

        Without the repeat: Ray keeps a metric series per task name in the driver for the
        whole run, so names must stay bounded by the pack, not grow with the cells
        (``bench/bench_eval_memory.py``: +10 MB per 1k cells with one name per cell).
        """
        return f"eval:{self.model}:{self.variant}:{self.prompt_id}"


@dataclass(frozen=True)
class ModelPlan:
    """The cells of one model on one host."""

    label: str
    spec: ModelSpec
    host: str
    variants: tuple[str, ...]

    def cells(self, pack: Pack, skip: frozenset[str] | set[str] = frozenset()) -> Iterator[Cell]:
        """Cells in run order (variant, then prompt, then repeat), leaving out ``skip`` keys."""
        systems = {v.id: v.system_prompt for v in pack.prompt_variants}
        for variant in self.variants:
            for category, prompt in pack.all_prompts():
                for repeat in range(1, prompt.repeats + 1):
                    key = cell_key(self.label, variant, prompt.id, repeat)
                    if key in skip:
                        continue
                    yield Cell(
                        key=key,
                        model=self.label,
                        variant=variant,
                        system_prompt=systems[variant],
                        category=category.id,
                        prompt_id=prompt.id,
                        prompt=prompt.prompt,
                        repeat=repeat,
                        max_tokens=prompt.max_tokens,
                    )

    def n_cells(self, pack: Pack) -> int:
        """Cells of this model: variants × Σ repeats."""
        return len(self.variants) * pack.cells_per_variant


def plan_models(
    pack: Pack,
    config: FleetConfig,
    models: list[str] | None = None,
    variants: list[str] | None = None,
) -> dict[str, list[ModelPlan]]:
    """Per host (first-use order), its models in config order.

    ``models`` filters by model id or label, ``variants`` by variant id; an unknown id raises
    :class:`UsageError` listing the known ones.
    """
    known_variants = [v.id for v in pack.prompt_variants]
    chosen_variants = tuple(variants or known_variants)
    for v in chosen_variants:
        if v not in known_variants:
            raise UsageError(f"--variants: unknown variant {v!r}; the pack has {known_variants}")
    labels = {config.model_label(m): m for m in config.models}
    if models:
        for name in models:
            if name not in labels and not any(m.id == name for m in labels.values()):
                raise UsageError(f"--models: unknown model {name!r}; the config has {list(labels)}")
    plans: dict[str, list[ModelPlan]] = {}
    for label, spec in labels.items():
        if models and label not in models and spec.id not in models:
            continue
        plan = ModelPlan(label=label, spec=spec, host=spec.host_name, variants=chosen_variants)
        plans.setdefault(spec.host_name, []).append(plan)
    return plans
