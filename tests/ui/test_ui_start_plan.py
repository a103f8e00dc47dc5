"""The start flow's plans without a cluster: the exact command the form shows and submits (one
owner, :mod:`touchstone_ray.queue.commands`, shared with the queue's stages), the hosts it
holds, the chained judge, the Resume command of a bundle, and every bad input refused with one
line before anything starts."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_ui_live import PACK
from ui_helpers import crashed_bundle, make_bundle

from touchstone_ray.errors import UsageError
from touchstone_ray.queue.commands import (
    command_line,
    eval_command,
    hosts_command,
    judge_command,
    perf_command,
    report_command,
)
from touchstone_ray.ui.jobs import UNPINNED, Jobs
from touchstone_ray.ui.start import (
    judge_config_files,
    parse_limit,
    preflight_models,
    resume_plan,
    yaml_files,
)
from touchstone_ray.ui.start_routes import form_of

FLEET = {
    "models": [
        {"id": "a", "engine": "simulated", "host": "gpu-b"},
        {"id": "b", "engine": "simulated", "host": "gpu-a"},
        {"id": "c", "engine": "simulated"},
    ],
    "hosts": {"gpu-a": {"label": "gpu-a"}, "gpu-b": {"label": "gpu-b"}},
}
JUDGE = {"judges": [{"id": "j", "engine": "simulated", "model": "j"}]}
TWO_VARIANTS: dict[str, Any] = copy.deepcopy(PACK)
TWO_VARIANTS["prompt_variants"].append({"id": "none", "system_prompt": None})


@pytest.fixture
def jobs(tmp_path: Path) -> Jobs:
    runs, packs = tmp_path / "runs", tmp_path / "packs"
    runs.mkdir()
    packs.mkdir()
    (packs / "p.yaml").write_text(yaml.safe_dump(TWO_VARIANTS), encoding="utf-8")
    (packs / "fleet.yaml").write_text(yaml.safe_dump(FLEET), encoding="utf-8")
    (runs / "judge.yaml").write_text(yaml.safe_dump(JUDGE), encoding="utf-8")
    (packs / "bad.yaml").write_text("models: [{id: x, engine: warp}]\n", encoding="utf-8")
    return Jobs(None, runs.resolve(), packs.resolve())


def test_the_command_owner_builds_every_command_in_one_order() -> None:
    p, c, out, b = Path("/p.yaml"), Path("/c.yaml"), Path("/runs"), Path("/runs/b")
    assert eval_command(p, c, out=out) == ["eval", "--pack", "/p.yaml", "--config", "/c.yaml",
                                           "--out", "/runs"]  # fmt: skip
    assert eval_command(
        p, c, resume=b, address="auto", models=["m1", "m2"], variants=["none"], limit=2
    ) == [
        "eval", "--pack", "/p.yaml", "--config", "/c.yaml", "--address", "auto",
        "--resume", "/runs/b", "--models", "m1,m2", "--variants", "none", "--limit", "2",
    ]  # fmt: skip
    assert eval_command(p, c, out=out, prompts=["A1", "B2"])[-2:] == ["--prompts", "A1,B2"]
    assert perf_command(c, out=out, models=["m1"]) == [
        "perf", "--config", "/c.yaml", "--out", "/runs", "--models", "m1",
    ]  # fmt: skip
    assert judge_command(b, Path("/j.yaml"), address="auto") == [
        "judge", "--bundle", "/runs/b", "--judge-config", "/j.yaml", "--address", "auto",
    ]  # fmt: skip
    assert report_command(b, unjudged=True) == ["report", "--bundle", "/runs/b", "--unjudged"]
    assert hosts_command(c) == ["hosts", "--config", "/c.yaml", "--json"]
    assert command_line(eval_command(Path("/a b/p.yaml"), c, out=out, limit=1)) == (
        "touchstone-ray eval --pack '/a b/p.yaml' --config /c.yaml --out /runs --limit 1"
    )
    with pytest.raises(ValueError):
        eval_command(p, c, out=out, resume=b)


def test_the_form_shows_and_submits_one_exact_command(jobs: Jobs) -> None:
    pack, fleet = jobs.packs / "p.yaml", jobs.packs / "fleet.yaml"
    form = {"kind": "eval", "pack": "p.yaml", "config": "fleet.yaml", "picked": "1",
            "models": "b,c", "variants": "none", "limit": "2",
            "judge_config": "judge.yaml"}  # fmt: skip
    plan = jobs.plan("eval", form)
    assert plan.argv == [
        "touchstone-ray", "eval", "--pack", str(pack), "--config", str(fleet),
        "--out", str(jobs.runs), "--models", "b,c", "--variants", "none", "--limit", "2",
    ]  # fmt: skip
    assert plan.line == (
        f"touchstone-ray eval --pack {pack} --config {fleet} --out {jobs.runs} "
        "--models b,c --variants none --limit 2"
    )
    assert plan.hosts == (UNPINNED, "gpu-a")  # the ticked models' hosts only
    assert plan.then_judge == jobs.runs / "judge.yaml"
    assert jobs.entry("eval", form) == (plan.argv, plan.hosts)
    # everything ticked is the same as nothing named; no limit, no judge
    every = {
        **form,
        "models": "a,b,c",
        "variants": "baseline,none",
        "limit": "",
        "judge_config": "",
    }
    plan = jobs.plan("eval", every)
    assert plan.line == f"touchstone-ray eval --pack {pack} --config {fleet} --out {jobs.runs}"
    assert (plan.hosts, plan.then_judge) == ((UNPINNED, "gpu-a", "gpu-b"), None)
    # a post without the form's checkboxes (an older client): all models
    assert jobs.plan("eval", {"pack": "p.yaml", "config": "fleet.yaml"}).args[-2:] == [
        "--out", str(jobs.runs),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "line"),
    [
        ({"models": ""}, "models: tick at least one of a, b, c"),
        ({"variants": ""}, "variants: tick at least one of baseline, none"),
        ({"models": "a,zz"}, "models: unknown zz; choose from a, b, c"),
        ({"limit": "0"}, "limit '0': expected a whole number of prompts ≥ 1"),
        ({"limit": "-3"}, "limit '-3': expected a whole number of prompts ≥ 1"),
        ({"limit": "2.5"}, "limit '2.5': expected a whole number of prompts ≥ 1"),
        ({"config": "nope.yaml"}, "config nope.yaml: not a file under --runs or the packs folder"),
    ],
)
def test_bad_input_is_one_line(jobs: Jobs, change: dict[str, str], line: str) -> None:
    form = {"pack": "p.yaml", "config": "fleet.yaml", "picked": "1", "models": "a",
            "variants": "none", **change}  # fmt: skip
    with pytest.raises(UsageError) as exc:
        jobs.plan("eval", form)
    assert str(exc.value) == line


def test_a_config_that_fails_to_load_is_one_line(jobs: Jobs) -> None:
    with pytest.raises(UsageError) as exc:
        jobs.plan("eval", {"pack": "p.yaml", "config": "bad.yaml"})
    text = str(exc.value)
    assert "\n" not in text and "bad.yaml" in text and "engine" in text
    with pytest.raises(UsageError) as exc:
        jobs.plan("eval", {"pack": "p.yaml", "config": "fleet.yaml", "judge_config": "p.yaml"})
    assert "\n" not in str(exc.value) and "p.yaml" in str(exc.value)


def test_limit_parsing() -> None:
    assert parse_limit("") is None
    assert parse_limit(" 3 ") == 3
    with pytest.raises(UsageError):
        parse_limit("1e3")


def test_form_values_of_ticked_boxes_are_joined() -> None:
    from multidict import MultiDict

    posted = MultiDict([("kind", "eval"), ("models", "a"), ("models", "b"), ("limit", "")])
    assert form_of(posted) == {"kind": "eval", "models": "a,b", "limit": ""}


def test_resume_of_a_crashed_bundle_and_the_files_offered(jobs: Jobs) -> None:
    root = crashed_bundle(jobs.runs / "old", "2026-01-01_030000_eval_mini")
    (root / "config.yaml").write_text(yaml.safe_dump(FLEET), encoding="utf-8")
    plan = resume_plan(root)
    assert (plan.kind, plan.hosts) == ("eval", (UNPINNED, "gpu-a", "gpu-b"))
    assert plan.line == (
        f"touchstone-ray eval --pack {root / 'pack.yaml'} --config {root / 'config.yaml'} "
        f"--resume {root}"
    )
    assert plan.line == __import__("touchstone_ray.bundle").bundle.Bundle(root).resume_command()
    done = make_bundle(jobs.runs, "2026-01-02_030000_eval_mini", judged=False)
    with pytest.raises(UsageError) as exc:
        resume_plan(done)
    assert str(exc.value) == f"{done.name}: done; only a crashed or failed run resumes"
    # the pickers: no file inside a bundle, judge configs by their ``judges``
    files = yaml_files(jobs.runs, jobs.packs)
    assert files == sorted(
        [jobs.runs / "judge.yaml", *(jobs.packs / n for n in ("bad.yaml", "fleet.yaml", "p.yaml"))]
    )
    assert judge_config_files(jobs.runs, jobs.packs) == [jobs.runs / "judge.yaml"]


def test_the_preflight_jobs_json_line_is_read_from_its_log() -> None:
    log = (
        "2026-12-05 ray: started\n"
        '{"hosts": [{"host": "local", "node_id": "n", "error": null, "gpu": "no", "psi": "yes",'
        ' "models": {"m": {"reachable": true, "error": null, "served": ["m", "x"],'
        ' "model_served": true}}}], "problems": []}\n'
    )
    assert preflight_models(log) == {
        "models": {
            "m": {"host": "local", "reachable": True, "error": None, "served": ["m", "x"],
                  "model_served": True},
        },
        "problems": [],
    }  # fmt: skip
    assert preflight_models("still starting\n") is None


def test_resume_and_judge_buttons_speak_the_bundles_language(jobs: Jobs) -> None:
    from touchstone_ray.ui.jobs_page import run_actions

    crashed = crashed_bundle(jobs.runs / "old", "2026-01-01_030000_eval_mini")
    (crashed / "config.yaml").write_text(yaml.safe_dump(FLEET), encoding="utf-8")
    html = run_actions(crashed, jobs.runs, "de", jobs.runs, jobs.packs)
    assert "<h2>Nächste Schritte</h2>" in html
    assert '<button type="submit" id="resume-button">fortsetzen</button>' in html
    assert f"startet {resume_plan(crashed).line} als Job" in html
    assert 'id="judge-button"' not in html  # crashed: resume it first
    done = make_bundle(jobs.runs, "2026-01-02_030000_eval_mini", judged=False)
    html = run_actions(done, jobs.runs, "de", jobs.runs, jobs.packs)
    assert '<button type="submit" id="judge-button">bewerten</button>' in html
    assert f'<option value="{jobs.runs / "judge.yaml"}">judge.yaml</option>' in html
    assert "Judge-Konfiguration" in html and "resume-button" not in html
    english = run_actions(done, jobs.runs, "en", jobs.runs)  # no judge config under --runs? one
    assert ">judge</button>" in english
    judged = make_bundle(jobs.runs / "lab", "2026-01-02_030000_eval_mini")
    assert run_actions(judged, jobs.runs, "de", jobs.runs, jobs.packs) == ""
    assert "keine Judge-Konfiguration" in run_actions(done, jobs.runs, "de", jobs.packs)
