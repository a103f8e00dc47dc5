"""The judge card on the result page, in a real headless Chromium: the four downloads are
streamed and not written into the bundle, a pasted critique shows its summary and
judge_quality.md inline, an uploaded part A is taken, and a broken reply answers 400 with its
one-line error (nothing stored)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from ui_helpers import UiServer, make_bundle, packs_folder, ui_server

pytestmark = pytest.mark.ui

REL = "lab/2026-01-02_030000_eval_mini"


@pytest.fixture(scope="module")
def card_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[UiServer, Path]]:
    base = tmp_path_factory.mktemp("card")
    root = make_bundle(base / "runs" / "lab")
    with ui_server(base / "runs", packs_folder(base)) as server:
        yield server, root


def _download(page: Any, href_end: str) -> str:
    with page.expect_download() as info:
        page.click(f'#judge-card a[href$="{href_end}"]')
    path = info.value.path()
    return Path(path).read_text(encoding="utf-8")


def test_download_paste_summary(card_site: tuple[UiServer, Path], page: Any) -> None:
    site, root = card_site
    before = sorted(p.name for p in root.iterdir())
    page.goto(f"{site.url}/run/{REL}")
    links = page.locator("#judge-card a.jc-download")
    assert links.count() == 4
    assert links.first.inner_text() == "Teil A: Bewertungsaufgabe"
    task = _download(page, f"/critique-task.md/{REL}")
    assert task.startswith("---\n") and "# Kritik-Aufgabe (Teil B)" in task
    template = yaml.safe_load(_download(page, f"/critique-reply.yaml/{REL}"))
    part_a = _download(page, f"/rating-reply.yaml/{REL}")
    assert _download(page, f"/rating-task.html/{REL}").lstrip().lower().startswith("<!doctype")
    assert sorted(p.name for p in root.iterdir()) == before  # streamed, nothing written

    first = template["critique"][0]
    first.update(cites_evidence=1, justifies_level=0)  # names_improvement stays empty
    reply = {"rater": "Browser", "task": template["task"], "critique": [first]}
    page.fill('#jc-form textarea[name="reply"]', yaml.safe_dump(reply, allow_unicode=True))
    page.fill('#jc-form input[name="name"]', "browser")
    page.click('#jc-form button[type="submit"]')
    page.wait_for_selector("#jc-summary")
    assert page.locator("#jc-summary li").all_inner_texts() == [
        "0 bewertete Zeilen als browser eingelesen",
        "1 kritisierte Begründungen als browser eingelesen",
    ]
    quality = page.locator("#jc-quality").inner_text()
    assert "Judge-Qualität" in quality and "cites_evidence" in quality
    assert (root / "judge_quality.md").is_file()

    page.goto(f"{site.url}/run/{REL}")  # part A, uploaded as a file
    filled = re.sub(r"score: ,", "score: 3,", part_a)
    upload = root.parent / "part-a.yaml"
    upload.write_text(filled, encoding="utf-8")
    page.set_input_files('#jc-form input[name="file"]', str(upload))
    page.click('#jc-form button[type="submit"]')
    page.wait_for_selector("#jc-summary")
    rows = page.locator("#jc-summary li").all_inner_texts()
    assert len(rows) == 1 and rows[0].endswith("bewertete Zeilen als outside eingelesen")
    assert not rows[0].startswith("0 ")


def test_broken_reply_answers_400_with_the_line(
    card_site: tuple[UiServer, Path], browser: Any
) -> None:
    site, root = card_site
    context = browser.new_context()  # the 400 is logged to the console: no error check here
    page = context.new_page()
    page.goto(f"{site.url}/run/{REL}")
    broken = "critique:\n  - {id: R999, cites_evidence: 1}\n"
    page.fill('#jc-form textarea[name="reply"]', broken)
    page.fill('#jc-form input[name="name"]', "bad")
    with page.expect_response(lambda r: "/judge-card/reply/" in r.url) as info:
        page.click('#jc-form button[type="submit"]')
    assert info.value.status == 400
    error = page.locator("#jc-error").inner_text()
    assert error.startswith("Die Antwort wurde nicht übernommen: reply: critique[0] (R999): ")
    assert "unknown item" in error
    assert not (root / "judgements" / "bad").exists()
    context.close()
    empty = httpx.post(
        f"{site.url}/judge-card/reply/{REL}",
        data={"name": "x", "reply": ""},
        headers={"Origin": site.url},
    )
    assert empty.status_code == 400 and "keine Antwort" in empty.text
    assert httpx.get(f"{site.url}/judge-card/file/nope.txt/{REL}").status_code == 404
