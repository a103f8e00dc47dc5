"""The "prompts and answers" section: every prompt with its flags, limits and checks, every
answer with its verdicts (or a fill-in line when unjudged), its answer flags and check
outcomes, markers, timing and resource figures.

Long texts (prompt, answer, reasoning, error) are collapsed callouts; the writers show them
verbatim and escaped.
"""

from __future__ import annotations

from collections import defaultdict

from touchstone_ray.doc import (
    Block,
    Bullets,
    Callout,
    Code,
    Heading,
    Inline,
    Para,
    Strong,
    Table,
    cell,
    heading_text,
    num_cell,
)
from touchstone_ray.doc.fmt import NONE, mb, num
from touchstone_ray.pack import Prompt
from touchstone_ray.records import EvalResponse, Verdict
from touchstone_ray.report._checks import answer_check_lines, check_table, prompt_check_line
from touchstone_ray.report._data import ReportData
from touchstone_ray.report._flags import flag_table
from touchstone_ray.report._sections import prompt_heading
from touchstone_ray.report._stability import stability_table

__all__ = ["answer_blocks", "answers", "figures", "markers"]

BLANK = "________"
"""A fill-in blank in the unjudged report."""


def markers(r: EvalResponse, t: dict[str, str]) -> list[str]:
    """Cold start, prompt-cache hit, cut prompt, reasoning, truncation and failure markers of
    one answer."""
    out = []
    if r.is_cold_start:
        out.append(t["cold"])
    if r.prompt_cached:
        out.append(t["cached_mark"])
    if r.input_truncated:
        out.append(t["cut_mark"])
    if r.reasoning_only:
        out.append(t["reasoning_only"])
    elif r.reasoning_text.strip():
        out.append(t["has_reasoning"])
    if r.truncated:
        out.append(t["truncated"])
    if not r.ok:
        out.append(f"{t['gen_failed']} ({r.error_kind or NONE})")
    return out


def figures(r: EvalResponse, t: dict[str, str]) -> str:
    """One line of the answer's timing (s), throughput (tok/s), tokens and resources (MB);
    figures that were not measured are left out."""
    parts: list[str] = []

    def add(label: str, value: float | None, digits: int, unit: str) -> None:
        if value is not None:
            parts.append(f"{label} {num(value, digits)}{unit}")

    add("TTFT", r.ttft_s, 3, " s")
    add("TTFA", r.ttfa_s, 3, " s")
    add("E2E", r.e2e_s, 3, " s")
    add("TPOT", r.tpot_s, 4, " s")
    add("ITL p50", r.itl_p50_s, 4, " s")
    add("decode", r.decode_tps, 1, " tok/s")
    add("prefill", r.prefill_tps, 1, " tok/s")
    if r.prompt_tokens is not None or r.completion_tokens is not None:
        reasoning = f", {r.reasoning_tokens} reasoning" if r.reasoning_tokens else ""
        parts.append(
            f"{t['tokens']} {r.prompt_tokens if r.prompt_tokens is not None else NONE} → "
            f"{r.completion_tokens if r.completion_tokens is not None else NONE}"
            f"{reasoning} ({r.token_count_source})"
        )
    if r.finish_reason:
        parts.append(f"{t['finish']} {r.finish_reason}")
    add("queue", r.queue_wait_s, 3, " s")
    add("load", r.load_duration_s, 2, " s")
    if r.sys_used_mb is not None:
        parts.append(f"RAM {mb(r.sys_used_mb)} MB (Δ {mb(r.sys_used_delta_mb)} MB)")
    if r.gpu_mem_used_mb is not None:
        parts.append(f"GPU {mb(r.gpu_mem_used_mb)} MB (Δ {mb(r.gpu_mem_delta_mb)} MB)")
    add("GPU", r.gpu_util_pct, 0, " %")
    add("GPU", r.gpu_temp_c_max, 0, " °C")
    add("GPU", r.gpu_power_w, 0, " W")
    if r.mem_pressure_max not in (None, "normal"):
        parts.append(f"{t['pressure']} {r.mem_pressure_max}")
    if r.throttled:
        reasons = ", ".join(x for x in r.gpu_throttle_reasons or [] if x != "gpu_idle")
        parts.append(f"{t['throttled_mark']}" + (f" ({reasons})" if reasons else ""))
    parts.append(f"{t['host']} {r.host}")
    if r.attempt > 1:
        parts.append(f"attempt {r.attempt}")
    return " · ".join(parts)


def _verdict_item(v: Verdict, t: dict[str, str]) -> tuple[Inline, ...]:
    if v.score is None:
        status = t["judge_errors"] if v.status == "judge_error" else t["unscored"]
        return (
            Code(v.judge),
            f" {status} ({v.status})" + (f": {v.rationale}" if v.rationale else ""),
        )
    flag = f" {t['red_flag']}" if v.red_flag else ""
    parts: list[Inline] = [
        Code(v.judge),
        " ",
        Strong(f"{v.score}/5"),
        f"{flag} · {v.rationale or NONE}",
    ]
    if v.green_flags_hit:
        parts.append(f" · ✓ {'; '.join(v.green_flags_hit)}")
    if v.red_flags_hit:
        parts.append(f" · ✗ {'; '.join(v.red_flags_hit)}")
    return tuple(parts)


def _prompt_blocks(data: ReportData, prompt: Prompt, t: dict[str, str]) -> list[Block]:
    ko = data.pack.ko_rule
    limits = [
        f"{t['max_tokens']} {prompt.max_tokens}" if prompt.max_tokens else t["no_limit"],
        f"{t['repeats']} {prompt.repeats}",
    ]
    if prompt.safety_critical:
        limits.append(t["safety_critical"])
    if prompt.format_strict:
        limits.append(t["format_strict"])
    if prompt.id in ko.red_flag_prompts:
        limits.append(t["curated_prompt"])
    blocks: list[Block] = [Heading(4, prompt_heading(prompt))]
    if prompt.tests:
        blocks.append(Para((Strong(f"{t['tests']}: "), prompt.tests)))
    blocks.append(Para((Strong(f"{t['limits']}: "), " · ".join(limits))))
    blocks += prompt_check_line(prompt, t)
    flags = [(f"✓ {g}",) for g in prompt.green_flags] + [(f"✗ {r}",) for r in prompt.red_flags]
    if flags:
        blocks.append(Bullets(tuple(flags)))
    blocks.append(Callout("quote", f"{t['prompt']} {prompt.id}", text=prompt.prompt))
    return blocks


def _prompt_stats(data: ReportData, prompt_id: str, t: dict[str, str]) -> Table | None:
    rows = []
    for entry in data.card.prompts if data.card else []:
        stat = entry.prompts.get(prompt_id)
        if stat is None:
            continue
        lo, hi = stat.ci_low, stat.ci_high
        rows.append(
            (
                cell(entry.model),
                cell(entry.variant),
                num_cell(num(stat.mean), stat.mean),
                cell(f"[{num(lo)}, {num(hi)}]" if lo is not None and hi is not None else NONE),
                num_cell(str(stat.n), stat.n),
            )
        )
    if not rows:
        return None
    return Table((t["model"], t["variant"], t["mean"], t["ci"], "n"), tuple(rows))


def answer_blocks(data: ReportData, r: EvalResponse, t: dict[str, str]) -> list[Block]:
    """The blocks of one answer ``r``: its heading line with markers, verdicts, its flags and
    judge-free checks, figures, the answer and reasoning callouts (labels ``t``)."""
    head: list[Inline] = [Strong(f"{r.model} / {r.variant} #{r.repeat}")]
    marks = markers(r, t)
    if marks:
        head.append(" · " + " · ".join(marks))
    blocks: list[Block] = [Para(tuple(head))]
    if data.judged:
        verdicts = data.verdicts.get(r.key, [])
        if verdicts:
            blocks.append(Bullets(tuple(_verdict_item(v, t) for v in verdicts)))
    else:
        blocks.append(
            Para(
                (
                    Code(r.key),
                    f" · {t['fill_score']}: {BLANK} · {t['fill_red']}: {BLANK} · "
                    f"{t['rationale']}: {BLANK}",
                )
            )
        )
    blocks += answer_check_lines(data, r, t)
    blocks.append(Para((figures(r, t),), small=True))
    answer = r.response_text if r.response_text.strip() else t["empty"]
    if r.ok or r.response_text:
        blocks.append(Callout("quote", t["answer"], text=answer))
    if r.reasoning_text.strip():
        blocks.append(Callout("note", t["reasoning"], text=r.reasoning_text))
    if not r.ok:
        blocks.append(
            Callout("failure", t["error"], text=f"{r.error_kind or NONE}: {r.error or NONE}")
        )
    return blocks


def answers(data: ReportData, t: dict[str, str]) -> list[Block]:
    """Per category and prompt: the prompt, its per-row means (judged), every answer."""
    by_prompt: dict[str, list[EvalResponse]] = defaultdict(list)
    for r in data.responses:
        by_prompt[r.prompt_id].append(r)
    order = {k: i for i, k in enumerate(data.rows)}
    blocks: list[Block] = [
        Heading(2, t["answers"]),
        *flag_table(data, t),
        *check_table(data, t),
        *stability_table(data, t),
    ]
    for category in data.pack.categories:
        blocks.append(Heading(3, heading_text(f"{category.id} {category.name}")))
        for prompt in category.prompts:
            blocks += _prompt_blocks(data, prompt, t)
            if data.judged:
                stats = _prompt_stats(data, prompt.id, t)
                if stats is not None:
                    blocks += [Para((Strong(t["prompt_stats"]),), small=True), stats]
            responses = sorted(
                by_prompt.get(prompt.id, []),
                key=lambda r: (order.get((r.model, r.variant), len(order)), r.repeat),
            )
            for r in responses:
                blocks += answer_blocks(data, r, t)
    return blocks
