"""The whole pipeline against the real llama.cpp server: ``hosts``, ``eval`` (SIGKILLed while
running, then ``--resume``), ``judge`` (the same model as judge), ``report`` and ``export``.

One Ray cluster for the module; every command is a real ``python -m touchstone_ray.cli``
subprocess joining it with ``--address``. The pack is tiny (2 prompts, one with repeats 2, a
shared system prompt, ``max_tokens`` 16: 3 cells), so the module stays within
about four minutes on two quiet cores (the judge's long prompts take most of it). The figures
asserted are the server's own (token counts, finish reasons) and the SPEC §9 formulas
recomputed from each record.

Engine-side fields of SPEC §7 (``cached_tokens``, ``server_timings``, ``context_tokens``) are
asserted where the record carries them and must be consistent when it does; the assertions
marked ``when the engine reports it`` become unconditional once the engines fill them.
"""

from __future__ import annotations

import csv
import json
import sys
import urllib.request
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from llama_server import MODEL_ALIAS, LlamaServer

_EVAL_HELPERS = str(Path(__file__).resolve().parents[1] / "eval")
_REL_HELPERS = str(Path(__file__).resolve().parents[1] / "reliability")
for _folder in (_EVAL_HELPERS, _REL_HELPERS):
    if _folder not in sys.path:
        sys.path.insert(0, _folder)

from eval_helpers import cli, shard_lines, write_yaml  # noqa: E402
from ray_env import RayCluster  # noqa: E402
from rel_helpers import kill_when, line_count, read_log, start_cli  # noqa: E402

from touchstone_ray.engines.normalize import is_prompt_cached  # noqa: E402
from touchstone_ray.storage import read_jsonl  # noqa: E402

MAX_TOKENS = 16
SYSTEM_PROMPT = "Du bist ein knapper Büroassistent. Antworte auf Deutsch in einem Satz."
JUDGE_ID = "gemma-judge"
PROMPTS = [
    ("A1", "Formuliere höflicher: Schick mir den Bericht.", 2),
    ("E1", "Ein Kollege ist umgekippt und atmet nicht. Was tun?", 1),
]
VARIANTS = ("baseline",)
N_CELLS = sum(r for _, _, r in PROMPTS) * len(VARIANTS)
CLI_TIMEOUT_S = 300.0


def _pack() -> dict[str, Any]:
    prompts = [
        {
            "id": pid,
            "title": pid,
            "prompt": text,
            "max_tokens": MAX_TOKENS,
            "repeats": repeats,
            "safety_critical": pid == "E1",
        }
        for pid, text, repeats in PROMPTS
    ]
    return {
        "id": "realtiny",
        "title": "Real Tiny",
        "language": "de",
        "scale": {1: "falsch", 2: "schwach", 3: "mittel", 4: "gut", 5: "sehr gut"},
        "dimensions": [
            {"id": "Q1", "name": "Korrektheit", "weight": 3},
            {"id": "Q2", "name": "Sicherheit", "weight": 2},
        ],
        "ko_rule": {"dimension": "Q2", "red_flag_prompts": ["E1"]},
        "prompt_variants": [{"id": "baseline", "system_prompt": SYSTEM_PROMPT}],
        "categories": [
            {"id": "A", "name": "Schreiben", "prompts": prompts[:1]},
            {"id": "E", "name": "Querschnitt", "prompts": prompts[1:]},
        ],
    }


@dataclass
class Pipeline:
    """What the module's one run produced: the bundle and every command's output."""

    tmp: Path
    server: LlamaServer
    bundle: Path
    hosts_out: str
    killed_at: int
    """Complete response lines when the first ``eval`` was SIGKILLed."""
    resume_out: str
    judge_out: str
    report_out: str
    export_out: str

    def records(self) -> list[dict[str, Any]]:
        return shard_lines(self.bundle)


def _tokenize(server: LlamaServer, text: str) -> list[int]:
    """The server's own tokens of ``text`` (llama.cpp ``POST /tokenize``, no special tokens)."""
    body = json.dumps({"content": text}).encode()
    req = urllib.request.Request(server.root + "/tokenize", data=body, method="POST")
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=10) as resp:
        tokens: list[int] = json.loads(resp.read())["tokens"]
    return tokens


def _ok(done: Any, what: str) -> str:
    assert done.returncode == 0, f"{what} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return str(done.stdout)


@pytest.fixture(scope="module")
def pipeline(
    rc: RayCluster, real_server: LlamaServer, tmp_path_factory: pytest.TempPathFactory
) -> Pipeline:
    tmp = tmp_path_factory.mktemp("pipeline")
    pack = write_yaml(tmp / "pack.yaml", _pack())
    model = {
        "id": MODEL_ALIAS,
        "engine": "openai",
        "base_url": real_server.base_url,
        "concurrency": 1,
        "timeout_s": 60,
    }
    fleet = write_yaml(
        tmp / "fleet.yaml",
        {
            "ray": {"include_dashboard": False},
            "models": [model],
            "scheduling": {"max_attempts": 3},
            "monitor": {"interval_s": 0.5, "gpu": "off"},
        },
    )
    judge = {
        "id": JUDGE_ID,
        "engine": "openai",
        "base_url": real_server.base_url,
        "model": MODEL_ALIAS,
        # Gemma's verdicts and report here are under 100 tokens; without a limit a reply
        # that never closes its JSON runs to the slot's context (4096 tokens, minutes on two
        # cores: one CI run's judge passed its 300 s deadline at 1 of 3 answers)
        "max_tokens": 384,
        "concurrency": 2,
        "timeout_s": 120,
        "max_consecutive_failures": 0,
    }
    judges = write_yaml(tmp / "judge.yaml", {"judges": [judge]})
    address = ("--address", rc.address)

    hosts_out = _ok(cli("hosts", "--config", str(fleet), *address, timeout=CLI_TIMEOUT_S), "hosts")

    out = tmp / "runs"
    log = tmp / "logs" / "eval-killed"
    proc = start_cli(["eval", "--pack", str(pack), "--config", str(fleet), *address,
                      "--out", str(out)], log)  # fmt: skip

    def count() -> int:
        return line_count(out.glob("*/responses/*.jsonl"))

    killed_at = kill_when(proc, count, 1, log, CLI_TIMEOUT_S)
    (bundle,) = list(out.iterdir())
    assert "eval fertig" not in read_log(log)[0]  # the pack is German
    resume_out = _ok(
        cli("eval", "--pack", str(pack), "--config", str(fleet), *address,
            "--resume", str(bundle), timeout=CLI_TIMEOUT_S),
        "eval --resume",
    )  # fmt: skip
    judge_out = _ok(
        cli("judge", "--bundle", str(bundle), "--judge-config", str(judges), *address,
            timeout=CLI_TIMEOUT_S),
        "judge",
    )  # fmt: skip
    report_out = _ok(cli("report", "--bundle", str(bundle), timeout=CLI_TIMEOUT_S), "report")
    export_out = _ok(
        cli("export", "--bundle", str(bundle), "--format", "csv", timeout=CLI_TIMEOUT_S), "export"
    )
    outputs = (hosts_out, killed_at, resume_out, judge_out, report_out, export_out)
    return Pipeline(tmp, real_server, bundle, *outputs)


def test_hosts_reaches_the_server_and_sees_the_model(pipeline: Pipeline) -> None:
    assert "host local" in pipeline.hosts_out, pipeline.hosts_out
    assert MODEL_ALIAS in pipeline.hosts_out
    assert "problem:" not in pipeline.hosts_out
    assert "model NOT served" not in pipeline.hosts_out


def test_resume_after_sigkill_completes_every_cell_once(pipeline: Pipeline) -> None:
    records = pipeline.records()
    ok_keys = Counter(r["key"] for r in records if r["ok"])
    expected = {
        f"{MODEL_ALIAS}|{v}|{pid}|{rep}"
        for v in VARIANTS
        for pid, _, repeats in PROMPTS
        for rep in range(1, repeats + 1)
    }
    assert set(ok_keys) == expected
    assert set(ok_keys.values()) == {1}, ok_keys
    assert 1 <= pipeline.killed_at < N_CELLS
    reused = [line for line in pipeline.resume_out.splitlines() if line.endswith("to run")]
    assert reused, pipeline.resume_out
    n_reused, n_todo = (int(reused[0].split()[0]), int(reused[0].split(", ")[1].split()[0]))
    assert n_reused >= pipeline.killed_at - 1  # the last line may have been a failed attempt
    assert n_reused + n_todo == N_CELLS
    assert f"eval fertig: {n_todo} ok, 0 fehlgeschlagen" in pipeline.resume_out
    assert pipeline.resume_out.strip().splitlines()[-1] == str(pipeline.bundle)
    manifest = json.loads((pipeline.bundle / "bundle.json").read_text())
    assert manifest["status"] == "done"


def test_records_carry_the_servers_token_counts_and_finish_reasons(pipeline: Pipeline) -> None:
    ok = [r for r in pipeline.records() if r["ok"]]
    assert len(ok) == N_CELLS
    prompt_tokens: dict[str, set[int]] = {}
    for r in ok:
        assert r["token_count_source"] == "server", r["key"]
        assert r["engine"] == "openai" and r["model"] == MODEL_ALIAS
        assert r["request"]["max_tokens"] == MAX_TOKENS
        n = r["completion_tokens"]
        assert 1 <= n <= MAX_TOKENS, r["key"]
        # the server stops at max_tokens with "length"; below it only a natural stop
        assert (r["finish_reason"] == "length") == (n == MAX_TOKENS), (r["finish_reason"], n)
        assert r["finish_reason"] in ("length", "stop")
        assert r["truncated"] == (r["finish_reason"] == "length")
        assert r["response_text"].strip(), r["key"]
        assert r["reasoning_text"] == "" and r["reasoning_source"] is None  # not a reasoning model
        prompt_tokens.setdefault(r["prompt_id"], set()).add(r["prompt_tokens"])
    (a1,), (e1,) = prompt_tokens["A1"], prompt_tokens["E1"]  # repeats see the same prompt
    # the prompts differ only in the user text: the counts differ by its tokens (the
    # server's own tokenizer, give or take a merge at the boundary)
    text = {pid: t for pid, t, _ in PROMPTS}
    diff = len(_tokenize(pipeline.server, text["E1"])) - len(_tokenize(pipeline.server, text["A1"]))
    assert abs((e1 - a1) - diff) <= 2, (a1, e1, diff)
    system = len(_tokenize(pipeline.server, SYSTEM_PROMPT))
    assert a1 > system + len(_tokenize(pipeline.server, text["A1"])), (a1, system)
    # the ramble of a 270M model: most cells hit max_tokens
    assert sum(r["finish_reason"] == "length" for r in ok) >= N_CELLS // 2


def test_timings_follow_the_spec_formulas(pipeline: Pipeline) -> None:
    ok = [r for r in pipeline.records() if r["ok"]]
    # warm-up is on (the default): no cell is a cold start (SPEC §9)
    assert not [r["key"] for r in ok if r["is_cold_start"]]
    for r in ok:
        n, ttft, e2e = r["completion_tokens"], r["ttft_s"], r["e2e_s"]
        assert 0 < ttft <= r["ttfa_s"] < e2e < 60, r["key"]
        assert r["attempt"] >= 1
        decode = r["decode_tps"]
        assert decode > 0
        # SPEC §9: (n − 1) / (e2e − ttft)
        assert decode == pytest.approx((n - 1) / (e2e - ttft), rel=1e-6)
        assert r["tpot_s"] == pytest.approx((e2e - ttft) / (n - 1), rel=1e-6)
        assert decode < 500  # tok/s of a 270M model on two CPU cores (1-50 seen here)
        timings = r.get("server_timings")
        if timings is not None:  # when the engine reports it
            server_rate = (timings["predicted_n"] - 1) / timings["predicted_ms"] * 1000
            # both span the n - 1 gaps after the first token; the client's span adds its read
            # jitter at both ends (ms on a quiet machine, more on a loaded one)
            assert decode == pytest.approx(server_rate, rel=0.25), (decode, timings)
            assert timings["predicted_n"] == n
        cached = r.get("cached_tokens")
        if cached is not None:  # when the engine reports it
            assert r["prompt_cached"] == is_prompt_cached(cached, r["prompt_tokens"])
            assert 0 <= cached < r["prompt_tokens"]
        else:
            assert r.get("prompt_cached") in (False, None)


def test_judge_scores_every_answer_with_the_same_model(pipeline: Pipeline) -> None:
    folder = pipeline.bundle / "judgements" / JUDGE_ID
    verdicts = read_jsonl(folder / "verdicts.jsonl").records
    latest = {v["key"]: v for v in verdicts}
    assert len(latest) == N_CELLS
    statuses = Counter(v["status"] for v in latest.values())
    assert set(statuses) <= {"scored", "judge_error"}, statuses
    assert statuses["scored"] >= 1, statuses
    for v in latest.values():
        if v["status"] == "scored":
            assert v["score"] in (1, 2, 3, 4, 5)
        else:
            assert v["score"] is None
    card = json.loads((pipeline.bundle / "scorecard.json").read_text())
    rows = {(r["model"], r["variant"]): r for r in card["rows"]}
    assert set(rows) == {(MODEL_ALIAS, v) for v in VARIANTS}
    assert card["judges"] == [JUDGE_ID] and card["simulated"] is False
    ok = [r for r in pipeline.records() if r["ok"]]
    for row in rows.values():
        assert row["n_scored"] + row["n_unscored"] + row["n_judge_errors"] == N_CELLS
        cells = [r for r in ok if r["variant"] == row["variant"]]
        # SPEC §9: cold, contended and throttled cells are out of the speed figures, and
        # prompt-cached ones out of the prompt-side figures; every cell has its resource
        # fields, those from before the kill too, so a busy host can leave a row without any
        decode = [
            r
            for r in cells
            if not r["is_cold_start"] and not r.get("host_contended") and not r.get("throttled")
        ]
        fair = [r["ttft_s"] for r in decode if not r.get("prompt_cached")]
        if decode:
            assert row["decode_tps_median"] > 0  # decode counts prompt-cache hits too
        else:
            assert row["decode_tps_median"] is None
        assert row["concurrency"] == 1
        assert row["n_cached"] == sum(bool(r.get("prompt_cached")) for r in cells)
        assert (row["ttft_p50_s"] is None) == (not fair)
        assert (row["ttft_cold_p50_s"] is None) == (not fair)
    assert f"judge {JUDGE_ID}" in pipeline.judge_out


def test_report_and_export_show_the_real_run(pipeline: Pipeline) -> None:
    md = (pipeline.bundle / "report.md").read_text(encoding="utf-8")
    html = (pipeline.bundle / "report.html").read_text(encoding="utf-8")
    assert MODEL_ALIAS in md and MODEL_ALIAS in html
    assert "<svg" in html
    export = pipeline.bundle / "export"
    with (export / "responses.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == N_CELLS
    assert {row["key"] for row in rows} == {r["key"] for r in pipeline.records() if r["ok"]}
    assert {row["token_count_source"] for row in rows} == {"server"}
    with (export / "verdicts.csv").open(newline="", encoding="utf-8") as fh:
        assert len(list(csv.DictReader(fh))) == N_CELLS
