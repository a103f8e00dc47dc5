"""Issue 31 items 4 and 5 in the headless Chromium: every column head that names a figure
carries the glossary's definition and unit as its tooltip, on every page; a page speaks one
language (a German pack's bundle German throughout, the rest ``ui --lang``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from ui_helpers import CRASHED, JUDGED, OTHER, PERF, UiServer, packs_folder, ui_server

from touchstone_ray import lang
from touchstone_ray.lang import de, en

COMPARE = f"/compare?row={quote(f'{JUDGED}|m-fast|none')}&row={quote(f'{OTHER}|m-slow|none')}"
PAGES = (
    "/",
    f"/run/{JUDGED}",
    f"/run/{OTHER}",
    f"/run/{CRASHED}",
    f"/run/{PERF}",
    f"/live/{CRASHED}",
    COMPARE,
    "/judges",
    "/packs",
    "/packs/buero.yaml",
    "/trash",
    "/queue",
)
"""Every page of the session's site (the jobs pages are left out: they start a Ray head)."""

NOT_FIGURES = {
    "de": {
        "#", "A", "B", "Begriff", "Beschreibung", "Definition", "Dimension", "Einheit",
        "Einstellungen", "Engine", "Gewicht", "Host", "Judge", "Judge-Modell", "Modell",
        "Punkte (1–5)", "Schlüssel", "Variante", "Warnungen", "Zeile", "Begründung",
        "K.-o. Boden Q1 ≤ 2 (ja/nein)", "K.-o. Red-Flag-Zweig (ja/nein)", "Red-Flag-Prompts",
        "zitierte Prompts", "ID", "Name", "Kategorie", "Titel", "Prompt", "Flags", "Bundle",
        "Art", "Status", "Modelle × Varianten", "Hosts", "Datum", "Judges", "Pack",
        "Qualifikation", "Datei", "Prüfung", "verschoben", "Host / GPUs", "touchstone",
        "Holistische Vorlage",
    },
    "en": {
        "bundle", "date", "hosts", "kind", "models × variants", "status", "judges", "pack",
        "judge", "qualification", "file", "check", "moved", "host / GPUs", "model", "variant",
        "engine", "touchstone", "host", "context", "n", "prompt tokens", "line",
        "Holistic template",
    },
}  # fmt: skip
"""Column heads that name no figure (identities, texts, settings), per page language; any
other head must carry a glossary tooltip."""
HOSTS = {"gpu-a", "local"}
"""Host names: the hardware table's column heads."""


def tips(page_lang: str) -> set[str]:
    """Every tooltip the glossary can give in ``page_lang``."""
    return {lang.metric_tip(page_lang, term) for term, _, _ in en.GLOSSARY}


def test_every_figure_head_on_every_page_carries_its_glossary_tooltip(
    site: UiServer, page: Any
) -> None:
    seen = 0
    for path in PAGES:
        response = page.goto(site.url + path)
        assert response is not None and response.status == 200, path
        page_lang = page.locator("html").get_attribute("lang")
        heads = page.locator("th").evaluate_all(
            "els => els.map(e => [e.textContent, e.getAttribute('title')])"
        )
        allowed = tips(page_lang)
        for text, title in heads:
            if title is None:
                assert text in NOT_FIGURES[page_lang] | HOSTS | {""}, (path, text)
            else:
                assert title in allowed, (path, text, title)
                seen += 1
    # the figures of the report's tables, the K.-o. block, overview, compare, judges
    assert seen >= 120
    page.goto(site.url + f"/run/{JUDGED}")
    ttft = page.locator("th", has_text="TTFT p50 s").first.get_attribute("title")
    assert ttft == (
        "TTFT: Zeit bis zum ersten Token auf irgendeinem Kanal (Reasoning oder Antwort), gemessen "
        "ab dem Absenden der Anfrage; Rollen-Chunks, leere Strings und SSE-Kommentare zählen "
        "nicht. (Einheit: s)"
    )
    band = page.locator("th", has_text="Band-Treffer").first.get_attribute("title")
    assert band == lang.metric_tip("de", "Band accuracy")
    page.goto(site.url + f"/run/{PERF}")
    total = page.locator("table#points th", has_text="total tok/s").get_attribute("title")
    assert total == (
        "Total tok/s: Output tokens of all of a perf point's requests ÷ the point's wall time: "
        "what the server delivers to every stream together. (unit: tokens/s)"
    )
    page.goto(site.url + f"/live/{CRASHED}")
    live_tips = (
        page.locator(".host-card")
        .first.locator("span[title]")
        .evaluate_all("els => els.map(e => [e.textContent, e.getAttribute('title')])")
    )
    assert live_tips == [
        ["in Arbeit", lang.metric_tip("de", "In flight")],
        ["Restzeit", lang.metric_tip("de", "ETA")],
    ]


def english_only() -> set[str]:
    """Labels whose English text differs from the German one (what must not appear on a
    German page)."""
    out = set()
    for name in ("SCORECARD", "REPORT", "UI"):
        german, english = getattr(de, name), getattr(en, name)
        out |= {english[k] for k in english if english[k] != german[k]}
    return out


LABELLING = "header a, th, h1, h2, button, label, .badge, #bundle-files a"


def shown_labels(page: Any) -> list[str]:
    """The texts of the page's labelling elements: nav links, heads, buttons, form labels,
    badges, links."""
    return page.locator(
        "header a, th, h1, h2, button, label, .badge, #bundle-files a"
    ).evaluate_all("els => els.map(e => e.textContent.trim())")


def test_a_german_bundles_pages_are_german_throughout(site: UiServer, page: Any) -> None:
    english = english_only()
    page.goto(site.url + f"/run/{JUDGED}")
    assert page.locator("html").get_attribute("lang") == "de"
    assert page.locator("header.top a").all_inner_texts() == [
        "touchstone-ray", "Läufe", "Vergleich", "Judges", "Packs", "Jobs", "Warteschlange",
    ]  # fmt: skip
    assert page.locator("#ko h2").inner_text() == "K.-o.-Regel"
    assert page.locator("#ko-rule li").all_inner_texts() == [
        "Red-Flag-Zweig (Geltungsbereich curated): nur eine Red Flag auf einem der Prompts E1 "
        "führt zum K.-o.; andere Red Flags kosten nur Punkte.",
        "Dimensions-Boden (in beiden Geltungsbereichen): Q1 Korrektheit ≤ 2 → K.-o.",
    ]
    assert page.locator("#ko thead th").all_inner_texts() == [
        "Zeile", "K.-o.", "ausgelöster Zweig", "Prompts mit Red Flag",
        "Red Flags außerhalb der kuratierten Prompts",
    ]  # fmt: skip
    assert page.locator("#ko .ko-pass").first.inner_text() == "bestanden"
    assert page.locator("#answer-filters button").inner_text() == "Antworten filtern"
    assert page.locator("#trash-bundle").inner_text() == "in den Papierkorb"
    assert page.locator("#download-zip").inner_text() == "Bundle (.zip)"
    texts = shown_labels(page)
    assert [t for t in texts if t in english] == []
    page.goto(site.url + f"/live/{CRASHED}")
    assert page.locator("html").get_attribute("lang") == "de"
    assert page.locator("#live-state").inner_text() == "abgestürzt"
    progress = page.locator(".host-card .progress").first.inner_text()
    assert progress == "6/6 Zellen (5 ok, 1 fehlgeschlagen)"
    assert [t for t in shown_labels(page) if t in english] == []
    # a page that shows no pack's bundle speaks --lang (en here)
    page.goto(site.url + "/")
    assert page.locator("html").get_attribute("lang") == "en"
    assert page.locator("header.top a").nth(1).inner_text() == "Runs"


@pytest.fixture(scope="module")
def german_site(tmp_path_factory: pytest.TempPathFactory, site: UiServer) -> Any:
    """The session's runs folder served again with ``--lang de``."""
    args = site.proc.args
    assert isinstance(args, list)
    runs = Path(args[args.index("--runs") + 1])
    base = tmp_path_factory.mktemp("ui-de")
    with ui_server(runs, packs_folder(base), "--lang", "de") as server:
        yield server


def test_lang_de_makes_the_other_pages_german(german_site: UiServer, page: Any) -> None:
    english = english_only()
    page.goto(german_site.url + "/")
    assert page.locator("html").get_attribute("lang") == "de"
    assert page.locator("h1").inner_text().startswith("Läufe unter ")
    heads = page.locator("section.pack-group").first.locator("th").all_inner_texts()
    assert heads == [
        "Bundle", "Art", "Status", "Modelle × Varianten", "Hosts", "Datum", "Beste · Stufe · K.-o.",
        "Qualität",
    ]  # fmt: skip
    assert page.locator(f'tr[data-bundle="{JUDGED}"] .badge').first.inner_text() == "bewertet"
    assert page.locator(f'tr[data-bundle="{JUDGED}"] .ko-pass').inner_text() == "K.-o. bestanden"
    assert page.locator("#import-submit").inner_text() == "importieren"
    for path in ("/", COMPARE, "/judges", "/packs", "/trash", "/queue", "/jobs"):
        page.goto(german_site.url + path)
        assert page.locator("html").get_attribute("lang") == "de", path
        assert [t for t in shown_labels(page) if t in english] == [], path
    page.goto(german_site.url + "/queue")
    assert page.locator("h1").inner_text() == "Warteschlange"
    assert page.locator("#queue-add button").inner_text() == "zur Warteschlange hinzufügen"
    assert page.locator("#queue-empty").inner_text() == "Die Warteschlange ist leer."
    page.goto(german_site.url + "/jobs")  # the start form too (its head starts with a job)
    assert page.locator("#start-eval h2").inner_text() == "Eval starten"
    assert page.locator("#start-eval button").inner_text() == "Eval starten"
    page.goto(german_site.url + "/judges")
    assert page.locator('tr[data-judge="j1"] td').nth(2).inner_text() == "qualifiziert"
    assert page.locator("section.judges ul li").first.inner_text() == "Band-Treffer: j1 (0.90)"
    # a perf bundle's pages speak its report's language, English
    page.goto(german_site.url + f"/run/{PERF}")
    assert page.locator("html").get_attribute("lang") == "en"
    assert page.locator("header.top a").nth(1).inner_text() == "Runs"


def test_lang_other_than_de_or_en_is_refused_with_one_line(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "touchstone_ray.cli", "ui", "--runs", str(tmp_path)]
    done = subprocess.run(
        [*cmd, "--lang", "fr", "--port", "0"], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "error: --lang fr: not one of de, en\n"
