"""The UI queue's file edits without a cluster: add (checkboxes, limit, judge config), the
one-line refusals that leave the file as it was, move among pending entries, remove, stop, and
a Jobs-page eval on a host an unfinished entry holds becoming an entry."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_ui_live import PACK

from touchstone_ray.errors import UsageError
from touchstone_ray.queue import load_queue
from touchstone_ray.queue.spec import entry_fingerprint
from touchstone_ray.queue.state import QueueLog, stop_file
from touchstone_ray.ui.jobs import Jobs
from touchstone_ray.ui.queue_jobs import Conflict, QueueRow, UiQueue
from touchstone_ray.ui.queue_page import entries_html

TWO_VARIANTS: dict[str, Any] = PACK | {
    "prompt_variants": [{"id": "baseline"}, {"id": "knapp", "system_prompt": "Sei knapp."}]
}
FLEET: dict[str, Any] = {
    "models": [
        {"id": "m1", "engine": "simulated"},
        {"id": "m2", "engine": "simulated", "host": "gpu-a"},
    ],
    "hosts": {"gpu-a": {"label": "gpu-a"}},
}
ALL = {"models": ["m1", "m2"], "variants": ["baseline", "knapp"]}


@pytest.fixture
def queue(tmp_path: Path) -> UiQueue:
    runs, packs = tmp_path / "runs", tmp_path / "packs"
    runs.mkdir()
    packs.mkdir()
    (packs / "live.yaml").write_text(yaml.safe_dump(TWO_VARIANTS), encoding="utf-8")
    (packs / "fleet.yaml").write_text(yaml.safe_dump(FLEET), encoding="utf-8")
    (packs / "judge.yaml").write_text(yaml.safe_dump({"judges": [{"id": "j"}]}), "utf-8")
    return UiQueue(Jobs(None, runs.resolve(), packs.resolve()))


def _form(**extra: Any) -> dict[str, Any]:
    return {"pack": "live.yaml", "config": "fleet.yaml", **ALL, **extra}


def _entries(queue: UiQueue) -> list[dict[str, Any]]:
    return list(yaml.safe_load(queue.path.read_text(encoding="utf-8"))["entries"])


def test_add_writes_entries_all_checked_is_null(queue: UiQueue) -> None:
    packs = queue.jobs.packs
    assert queue.add(_form()) == "live-1"
    second = _form(models=["m2"], variants=["knapp"], limit="2", judge_config="judge.yaml")
    assert queue.add(second | {"name": "quick"}) == "quick"
    assert _entries(queue) == [
        {"name": "live-1", "kind": "eval", "pack": str(packs / "live.yaml"),
         "config": str(packs / "fleet.yaml")},
        {"name": "quick", "kind": "eval", "pack": str(packs / "live.yaml"),
         "config": str(packs / "fleet.yaml"), "models": ["m2"], "variants": ["knapp"],
         "judge_config": str(packs / "judge.yaml"), "limit": 2},
    ]  # fmt: skip
    rows = queue.rows()
    assert [(r.name, r.state, r.hosts) for r in rows] == [
        ("live-1", "pending", ("(unpinned)", "gpu-a")),
        ("quick", "pending", ("gpu-a",)),
    ]
    assert (rows[1].models, rows[1].variants, rows[1].limit) == (("m2",), ("knapp",), 2)


def test_bad_input_is_one_line_and_changes_nothing(queue: UiQueue) -> None:
    queue.add(_form(name="first"))
    before = queue.path.read_text(encoding="utf-8")
    cases = [
        (_form(limit="two"), "limit 'two': expected a whole number of prompts ≥ 1"),
        (_form(variants=[]), "variants: check at least one of ['baseline', 'knapp']"),
        (
            _form(pack="../outside.yaml"),
            "pack ../outside.yaml: not a file under --runs or the packs folder",
        ),
        (
            _form(name="first"),
            f"{queue.path}: entries[1].name: two entries have this name (got 'first')",
        ),
        (
            _form(name="Bad Name!"),
            f"{queue.path}: entries[1].name: String should match pattern "
            "'^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$' (got 'Bad Name!')",
        ),
        (_form(limit="0"), f"{queue.path}: entries[1].limit: Input should be greater than "
         "or equal to 1 (got 0)"),
    ]  # fmt: skip
    for form, line in cases:
        with pytest.raises(UsageError) as exc:
            queue.add(form)
        assert str(exc.value) == line
        assert queue.path.read_text(encoding="utf-8") == before
    assert sorted(p.name for p in queue.path.parent.iterdir()) == ["queue.yaml"]


def test_move_remove_and_stop_follow_the_states(queue: UiQueue) -> None:
    for name in ("a", "b", "c", "d"):
        queue.add(_form(name=name))
    fingerprint = entry_fingerprint(load_queue(queue.path).entry("a"))
    log = QueueLog(queue.folder)
    log.write("entry_started", "a", stage="eval", state="running", fingerprint=fingerprint)
    log.close()
    queue.move("d", -1)
    assert [e["name"] for e in _entries(queue)] == ["a", "b", "d", "c"]
    queue.move("b", -1)  # a running entry is not a place to move to: b is first of the pending
    queue.move("c", 1)  # already last
    assert [e["name"] for e in _entries(queue)] == ["a", "b", "d", "c"]
    queue.move("b", 1)
    assert [e["name"] for e in _entries(queue)] == ["a", "d", "b", "c"]
    with pytest.raises(Conflict) as exc:
        queue.move("a", 1)
    assert str(exc.value) == "entry 'a': only a pending entry moves (it is running)"
    with pytest.raises(Conflict) as exc:
        queue.remove("a")
    assert str(exc.value) == "entry 'a' is running: stop it before removing it"
    with pytest.raises(Conflict) as exc:
        queue.stop("b")
    assert str(exc.value) == "entry 'b': only a running entry stops (it is pending)"
    queue.stop("a")
    assert stop_file(queue.folder, "a").is_file()
    queue.remove("b")
    assert [e["name"] for e in _entries(queue)] == ["a", "d", "c"]
    with pytest.raises(UsageError) as exc:
        queue.remove("zz")
    assert str(exc.value) == f"entry 'zz': not in {queue.path}"
    log = QueueLog(queue.folder)
    log.write("entry_ended", "a", stage="eval", state="skipped", reason="stopped on request",
              fingerprint=fingerprint)  # fmt: skip
    log.close()
    assert [(r.name, r.state, r.reason) for r in queue.rows()] == [
        ("a", "skipped", "stopped on request"),
        ("d", "pending", None),
        ("c", "pending", None),
    ]
    for name in ("a", "d", "c"):
        queue.remove(name)
    assert not queue.path.exists() and queue.rows() == []
    assert not stop_file(queue.folder, "a").exists()  # a removed entry's stop is gone too


def test_a_jobs_page_eval_on_a_host_of_an_unfinished_entry_is_queued(queue: UiQueue) -> None:
    queue.add(_form(name="night", models=["m2"]))
    got = queue.start("eval", {"pack": "live.yaml", "config": "fleet.yaml"})
    assert got == ("eval-fleet-1", True)
    got = queue.start("perf", {"config": "fleet.yaml"})
    assert got == ("perf-fleet-1", True)
    assert [(e["name"], e["kind"], e.get("pack")) for e in _entries(queue)] == [
        ("night", "eval", str(queue.jobs.packs / "live.yaml")),
        ("eval-fleet-1", "eval", str(queue.jobs.packs / "live.yaml")),
        ("perf-fleet-1", "perf", None),
    ]
    assert queue.jobs.local is None  # queueing started no cluster


def test_the_entry_table_speaks_the_ui_language_with_the_duration_explained(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    row = QueueRow(
        name="nacht", kind="eval", pack="buero.yaml", config=str(tmp_path / "fleet.yaml"),
        models=None, variants=("knapp",), limit=2, judge_config=None, hosts=("gpu-a",),
        state="stalled", bundle=None, reason="no new record for 900 s", duration_s=912.4,
    )  # fmt: skip
    html = entries_html([row], runs, None, "de")
    heads = re.findall(r"<th(?: title=\"([^\"]*)\")?>([^<]*)</th>", html)
    assert [text for _, text in heads] == [
        "Eintrag", "Art", "Status", "Pack", "Konfiguration", "Modelle", "Varianten", "Limit",
        "Judge", "Hosts", "Dauer", "Bundle", "",
    ]  # fmt: skip
    assert [tip for tip, _ in heads if tip] == [
        "Dauer des Eintrags: Wanduhrzeit eines Warteschlangen-Eintrags von seinem Start "
        "(Zurücksetzen und Abklingen des Hosts eingeschlossen) bis zum Ende seiner letzten Stufe "
        "(Lauf, Judge, Bericht). (Einheit: s)"
    ]
    assert '<span class="badge s-stalled">hängengeblieben</span>' in html
    assert '<span class="muted">alle</span>' in html
    assert '<button type="submit" class="remove">entfernen</button>' in html
    assert "<td>912 s</td>" in html
    assert entries_html([], runs, None, "de").endswith(
        '<p id="queue-empty" class="muted">Die Warteschlange ist leer.</p>'
    )
    english = entries_html([row], runs, None, "en")
    assert '<span class="badge s-stalled">stalled</span>' in english
    assert '<th title="Entry duration: Wall time of a queue entry' in english
