"""The matrix model × variant × prompt × repeat, expanded lazily per (host, model).

Cells are generated on demand so the driver's memory does not grow with the matrix. The set
of finished keys is a :class:`CellSet`: one bit per cell of the matrix (:class:`CellIndex`
numbers the cells in run order), so it stays a few kB at 100k cells; only keys outside the
matrix (an earlier run's other models or variants) are kept as strings.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Container, Iterable, Iterator, MutableSet
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Self

from touchstone_ray.config import FleetConfig, ModelSpec
from touchstone_ray.errors import UsageError
from touchstone_ray.fleet import TASK_NAMES_PER_MODEL, Cell
from touchstone_ray.pack import Pack
from touchstone_ray.records import cell_key


@dataclass(frozen=True)
class ModelPlan:
    """The cells of one model on one host."""

    label: str
    spec: ModelSpec
    host: str
    variants: tuple[str, ...]
    prompts: frozenset[str] | None = None
    """The prompt ids to run (``--limit`` / ``--prompts``, :func:`select_prompts`); ``None``:
    every prompt of the pack."""

    def selected(self, prompt_id: str) -> bool:
        """Whether this plan runs the prompt ``prompt_id``."""
        return self.prompts is None or prompt_id in self.prompts

    def cells(self, pack: Pack, skip: Container[str] = frozenset()) -> Iterator[Cell]:
        """Cells in run order (variant, then prompt, then repeat), leaving out ``skip`` keys
        (a :class:`CellSet` over this plan is tested by position, without a key lookup) and
        prompts not :meth:`selected` (their cells keep their positions)."""
        systems = {v.id: v.system_prompt for v in pack.prompt_variants}
        headroom = self.spec.reasoning_headroom_tokens
        name_prompt = len(self.variants) * len(pack.prompts()) <= TASK_NAMES_PER_MODEL
        bits = skip if isinstance(skip, CellSet) and skip.index.base(self) is not None else None
        position = 0 if bits is None else (bits.index.base(self) or 0)
        for variant in self.variants:
            for category, prompt in pack.all_prompts():
                for repeat in range(1, prompt.repeats + 1):
                    key = cell_key(self.label, variant, prompt.id, repeat)
                    if bits is not None:
                        position += 1
                        if bits.has_position(position - 1):
                            continue
                    elif key in skip:
                        continue
                    if not self.selected(prompt.id):
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
                        max_tokens=None
                        if prompt.max_tokens is None
                        else prompt.max_tokens + headroom,
                        name_prompt=name_prompt,
                        checks=prompt.checks,
                    )

    def n_cells(self, pack: Pack) -> int:
        """Cells of this model: variants × Σ repeats of the selected prompts."""
        return len(self.variants) * self.cells_per_variant(pack)

    def cells_per_variant(self, pack: Pack) -> int:
        """Σ repeats of the selected prompts (the pack's ``cells_per_variant`` for all)."""
        return sum(p.repeats for p in pack.prompts() if self.selected(p.id))


def select_prompts(
    pack: Pack, limit: int | None = None, prompt_ids: list[str] | None = None
) -> frozenset[str] | None:
    """The prompt ids of a quick try: the first ``limit`` prompts of each category (pack
    order), or the ``prompt_ids`` named; ``None`` when neither is given (every prompt).

    Raises :class:`UsageError` for a ``limit`` below 1, both given, or an unknown id."""
    if limit is not None and prompt_ids:
        raise UsageError("--limit and --prompts: give one of them, not both")
    if limit is not None:
        if limit < 1:
            raise UsageError(f"--limit: must be at least 1, got {limit}")
        return frozenset(p.id for c in pack.categories for p in c.prompts[:limit])
    if not prompt_ids:
        return None
    known = [p.id for p in pack.prompts()]
    for prompt_id in prompt_ids:
        if prompt_id not in known:
            raise UsageError(f"--prompts: unknown prompt {prompt_id!r}; the pack has {known}")
    return frozenset(prompt_ids)


def plan_models(
    pack: Pack,
    config: FleetConfig,
    models: list[str] | None = None,
    variants: list[str] | None = None,
    prompts: frozenset[str] | None = None,
) -> dict[str, list[ModelPlan]]:
    """Per host (first-use order), its models in config order.

    ``models`` filters by model id or label, ``variants`` by variant id (an unknown id raises
    :class:`UsageError` listing the known ones), ``prompts`` by prompt id
    (:func:`select_prompts`).
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
        plan = ModelPlan(
            label=label, spec=spec, host=spec.host_name, variants=chosen_variants, prompts=prompts
        )
        plans.setdefault(spec.host_name, []).append(plan)
    return plans


class CellIndex:
    """Numbers every cell of ``plans`` 0 … n-1 in run order (plan, then variant, prompt,
    repeat: the order of :meth:`ModelPlan.cells`), and maps a key to its number and back.

    ``position(key)`` parses ``model|variant|prompt_id|repeat`` from the right, so a model
    label may contain ``|``; a key that is not a cell of ``plans`` (another model or variant,
    a repeat the pack no longer has, a non-canonical repeat like ``01``) has no position.
    """

    def __init__(self, pack: Pack, plans: dict[str, list[ModelPlan]]) -> None:
        self._prompts: dict[str, tuple[int, int]] = {}
        offsets: list[int] = []
        self._prompt_ids: list[str] = []
        offset = 0
        for _, prompt in pack.all_prompts():
            self._prompts[prompt.id] = (offset, prompt.repeats)
            offsets.append(offset)
            self._prompt_ids.append(prompt.id)
            offset += prompt.repeats
        self._prompt_offsets = offsets
        self.per_variant = offset
        """Cells per variant (Σ repeats)."""
        self._bases: dict[str, int] = {}
        self._variants: dict[str, dict[str, int]] = {}
        self._labels: list[str] = []
        self._label_bases: list[int] = []
        n = 0
        for models in plans.values():
            for plan in models:
                if plan.label in self._bases:
                    continue
                self._bases[plan.label] = n
                self._variants[plan.label] = {v: i for i, v in enumerate(plan.variants)}
                self._labels.append(plan.label)
                self._label_bases.append(n)
                n += len(plan.variants) * self.per_variant
        self.n_cells = n
        """Cells of the whole matrix."""

    def same_cells(self, other: CellIndex) -> bool:
        """Whether ``other`` numbers the same cells the same way (e.g. a copy of this index
        that crossed a process boundary)."""
        return other is self or (
            other.n_cells == self.n_cells
            and other._bases == self._bases
            and other._variants == self._variants
            and other._prompts == self._prompts
        )

    def base(self, plan: ModelPlan) -> int | None:
        """Number of ``plan``'s first cell, or ``None`` if ``plan`` is not indexed as is."""
        variants = self._variants.get(plan.label)
        if variants is None or tuple(variants) != plan.variants:
            return None
        return self._bases[plan.label]

    def position(self, key: str) -> int | None:
        """The cell number of ``key``, or ``None`` when it is not a cell of the matrix."""
        rest, _, repeat_s = key.rpartition("|")
        rest, _, prompt_id = rest.rpartition("|")
        label, _, variant = rest.rpartition("|")
        variants = self._variants.get(label)
        prompt = self._prompts.get(prompt_id)
        if variants is None or prompt is None or variant not in variants:
            return None
        if not repeat_s.isascii() or not repeat_s.isdigit() or repeat_s.startswith("0"):
            return None
        repeat = int(repeat_s)
        offset, repeats = prompt
        if repeat > repeats:
            return None
        return self._bases[label] + variants[variant] * self.per_variant + offset + repeat - 1

    def key_at(self, position: int) -> str:
        """The key of cell number ``position`` (0 ≤ position < :attr:`n_cells`)."""
        i = bisect_right(self._label_bases, position) - 1
        label = self._labels[i]
        variant_pos, within = divmod(position - self._label_bases[i], self.per_variant)
        j = bisect_right(self._prompt_offsets, within) - 1
        variant = list(self._variants[label])[variant_pos]
        return cell_key(label, variant, self._prompt_ids[j], within - self._prompt_offsets[j] + 1)


class CellSet(MutableSet[str]):
    """A set of cell keys in one bit per cell of ``index`` (n/8 bytes, fixed when made);
    keys outside the matrix go to a plain ``set`` beside it. Iterates matrix keys in run
    order, then the others."""

    def __init__(self, index: CellIndex, keys: Iterable[str] = ()) -> None:
        self.index = index
        self._bits = bytearray((index.n_cells + 7) // 8)
        self._n = 0
        self._other: set[str] = set()
        for key in keys:
            self.add(key)

    def has_position(self, position: int) -> bool:
        """Whether cell number ``position`` is in the set."""
        return bool(self._bits[position >> 3] & (1 << (position & 7)))

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        position = self.index.position(key)
        return key in self._other if position is None else self.has_position(position)

    def __len__(self) -> int:
        return self._n + len(self._other)

    def __iter__(self) -> Iterator[str]:
        for position in range(self.index.n_cells):
            if self.has_position(position):
                yield self.index.key_at(position)
        yield from self._other

    def add(self, value: str) -> None:
        """Add ``value`` (a cell key)."""
        position = self.index.position(value)
        if position is None:
            self._other.add(value)
            return
        byte, bit = position >> 3, 1 << (position & 7)
        if not self._bits[byte] & bit:
            self._bits[byte] |= bit
            self._n += 1

    def __ior__(self, other: AbstractSet[str]) -> Self:  # type: ignore[override,misc]
        """Add every key of ``other``; a :class:`CellSet` over an equal index (another
        process's copy, a shard's own scan) is merged bit by bit, not key by key."""
        if isinstance(other, CellSet) and other.index.same_cells(self.index):
            merged = int.from_bytes(self._bits, "little") | int.from_bytes(other._bits, "little")
            self._bits = bytearray(merged.to_bytes(len(self._bits), "little"))
            self._n = merged.bit_count()
            self._other |= other._other
            return self
        for key in other:
            self.add(key)
        return self

    def discard(self, value: str) -> None:
        """Remove ``value`` if present."""
        position = self.index.position(value)
        if position is None:
            self._other.discard(value)
            return
        byte, bit = position >> 3, 1 << (position & 7)
        if self._bits[byte] & bit:
            self._bits[byte] &= ~bit
            self._n -= 1
