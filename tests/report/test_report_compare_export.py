"""``compare`` across bundles, ``export`` round trips, and one-line usage errors (exit 2)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from report_factories import make_bundle, responses

from touchstone_ray.cli import main


def test_compare_two_bundles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judged = make_bundle(tmp_path / "a")
    plain = make_bundle(tmp_path / "b", name="2026-01-03_030000_eval_mini", judged=False)
    out = tmp_path / "cmp"
    assert main(["compare", str(judged), str(plain), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "NVIDIA H200 (140 GB)" in printed and "keine GPU" in printed
    md = (out / "compare.md").read_text(encoding="utf-8")
    assert md.count("| 2026-01-02_030000_eval_mini |") == 4
    assert md.count("| 2026-01-03_030000_eval_mini |") == 4
    with open(out / "compare.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 8
    first = rows[0]
    assert (first["model"], first["variant"], first["quality_pct"]) == ("m-fast", "none", "85.0")
    assert first["ko_passed"] == "true"
    unjudged = [r for r in rows if r["bundle"].startswith("2026-01-03")]
    assert all(r["quality_pct"] == "" and r["ko_passed"] == "" for r in unjudged)
    assert all(r["ttft_p50_s"] != "" for r in unjudged), "speed comes from the responses"


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_round_trip_counts(fresh_bundle: Path, fmt: str) -> None:
    assert main(["export", "--bundle", str(fresh_bundle), "--format", fmt]) == 0
    folder = fresh_bundle / "export"
    n_responses = len(responses())
    for name, expected in (("responses", n_responses), ("verdicts", 2 * n_responses)):
        path = folder / f"{name}.{fmt}"
        if fmt == "csv":
            with open(path, encoding="utf-8", newline="") as fh:
                rows = list(csv.DictReader(fh))
        else:
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert len(rows) == expected, name
        assert len({r["key"] if name == "responses" else (r["judge"], r["key"]) for r in rows}) == (
            expected
        )
    text = (folder / f"responses.{fmt}").read_text(encoding="utf-8")
    assert "alert(1)</script>" in text, "export keeps the raw answer text"


def test_export_parquet(fresh_bundle: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    assert main(["export", "--bundle", str(fresh_bundle), "--format", "parquet"]) == 0
    table = pq.read_table(fresh_bundle / "export" / "responses.parquet")
    assert table.num_rows == len(responses())
    assert str(table.schema.field("ttft_s").type) == "double"
    assert str(table.schema.field("ok").type) == "bool"
    assert pq.read_table(fresh_bundle / "export" / "verdicts.parquet").num_rows == 24


def test_parquet_without_pyarrow_says_how_to_install(
    fresh_bundle: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib

    real = importlib.import_module

    def no_pyarrow(name: str, package: str | None = None) -> object:
        if name.startswith("pyarrow"):
            raise ImportError(name)
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", no_pyarrow)
    assert main(["export", "--bundle", str(fresh_bundle), "--format", "parquet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install pyarrow" in err
    assert not (fresh_bundle / "export").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "--bundle", "{missing}"],
        ["report", "--bundle", "{bad}"],
        ["report", "--bundle", "{ok}", "--format", "pdf"],
        ["export", "--bundle", "{missing}", "--format", "csv"],
        ["export", "--bundle", "{ok}", "--format", "xlsx"],
        ["compare", "{ok}", "{missing}"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    ok = make_bundle(tmp_path)
    bad = tmp_path / "bad"
    shutil.copytree(ok, bad)
    (bad / "bundle.json").write_text("{not json", encoding="utf-8")
    paths = {"missing": str(tmp_path / "nope"), "bad": str(bad), "ok": str(ok)}
    assert main([a.format(**paths) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
