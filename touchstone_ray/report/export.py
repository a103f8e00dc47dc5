"""``touchstone-ray export``: flat tables of a bundle's responses and verdicts.

Writes ``export/responses.<ext>`` (one row per cell, the SPEC §7 EvalResponse fields in
contract order, de-duplicated by key) and ``export/verdicts.<ext>`` (one row per judge and
cell, the Verdict fields plus ``judge_model`` and ``template_version``; every judge stored
under ``judgements/``, the last record per key as the judge store keeps it).

Formats: ``jsonl`` (native JSON values), ``csv`` (lists and mappings as JSON text, ``None``
as an empty field, booleans ``true``/``false``), ``parquet`` (pyarrow, typed columns; lists
and mappings as JSON text). Units are those of the records: seconds, MB, tokens/s.
"""

from __future__ import annotations

import csv
import importlib
import json
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from touchstone_ray.bundle import Bundle, JudgeFiles, judge_ids
from touchstone_ray.errors import UsageError
from touchstone_ray.records import EvalResponse, Verdict
from touchstone_ray.storage import atomic_write_text

__all__ = ["EXPORT_FORMATS", "export_bundle", "response_rows", "verdict_rows"]

ExportFormat = Literal["csv", "parquet", "jsonl"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("csv", "parquet", "jsonl")
"""Formats ``--format`` accepts."""
VERDICT_EXTRAS = ("judge_model", "template_version")
"""Stored beside each verdict by the judge store; exported when present."""


def response_rows(bundle: Bundle) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and rows of every valid response record (bundle order)."""
    rows = []
    for record in bundle.responses():
        try:
            rows.append(EvalResponse.model_validate(record).model_dump(mode="json"))
        except ValidationError:
            continue
    return EvalResponse.on_disk_fields(), rows


def verdict_rows(bundle: Bundle) -> tuple[list[str], list[dict[str, Any]]]:
    """Columns and rows of every judge's verdicts (judges sorted, records in file order)."""
    rows = []
    for judge in judge_ids(bundle.layout):
        for stored in JudgeFiles(bundle.layout, judge).verdicts().values():
            row = stored.contract().model_dump(mode="json")
            stored_keys = stored.model_fields_set  # absent ones export as null
            row.update(
                {k: getattr(stored, k) if k in stored_keys else None for k in VERDICT_EXTRAS}
            )
            rows.append(row)
    return [*Verdict.model_fields, *VERDICT_EXTRAS], rows


def _text(value: Any) -> Any:
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value


def _write_jsonl(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    lines = [json.dumps({c: r.get(c) for c in columns}, ensure_ascii=False) + "\n" for r in rows]
    atomic_write_text(path, "".join(lines))


def _csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(_text(value))


def _write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        for r in rows:
            writer.writerow([_csv_value(r.get(c)) for c in columns])
    tmp.replace(path)


def _arrow_type(annotation: Any) -> str:
    """``bool`` | ``int`` | ``float`` | ``str`` (JSON text for lists and mappings)."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _arrow_type(args[0])
    if annotation is bool:
        return "bool"
    if annotation is int:
        return "int"
    if annotation is float:
        return "float"
    return "str"


def _pyarrow() -> tuple[Any, Any]:
    """``(pyarrow, pyarrow.parquet)``, imported on demand (an optional dependency)."""
    try:
        return importlib.import_module("pyarrow"), importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise UsageError(
            "parquet export needs pyarrow: pip install pyarrow (or use --format csv|jsonl)"
        ) from None


def _write_parquet(
    path: Path, model: type[BaseModel], columns: list[str], rows: list[dict[str, Any]]
) -> None:
    pa, pq = _pyarrow()
    kinds = {name: _arrow_type(field.annotation) for name, field in model.model_fields.items()}
    types_ = {"bool": pa.bool_(), "int": pa.int64(), "float": pa.float64(), "str": pa.string()}
    schema = pa.schema([(c, types_[kinds.get(c, "str")]) for c in columns])
    data: dict[str, list[Any]] = {}
    for c in columns:
        values = [r.get(c) for r in rows]
        if kinds.get(c, "str") == "str":
            values = [None if v is None else str(_text(v)) for v in values]
        data[c] = values
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(pa.table(data, schema=schema), tmp)
    tmp.replace(path)


def export_bundle(root: Path, fmt: str) -> list[Path]:
    """Write ``export/responses.<fmt>`` and ``export/verdicts.<fmt>``; returns both paths.

    Raises :class:`~touchstone_ray.errors.BundleError` for a missing or invalid bundle and
    :class:`~touchstone_ray.errors.UsageError` for an unknown format or a parquet export
    without pyarrow (both exit 2).
    """
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"--format: unknown {fmt!r}; expected one of {', '.join(EXPORT_FORMATS)}")
    bundle = Bundle.open(Path(root))
    out = bundle.layout.export_dir
    tables: Sequence[tuple[str, type[BaseModel], tuple[list[str], list[dict[str, Any]]]]] = (
        ("responses", EvalResponse, response_rows(bundle)),
        ("verdicts", Verdict, verdict_rows(bundle)),
    )
    if fmt == "parquet":
        _pyarrow()
    out.mkdir(exist_ok=True)
    written = []
    for name, model, (columns, rows) in tables:
        path = out / f"{name}.{fmt}"
        if fmt == "jsonl":
            _write_jsonl(path, columns, rows)
        elif fmt == "csv":
            _write_csv(path, columns, rows)
        else:
            _write_parquet(path, model, columns, rows)
        written.append(path)
    return written
