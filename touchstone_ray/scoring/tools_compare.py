"""Two tools bundles paired (``touchstone-ray tools-compare A B``, issue 27 item 7).

**Refused** (:class:`~touchstone_ray.errors.BundleError`, one line, exit 2): a folder that is
not a tools bundle; two bundles whose ``checks_fingerprint`` differ (their checks are not the
same, so a pass means something else on each side); two bundles without a model to pair.

**Models paired**: every model label present in both bundles, in A's order (the same model
run twice: another server, quantisation or day). When no label is in both and each bundle has
exactly one model, those two are paired (two models on the same items: A's against B's).

**Cells paired** by ``(item, repeat)``: a pair needs a scored cell on both sides (``ok`` and
``passed`` not null, :mod:`touchstone_ray.scoring.tools`); a cell scored on one side only is
counted as unpaired. Of the pairs, ``b`` = passed in A and failed in B, ``c`` = failed in A
and passed in B (the discordant pairs). McNemar's exact test: two-sided
``scipy.stats.binomtest(b, b + c, 0.5)`` p; ``1.0`` when ``b + c = 0`` (no evidence either
way). Beside it, over the paired cells, each side's median turns per cell and median
completion and reasoning tokens per cell (Σ over the cell's turns; tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from touchstone_ray.descriptive import median
from touchstone_ray.errors import BundleError
from touchstone_ray.scoring.tools import (
    ToolsBundleData,
    cell_completion_tokens,
    cell_reasoning_tokens,
    load_tools_bundle,
)
from touchstone_ray.tool_records import ToolsRecord

__all__ = [
    "BundleSide",
    "DiscordantPair",
    "ModelPair",
    "ToolsComparison",
    "compare_tools_bundles",
    "mcnemar_exact_p",
    "pair_models",
]


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)


class BundleSide(_Result):
    """One bundle of the comparison."""

    bundle: str
    """The bundle folder's name."""
    path: str
    """The bundle folder as given."""
    pack_id: str
    pack_version: int
    language: str
    checks_fingerprint: str
    models: list[str]
    """Its model labels."""


class DiscordantPair(_Result):
    """One ``(item, repeat)`` that passed on one side only."""

    item_id: str
    repeat: int
    a_passed: bool
    """Passed in A (then failed in B), else the other way round."""


class ModelPair(_Result):
    """One model of A against one of B over their paired cells (module docstring)."""

    model_a: str
    model_b: str
    n_pairs: int
    """Cells scored on both sides."""
    unpaired_a: int
    """A's scored cells without a scored cell in B."""
    unpaired_b: int
    """B's scored cells without a scored cell in A."""
    a_passed: int
    """Pairs passed in A."""
    b_passed: int
    """Pairs passed in B."""
    both_passed: int
    both_failed: int
    b: int
    """Discordant: passed in A, failed in B."""
    c: int
    """Discordant: failed in A, passed in B."""
    mcnemar_p: float
    """Two-sided exact McNemar p (module docstring)."""
    turns_median_a: float | None
    turns_median_b: float | None
    completion_tokens_median_a: float | None
    completion_tokens_median_b: float | None
    reasoning_tokens_median_a: float | None
    reasoning_tokens_median_b: float | None
    discordant: list[DiscordantPair]
    """The discordant pairs, in A's cell order."""


class ToolsComparison(_Result):
    """The whole comparison (``tools-compare.json``)."""

    schema_version: int = 1
    a: BundleSide
    b: BundleSide
    language: str
    """The packs' language when both agree, else ``en``."""
    pairs: list[ModelPair]


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p of ``b`` and ``c`` discordant pairs: the binomial test of
    ``b`` successes in ``b + c`` trials at 0.5 (``scipy.stats.binomtest``); ``1.0`` when
    ``b + c = 0``."""
    if b + c == 0:
        return 1.0
    from scipy.stats import binomtest  # type: ignore[import-untyped]  # lazy, ~0.6 s

    return float(binomtest(b, b + c, 0.5).pvalue)


def pair_models(a: Sequence[str], b: Sequence[str]) -> list[tuple[str, str]]:
    """The model pairs (module docstring): the labels in both, in ``a``'s order; else the one
    model of each; ``[]`` when neither applies."""
    shared = [(m, m) for m in a if m in set(b)]
    if shared:
        return shared
    if len(a) == 1 and len(b) == 1:
        return [(a[0], b[0])]
    return []


def _scored(records: Sequence[ToolsRecord], model: str) -> dict[tuple[str, int], ToolsRecord]:
    return {
        (r.item_id, r.repeat): r
        for r in records
        if r.model == model and r.ok and r.passed is not None
    }


def _median(values: list[float | None]) -> float | None:
    found = median(values)
    return None if found is None else float(found)


def _pair(a: ToolsBundleData, b: ToolsBundleData, model_a: str, model_b: str) -> ModelPair:
    side_a, side_b = _scored(a.records, model_a), _scored(b.records, model_b)
    keys = [k for k in side_a if k in side_b]
    ra, rb = [side_a[k] for k in keys], [side_b[k] for k in keys]
    disc = [
        DiscordantPair(item_id=k[0], repeat=k[1], a_passed=bool(x.passed))
        for k, x, y in zip(keys, ra, rb, strict=True)
        if x.passed != y.passed
    ]
    n_b = sum(1 for d in disc if d.a_passed)
    n_c = len(disc) - n_b
    both = sum(1 for x, y in zip(ra, rb, strict=True) if x.passed and y.passed)
    return ModelPair(
        model_a=model_a,
        model_b=model_b,
        n_pairs=len(keys),
        unpaired_a=len(side_a) - len(keys),
        unpaired_b=len(side_b) - len(keys),
        a_passed=sum(1 for x in ra if x.passed),
        b_passed=sum(1 for y in rb if y.passed),
        both_passed=both,
        both_failed=len(keys) - both - len(disc),
        b=n_b,
        c=n_c,
        mcnemar_p=mcnemar_exact_p(n_b, n_c),
        turns_median_a=_median([len(x.turns) for x in ra]),
        turns_median_b=_median([len(y.turns) for y in rb]),
        completion_tokens_median_a=_median([cell_completion_tokens(x) for x in ra]),
        completion_tokens_median_b=_median([cell_completion_tokens(y) for y in rb]),
        reasoning_tokens_median_a=_median([cell_reasoning_tokens(x) for x in ra]),
        reasoning_tokens_median_b=_median([cell_reasoning_tokens(y) for y in rb]),
        discordant=disc,
    )


def _side(data: ToolsBundleData, given: Path) -> BundleSide:
    return BundleSide(
        bundle=data.root.name,
        path=str(given),
        pack_id=data.pack.id,
        pack_version=data.pack.version,
        language=data.lang,
        checks_fingerprint=data.checks_fingerprint,
        models=data.models(),
    )


def compare_tools_bundles(a: Path, b: Path) -> ToolsComparison:
    """Pair the tools bundles ``a`` and ``b`` (module docstring). Raises :class:`BundleError`
    (one line) for a bundle that is not a tools bundle, checks that differ, or no model to
    pair."""
    data_a, data_b = load_tools_bundle(Path(a)), load_tools_bundle(Path(b))
    fa, fb = data_a.checks_fingerprint, data_b.checks_fingerprint
    if fa != fb:
        raise BundleError(
            f"tools-compare: the checks differ ({data_a.root.name}: checks_fingerprint "
            f"{fa[:12]}, {data_b.root.name}: {fb[:12]}); only bundles of the same checks pair"
        )
    models_a, models_b = data_a.models(), data_b.models()
    pairs = pair_models(models_a, models_b)
    if not pairs:
        raise BundleError(
            f"tools-compare: no model is in both bundles ({data_a.root.name}: "
            f"{', '.join(models_a) or 'none'}; {data_b.root.name}: "
            f"{', '.join(models_b) or 'none'})"
        )
    return ToolsComparison(
        a=_side(data_a, Path(a)),
        b=_side(data_b, Path(b)),
        language=data_a.lang if data_a.lang == data_b.lang else "en",
        pairs=[_pair(data_a, data_b, ma, mb) for ma, mb in pairs],
    )
