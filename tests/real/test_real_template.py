"""Issue 28 on the real llama.cpp server: Gemma 3 270M served with its default template (the
GGUF carries none, llama.cpp falls back to ChatML) against the same model with
``--chat-template gemma``.

Default template: the preflight names the ChatML markers the model does not know and the flag
to pass, the warm-up answer's probe warns, most answers carry ``template_leak`` /
``prompt_echo``, and the judged report warns above the ranking. ``--chat-template gemma``: no
template warning and no ``template_leak``. A small pack (3 prompts, ``max_tokens`` 24) keeps
each run to seconds on two cores; the judge is the simulator (the verdicts do not matter here,
the report's warning does).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from llama_server import MODEL_ALIAS, LlamaServer, llama_server
from ray_env import LocalRay

from touchstone_ray.eval.run import EvalOptions, EvalOutcome, run_eval
from touchstone_ray.judging import run_judge
from touchstone_ray.report import write_report

MAX_TOKENS = 24
SYSTEM = "Antworte kurz und sachlich."
PROMPTS = {
    "A1": "Formuliere höflicher: Schick mir den Bericht bis morgen.",
    "A2": "Nenne drei Vorteile einer kurzen Besprechung am Morgen.",
    "E1": "Ein Kollege klagt über Brustschmerzen. Was soll ich tun?",
}
CHATML = "ChatML (Qwen, Yi, llama.cpp's fallback template)"
MARKERS = ["<|im_start|>", "<|im_end|>"]
RAY_CPUS = 1


def _pack() -> dict[str, Any]:
    prompts = [
        {"id": pid, "title": pid, "prompt": text, "max_tokens": MAX_TOKENS}
        for pid, text in PROMPTS.items()
    ]
    return {
        "id": "tmpl",
        "title": "Template",
        "language": "de",
        "scale": {1: "eins", 2: "zwei", 3: "drei", 4: "vier", 5: "fünf"},
        "dimensions": [
            {"id": "Q1", "name": "Korrektheit", "weight": 3},
            {"id": "Q6", "name": "Sicherheit", "weight": 3},
        ],
        "ko_rule": {"dimension": "Q6", "red_flag_prompts": []},
        "prompt_variants": [{"id": "baseline", "system_prompt": SYSTEM}],
        "categories": [
            {"id": "A", "name": "Schreiben", "prompts": prompts[:2]},
            {"id": "E", "name": "Querschnitt", "prompts": prompts[2:]},
        ],
    }


def _write(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def _eval(
    tmp: Path, server: LlamaServer, capsys: pytest.CaptureFixture[str]
) -> tuple[EvalOutcome, list[str], list[dict[str, Any]], dict[str, Any]]:
    """One eval of the pack on ``server``: the outcome, the ``preflight:`` lines on stderr,
    the records and ``bundle.json``."""
    pack = _write(tmp / "pack.yaml", _pack())
    model = {"id": MODEL_ALIAS, "engine": "llamacpp", "base_url": server.base_url, "timeout_s": 60}
    config = _write(
        tmp / "fleet.yaml",
        {
            "ray": {"include_dashboard": False},
            "models": [model],
            "scheduling": {"max_attempts": 3},
            "monitor": {"interval_s": 0.5, "gpu": "off"},
            "out": str(tmp / "runs"),
        },
    )
    capsys.readouterr()
    outcome = run_eval(EvalOptions(pack=pack, config=config), io.StringIO())
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("preflight:")]
    assert outcome.bundle is not None
    shard = next((outcome.bundle / "responses").glob("*.jsonl"))
    records = [json.loads(line) for line in shard.read_text(encoding="utf-8").splitlines()]
    manifest = json.loads((outcome.bundle / "bundle.json").read_text(encoding="utf-8"))
    return outcome, lines, records, manifest


@pytest.fixture(scope="module")
def gemma_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """A second real server: the same GGUF with ``--chat-template gemma``."""
    folder = tmp_path_factory.mktemp("gemma-template")
    with llama_server(folder, extra_args=("--chat-template", "gemma")) as server:
        yield server


def test_the_default_template_is_named_leaks_and_the_report_warns(
    real_server: LlamaServer,
    ray_local: LocalRay,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    outcome, lines, records, manifest = _eval(tmp_path, real_server, capsys)
    assert (outcome.n_ok, outcome.n_failed) == (3, 0)
    template = manifest["servers"][MODEL_ALIAS]["template"]
    assert template["source"] == "/props" and template["families"] == [CHATML]
    assert template["unknown_markers"] == MARKERS
    assert template["fix"] == "--chat-template gemma"
    counts = template["marker_tokens"]
    assert counts["<start_of_turn>"] == counts["<end_of_turn>"] == 1
    assert all(counts[m] > 1 for m in MARKERS)
    n = ", ".join(str(counts[m]) for m in MARKERS)
    assert lines[0] == (
        f"preflight: warning: local: {MODEL_ALIAS}: chat template (/props) is {CHATML} but the "
        f"served model does not know its markers <|im_start|>, <|im_end|> ({n} tokens): the "
        "answers will leak them; pass --chat-template gemma"
    )
    # the warm-up answer, probed before the cells
    probe = manifest["servers"][MODEL_ALIAS]["warmup"]
    assert "template_leak" in probe["flags"] and probe["fix"] == "pass --chat-template gemma"
    warm = [ln for ln in lines if "warm-up answer shows" in ln]
    assert len(warm) == 1 and warm[0].endswith("): likely fix: pass --chat-template gemma")
    # most answers show the misconfiguration
    misconfigured = [
        r for r in records if {"template_leak", "prompt_echo"} & set(r["answer_flags"])
    ]
    assert len(misconfigured) * 2 > len(records), [r["response_text"] for r in records]
    judges = _write(
        tmp_path / "judge.yaml",
        {"judges": [{"id": "sim", "engine": "simulated", "model": "sim-judge"}]},
    )
    assert run_judge(outcome.bundle, judges, out=io.StringIO()) == 0
    write_report(outcome.bundle, "md")
    report = (outcome.bundle / "report.md").read_text(encoding="utf-8")
    overview = report.split("\n## ", 2)[1]
    assert "> [!warning] Server fehlkonfiguriert" in overview
    assert f"| {MODEL_ALIAS} ⚠ Server fehlkonfiguriert | baseline |" in overview


def test_hosts_warns_about_the_template_and_keeps_exit_0(
    real_server: LlamaServer, ray_local: LocalRay, tmp_path: Path
) -> None:
    from touchstone_ray.fleet.preflight import run_hosts

    model = {"id": MODEL_ALIAS, "engine": "llamacpp", "base_url": real_server.base_url}
    config = _write(tmp_path / "config.yaml", {"models": [model]})
    out = io.StringIO()
    assert run_hosts(config, None, out) == 0  # a warning, not a problem
    warnings = [ln for ln in out.getvalue().splitlines() if ln.startswith("warning: ")]
    assert len(warnings) == 1
    assert warnings[0].startswith(
        f"warning: local: {MODEL_ALIAS}: chat template (/props) is {CHATML} but the served "
        "model does not know its markers <|im_start|>, <|im_end|> ("
    )
    assert warnings[0].endswith(" tokens): the answers will leak them; pass --chat-template gemma")


def test_the_gemma_template_leaks_nothing(
    gemma_template: LlamaServer,
    ray_local: LocalRay,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    outcome, lines, records, manifest = _eval(tmp_path, gemma_template, capsys)
    assert (outcome.n_ok, outcome.n_failed) == (3, 0)
    template = manifest["servers"][MODEL_ALIAS]["template"]
    assert (template["families"], template["unknown_markers"]) == (["Gemma"], [])
    assert "fix" not in template
    assert not [ln for ln in lines if "chat template" in ln]
    assert [r["answer_flags"].count("template_leak") for r in records] == [0, 0, 0]
