"""report.html: parses, loads nothing from outside, has the ranking, charts and escaped text."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from report_factories import MODELS, VARIANTS


class _Scan(HTMLParser):
    """Collects tags, attributes, ids, links and the ranking table's rows."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str]] = []
        self.ids: set[str] = set()
        self.in_ranking = False
        self.in_body = False
        self.in_cell = False
        self.rows: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            self.attrs.append((tag, name, value or ""))
            if name == "id" and value:
                self.ids.add(value)
        if tag == "table" and ("id", "ranking") in attrs:
            self.in_ranking = True
        if self.in_ranking and tag == "tbody":
            self.in_body = True
        if self.in_body and tag == "tr":
            self.rows.append([])
        if self.in_body and tag == "td":
            self.in_cell = True
            self.rows[-1].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self.in_cell = False
        if tag == "table":
            self.in_ranking = self.in_body = False

    def handle_data(self, data: str) -> None:
        if self.in_cell:
            self.rows[-1][-1] += data


def _scan(path: Path) -> tuple[str, _Scan]:
    text = path.read_text(encoding="utf-8")
    scan = _Scan()
    scan.feed(text)
    scan.close()
    return text, scan


def test_html_loads_nothing_from_outside(judged_bundle: Path) -> None:
    text, scan = _scan(judged_bundle / "report.html")
    for tag, name, value in scan.attrs:
        if name in ("src", "href", "xlink:href", "action", "data", "poster"):
            assert not re.match(r"\s*(https?:)?//", value), (tag, name, value)
    assert not re.search(r"url\(\s*['\"]?\s*(https?:)?//", text)
    assert not re.search(r"@import", text)
    assert "<link" not in text and "<iframe" not in text
    assert "default-src 'none'" in text, "the CSP that forbids outside loads is missing"
    assert scan.tags.count("script") == 1, "only the inline sort script"
    assert not any(name == "src" for _, name, _ in scan.attrs)


def test_ranking_has_a_row_per_model_and_variant(judged_bundle: Path) -> None:
    _, scan = _scan(judged_bundle / "report.html")
    found = {(row[1].strip(), row[2].strip()) for row in scan.rows}
    assert found == {(m, v) for m, _ in MODELS for v in VARIANTS}
    assert len(scan.rows) == len(MODELS) * len(VARIANTS)
    assert [row[0] for row in scan.rows] == ["1", "2", "3", "4"]


def test_html_has_charts_toc_and_resolving_anchors(judged_bundle: Path) -> None:
    text, scan = _scan(judged_bundle / "report.html")
    assert text.count("<svg") >= 5
    assert 'class="toc"' in text
    links = [v for _, n, v in scan.attrs if n == "href" and v.startswith("#")]
    assert links
    missing = {link[1:] for link in links} - scan.ids
    assert not missing, missing
    assert 'class="sortable"' in text


def test_model_text_is_escaped(judged_bundle: Path) -> None:
    text, scan = _scan(judged_bundle / "report.html")
    assert "<script>alert(1)</script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&gt; [!note] gefälschter Callout" in text
    assert "<b>fett</b>" not in text and "&lt;b&gt;fett&lt;/b&gt;" in text
    assert "<i>ok</i>" not in text and "&lt;i&gt;ok&lt;/i&gt;" in text
    assert "i" not in scan.tags and "b" not in scan.tags


def test_html_is_deterministic(judged_bundle: Path, tmp_path: Path) -> None:
    from report_factories import make_bundle

    from touchstone_ray.report import write_report

    other = make_bundle(tmp_path)
    write_report(other, "html")
    assert (other / "report.html").read_bytes() == (judged_bundle / "report.html").read_bytes()


def test_the_html_writer_gives_heads_the_tooltip_it_is_asked_for() -> None:
    from touchstone_ray.doc import HtmlWriter, Table, cell

    table = Table(("Model", 'TTFT "p50"'), ((cell("m"), cell("0.1")),))
    tips = {'TTFT "p50"': "TTFT: first token <s>"}
    assert HtmlWriter(tips.get).table(table).split("<tbody>")[0] == (
        '<div class="scroll"><table><thead><tr><th scope="col">Model</th>'
        '<th scope="col" title="TTFT: first token &lt;s&gt;">TTFT &quot;p50&quot;</th>'
        "</tr></thead>"
    )
    assert 'title="' not in HtmlWriter().table(table)
