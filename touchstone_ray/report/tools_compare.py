"""``touchstone-ray tools-compare A B [--out DIR]``: two tools bundles paired, as a table.

The figures come from :func:`~touchstone_ray.scoring.tools_compare.compare_tools_bundles`
(pairing, discordant counts, exact McNemar p, per-side medians; its refusals are one line
and exit 2). One row per model pair: the models, pairs, passed in A and in B, ``b`` (A only)
and ``c`` (B only), McNemar p, unpaired cells, and the medians per cell of turns, completion
and reasoning tokens as ``A / B``. The labels speak the packs' language when both agree.

Printed as an aligned table, like ``compare``; with ``--out`` also written into that folder
as ``tools-compare.md`` (the table, the discordant pairs and the method) and
``tools-compare.json`` (:class:`~touchstone_ray.scoring.tools_compare.ToolsComparison`). The
names differ from ``compare``'s ``compare.md`` so both can share one folder.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from touchstone_ray.doc.fmt import num
from touchstone_ray.lang import tools_labels
from touchstone_ray.scoring.tools_compare import ModelPair, ToolsComparison, compare_tools_bundles
from touchstone_ray.storage import atomic_write_text

__all__ = [
    "JSON_NAME",
    "MD_NAME",
    "compare_head",
    "pair_cells",
    "render_tools_compare",
    "tools_compare",
]

MD_NAME = "tools-compare.md"
"""The Markdown file ``--out`` gets."""
JSON_NAME = "tools-compare.json"
"""The JSON file ``--out`` gets."""


def _p(value: float) -> str:
    return f"{value:.4g}"


def _ab(a: float | None, b: float | None) -> str:
    return f"{num(a, 1)} / {num(b, 1)}"


def compare_head(t: dict[str, str]) -> list[str]:
    """The table's column titles (labels ``t`` of :func:`~touchstone_ray.lang.tools_labels`)."""
    return [
        f"{t['model']} {t['side_a']}",
        f"{t['model']} {t['side_b']}",
        t["pairs"],
        t["a_passed"],
        t["b_passed"],
        t["only_a"],
        t["only_b"],
        t["mcnemar"],
        t["unpaired"],
        t["turns_ab"],
        t["tokens_ab"],
        t["reasoning_ab"],
    ]


def pair_cells(p: ModelPair) -> list[str]:
    """The table's cells of one model pair, in :func:`compare_head` order."""
    return [
        p.model_a,
        p.model_b,
        str(p.n_pairs),
        str(p.a_passed),
        str(p.b_passed),
        str(p.b),
        str(p.c),
        _p(p.mcnemar_p),
        f"{p.unpaired_a} / {p.unpaired_b}",
        _ab(p.turns_median_a, p.turns_median_b),
        _ab(p.completion_tokens_median_a, p.completion_tokens_median_b),
        _ab(p.reasoning_tokens_median_a, p.reasoning_tokens_median_b),
    ]


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def render_tools_compare(cmp: ToolsComparison) -> tuple[str, str]:
    """The comparison as (terminal text, Markdown)."""
    t = tools_labels(cmp.language)
    head = compare_head(t)
    body = [pair_cells(p) for p in cmp.pairs]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    sides = [
        f"{t[f'side_{k}']}: {s.bundle} ({s.pack_id} v{s.pack_version})"
        for k, s in (("a", cmp.a), ("b", cmp.b))
    ]
    text = "\n".join([*sides, "", line(head), line(["-" * w for w in widths]), *map(line, body)])
    parts = [f"# {t['compare_title']}", ""]
    parts += [f"- {s}" for s in sides]
    parts += [f"- {t['checks_fingerprint']}: `{cmp.a.checks_fingerprint[:12]}`", ""]
    parts += [_md_row(head), _md_row(["---"] * len(head)), *(_md_row(r) for r in body), ""]
    parts += [f"## {t['discordant']}", ""]
    for p in cmp.pairs:
        parts.append(f"### {p.model_a} · {p.model_b}")
        parts.append("")
        if not p.discordant:
            parts += [t["no_discordant"], ""]
            continue
        for d in p.discordant:
            a, b = ("✓", "✗") if d.a_passed else ("✗", "✓")
            parts.append(f"- `{d.item_id}` #{d.repeat}: {t['side_a']} {a} · {t['side_b']} {b}")
        parts.append("")
    parts += [f"## {t['method']}", "", t["compare_method"]]
    return text, "\n".join(parts) + "\n"


def tools_compare(a: Path, b: Path, out: Path | None = None) -> tuple[str, list[Path]]:
    """Compare the tools bundles ``a`` and ``b``; returns the printable table and, with
    ``out``, the written ``tools-compare.md`` and ``tools-compare.json``. Raises
    :class:`~touchstone_ray.errors.BundleError` (one line) as
    :func:`~touchstone_ray.scoring.tools_compare.compare_tools_bundles` does."""
    cmp = compare_tools_bundles(Path(a), Path(b))
    text, markdown = render_tools_compare(cmp)
    written: list[Path] = []
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        data = json.dumps(cmp.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
        for name, content in ((MD_NAME, markdown), (JSON_NAME, data)):
            atomic_write_text(out / name, content)
            written.append(out / name)
    return text, written
