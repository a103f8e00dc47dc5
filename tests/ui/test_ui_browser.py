"""The UI in a real headless Chromium: overview, result page, packs; each page loads with no
console error, so the CSP let everything it needs through."""

from __future__ import annotations

import json
from typing import Any

from ui_helpers import BAD_PACK, CRASHED, JUDGED, OTHER, PERF, UiServer, shot

from touchstone_ray.errors import PackError


def test_overview_groups_bundles_by_pack_with_status_kind_and_resume(
    site: UiServer, page: Any
) -> None:
    page.goto(site.url + "/")
    groups = page.locator("section.pack-group")
    assert groups.evaluate_all("els => els.map(e => e.dataset.pack)") == [
        "(perf)",
        "mini v1",
        "mini2 v1",
    ]
    mini = page.locator('section[data-pack="mini v1"] tr[data-bundle]')
    assert mini.evaluate_all("els => els.map(e => e.dataset.bundle)") == [JUDGED, CRASHED]
    judged = page.locator(f'tr[data-bundle="{JUDGED}"]')
    assert judged.locator(".badge.s-judged").inner_text() == "judged"
    assert judged.locator("td.quality").inner_text() == "85.0 %"
    assert "m-fast · none" in judged.inner_text()
    assert judged.locator(".ko-pass").inner_text() == "K.-o. passed"
    crashed = page.locator(f'tr[data-bundle="{CRASHED}"]')
    assert crashed.locator(".badge").inner_text() == "crashed"
    root = site_root(site) / CRASHED
    assert crashed.locator("code.resume").inner_text() == (
        f"touchstone-ray eval --pack {root}/pack.yaml --config {root}/config.yaml --resume {root}"
    )
    perf = page.locator(f'tr[data-bundle="{PERF}"]')
    assert perf.locator("td").nth(1).inner_text() == "perf"
    assert perf.locator("a").evaluate_all("els => els.map(e => e.textContent)") == ["result"]
    assert page.locator(f'tr[data-bundle="{OTHER}"] .badge').inner_text() == "done"
    shot(page, "overview")


def site_root(site: UiServer) -> Any:
    """The runs folder the UI serves (from its command line)."""
    from pathlib import Path

    args = site.proc.args
    assert isinstance(args, list)
    return Path(args[args.index("--runs") + 1]).resolve()


def test_overview_filters_by_pack_model_and_host(site: UiServer, page: Any) -> None:
    page.goto(site.url + "/")
    page.select_option('select[name="pack"]', "mini2")
    page.click('form.filters button[type="submit"]')
    page.wait_for_url("**/?pack=mini2&model=&host=")
    shown = "els => els.map(e => e.dataset.bundle)"
    assert page.locator("tr[data-bundle]").evaluate_all(shown) == [OTHER]
    page.goto(site.url + "/?model=gemma3-270m")
    assert page.locator("tr[data-bundle]").evaluate_all(shown) == [PERF]
    page.goto(site.url + "/?host=local")
    assert PERF not in page.locator("tr[data-bundle]").evaluate_all(shown)
    page.goto(site.url + "/?host=nowhere")
    assert page.locator("#groups").inner_text() == "No bundles match."


def test_new_bundle_appears_without_reload(site: UiServer, page: Any) -> None:
    from ui_helpers import renamed_pack_bundle

    page.goto(site.url + "/")
    assert page.locator('section[data-pack="fresh v1"]').count() == 0
    renamed_pack_bundle(site_root(site) / "late", "2026-01-05_030000_eval_fresh", "fresh")
    page.locator('section[data-pack="fresh v1"]').wait_for(timeout=10_000)
    assert page.locator('section[data-pack="fresh v1"] tr[data-bundle]').count() == 1


def test_result_page_shows_ranking_ko_branch_and_an_answers_verdicts(
    site: UiServer, page: Any
) -> None:
    page.goto(site.url + f"/run/{JUDGED}")
    ranking = page.locator("table#ranking tbody tr")
    assert ranking.count() == 4
    assert ranking.nth(0).locator("td").nth(1).inner_text() == "m-fast"
    assert ranking.nth(0).locator("td").nth(2).inner_text() == "none"
    ko = page.locator("#ko tbody tr").nth(3)
    assert ko.locator(".ko-reason").inner_text() == "Red-Flag bei E1"
    assert ko.locator("td").nth(3).inner_text() == "E1"
    assert ko.locator(".uncurated").inner_text() == "—"
    # the pack is German: the page around its report too
    assert page.locator("#answer-count").inner_text() == "12 von 12 Antworten"
    shot(page, "result")
    page.select_option('#answer-filters select[name="model"]', "m-slow")
    page.check('#answer-filters input[name="red_flag"]')
    page.click('#answer-filters button[type="submit"]')
    page.wait_for_url("**red_flag=1**")
    assert page.locator("#answer-count").inner_text() == "1 von 12 Antworten"
    answers = page.locator("#answer-list").inner_text()
    assert "m-fast" not in answers
    assert "m-slow / baseline #1" in answers
    assert "Urteil j1: <i>ok</i> | [[Link]] #tag" in answers
    assert "✗ Nennt eine Zahl" in answers
    # by score: every answer with a verdict of 5 (counted from the judges' files)
    root = site_root(site) / JUDGED
    fives = {
        v["key"]
        for judge in ("j1", "j2")
        for line in (root / "judgements" / judge / "verdicts.jsonl").read_text().splitlines()
        for v in [json.loads(line)]
        if v["score"] == 5
    }
    assert fives
    page.goto(site.url + f"/run/{JUDGED}?score=5")
    assert page.locator("#answer-count").inner_text() == f"{len(fives)} von 12 Antworten"


def test_packs_page_shows_the_loaders_line_for_a_broken_pack(
    site: UiServer, page: Any, tmp_path: Any
) -> None:
    import yaml

    from touchstone_ray.pack import load_pack

    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(BAD_PACK), encoding="utf-8")
    try:
        load_pack(path)
    except PackError as exc:
        expected = str(exc)
    page.goto(site.url + "/packs")
    row = page.locator("tr", has=page.locator('a[href="/packs/broken.yaml"]'))
    served = row.locator("td.err").inner_text()
    assert served == expected.replace(str(path), served.split(":")[0])
    assert served.endswith("dimensions[0].weight: Input should be greater than 0 (got 0)")
    page.fill("#pack-yaml", "id: x\nscale: [1, 2\n")
    page.click("#validate")
    assert page.locator("#validate-result.err").inner_text().startswith("pasted.yaml: ")
    shot(page, "packs")
    bad = tmp_path / "upload.yaml"
    bad.write_bytes(b"id: \xff\xfe\n")
    try:
        load_pack(bad)
    except PackError as exc:
        upload_line = str(exc).replace(str(bad), "pasted.yaml")
    page.set_input_files("#pack-file", str(bad))
    page.click("#validate")
    assert page.locator("#validate-result.err").inner_text() == upload_line
    assert upload_line == "pasted.yaml: not valid UTF-8 at byte 4"
    page.goto(site.url + "/packs/buero.yaml")
    # buero is German: its page states the K.-o. rule in the report's German words
    assert page.locator("html").get_attribute("lang") == "de"
    assert page.locator("#ko-rule li").all_inner_texts() == [
        "Red-Flag-Zweig (Geltungsbereich curated): nur eine Red Flag auf einem der Prompts "
        "A4, B3, C4, D1, E1, E2 führt zum K.-o.; andere Red Flags kosten nur Punkte.",
        "Dimensions-Boden (in beiden Geltungsbereichen): Q1 Faktische Zuverlässigkeit ≤ 2 → K.-o.",
    ]
