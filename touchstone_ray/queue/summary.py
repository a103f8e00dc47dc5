"""The morning summary: ``summary.md`` and ``summary.html`` in the queue's folder, rewritten
after each entry ends: every entry's state, duration, bundle and report, the failures with their
reasons, what is still pending, and one ``compare`` table across the entries' bundles."""

from __future__ import annotations

import time
from pathlib import Path

from touchstone_ray.doc import (
    NONE,
    Bullets,
    Callout,
    Code,
    Document,
    Heading,
    Para,
    Table,
    cell,
    num_cell,
    render_html,
    render_markdown,
)
from touchstone_ray.errors import TouchstoneError, one_line
from touchstone_ray.lang import labels
from touchstone_ray.queue.spec import QueueSpec
from touchstone_ray.queue.state import EntryState, entries_text
from touchstone_ray.report.compare import compare_cells, compare_head, compare_rows
from touchstone_ray.storage import atomic_write_text

__all__ = ["write_summary"]


def _relative(path: Path, folder: Path) -> str:
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return str(path)


def summary_document(spec: QueueSpec, states: dict[str, EntryState]) -> Document:
    """The summary as a document (English; entries in file order)."""
    assert spec.out is not None
    folder = spec.out
    doc = Document(title="touchstone queue", lang="en", frontmatter={"queue": str(folder)})
    doc.blocks.append(Heading(1, "touchstone queue"))
    got = [states.get(e.name, EntryState(e.name)) for e in spec.entries]
    counts: dict[str, int] = {}
    for state in got:
        counts[state.state] = counts.get(state.state, 0) + 1
    tally = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    doc.blocks.append(
        Para((f"{entries_text(len(got))}: {tally}; written {time.strftime('%Y-%m-%d %H:%M:%S')}",))
    )
    rows = []
    for entry, state in zip(spec.entries, got, strict=True):
        bundle = Path(state.bundle) if state.bundle else None
        report = bundle / "report.html" if bundle else None
        rows.append(
            (
                cell(Code(entry.name)),
                cell(entry.kind),
                cell(state.state),
                num_cell(
                    NONE if state.duration_s is None else f"{state.duration_s:.0f} s",
                    state.duration_s,
                ),
                cell(", ".join(state.stages) or NONE),
                cell(Code(_relative(bundle, folder)) if bundle else NONE),
                cell(Code(_relative(report, folder)) if report and report.is_file() else NONE),
            )
        )
    doc.blocks.append(
        Table(("entry", "kind", "state", "duration", "stages", "bundle", "report"), tuple(rows))
    )
    failed = [s for s in got if s.state in ("failed", "stalled", "skipped")]
    if failed:
        doc.blocks.append(Heading(2, "Failures"))
        doc.blocks.append(
            Bullets(tuple((Code(s.name), f" {s.state}: {s.reason or NONE}") for s in failed))
        )
    pending = [s.name for s in got if s.state in ("pending", "running")]
    if pending:
        doc.blocks.append(Heading(2, "Still to run"))
        doc.blocks.append(Bullets(tuple((Code(name),) for name in pending)))
    bundles = [Path(s.bundle) for s in got if s.bundle and Path(s.bundle, "bundle.json").is_file()]
    if bundles:
        doc.blocks.append(Heading(2, "Compare"))
        try:
            compared, lang = compare_rows(bundles)
        except TouchstoneError as exc:
            doc.blocks.append(
                Callout("warning", "compare", text=one_line(str(exc)), collapsed=False)
            )
        else:
            t = labels(lang)
            users = any(r.users_at_slo is not None for r in compared)
            table_rows = tuple(tuple(cell(c) for c in compare_cells(r, t, users)) for r in compared)
            doc.blocks.append(Table(tuple(compare_head(t, users)), table_rows, sortable=True))
    return doc


def write_summary(spec: QueueSpec, states: dict[str, EntryState]) -> Path:
    """Write ``summary.md`` and ``summary.html`` into the queue's folder; returns the ``.md``."""
    assert spec.out is not None
    doc = summary_document(spec, states)
    spec.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(spec.out / "summary.html", render_html(doc))
    path = spec.out / "summary.md"
    atomic_write_text(path, render_markdown(doc))
    return path
