"""English: the report's glossary of metrics."""

from __future__ import annotations

GLOSSARY: tuple[tuple[str, str, str], ...] = (
    (
        "TTFT",
        "Time to the first token on any channel (reasoning or answer), from sending the "
        "request; role-only chunks, empty strings and SSE comments do not count.",
        "s",
    ),
    (
        "TTFA",
        "Time to the first answer token (reasoning excluded).",
        "s",
    ),
    (
        "E2E",
        "End-to-end latency from sending the request until the stream ends.",
        "s",
    ),
    (
        "TPOT",
        "Time per output token: (E2E − TTFT) / (completion_tokens − 1).",
        "s/token",
    ),
    (
        "ITL",
        "Inter-token latency: gaps between consecutive token-carrying chunks; p50 and p95 per "
        "answer.",
        "s",
    ),
    (
        "Decode tok/s",
        "Decode throughput: (completion_tokens − 1) / (E2E − TTFT) = 1 / TPOT (the first token "
        "arrives at TTFT).",
        "tokens/s",
    ),
    (
        "Prefill tok/s",
        "Prefill throughput: (prompt_tokens − cached_tokens) / TTFT, the tokens the server "
        "really processed (cached_tokens counts 0 only when the server reports none).",
        "tokens/s",
    ),
    (
        "p50 / p95",
        "Median and 95th percentile (linear interpolation) over ok cells without cold start; "
        "TTFT, TTFA, E2E and prefill also without prompt-cache hits.",
        "as the metric",
    ),
    (
        "CV % TTFT",
        "Coefficient of variation of TTFT: standard deviation / mean × 100.",
        "%",
    ),
    (
        "Queue wait",
        "Local waiting before the request is sent (queue_wait_s); not part of TTFT.",
        "s",
    ),
    (
        "Cold start",
        "The first timed request of a model on its host in a run (none after a warm-up); "
        "excluded from latency aggregates.",
        "–",
    ),
    (
        "Token source",
        "Where token counts come from: server (reported), estimated, missing.",
        "–",
    ),
    (
        "Baseline",
        "The host's sample right before a model starts.",
        "MB",
    ),
    (
        "Peak RAM",
        "Highest used system memory (total − available) in the cells' time windows.",
        "MB",
    ),
    (
        "Model delta",
        "Peak RAM − the baseline before the model: what the model costs the host.",
        "MB (GB in the chart)",
    ),
    (
        "Swap delta",
        "Highest swap use − baseline.",
        "MB",
    ),
    (
        "Engine RSS / engine delta",
        "RSS of the serving process and its children (found by port or engine_process), peak "
        "in the cells' windows; engine delta = that peak − its RSS at the baseline. Does not "
        "depend on what else runs on the host.",
        "MB",
    ),
    (
        "Engine CPU / foreign CPU",
        "CPU time per second of the serving process, or of every process other than the "
        "engine and touchstone; 100 = one busy core. Contended: foreign CPU > 25 % of all "
        "cores; such cells are left out of the speed figures.",
        "% of one core",
    ),
    (
        "GPU memory",
        "Highest sum of used GPU memory over all GPUs; GPU delta likewise against the baseline.",
        "MB",
    ),
    (
        "GPU util / temperature / power",
        "Maximum over samples and GPUs; power as the sum over GPUs.",
        "% / °C / W",
    ),
    (
        "Memory pressure",
        "Worst level (normal < warn < critical) from PSI some avg10 and available memory.",
        "level",
    ),
    (
        "Throttling",
        "A CPU throttle counter increase within the window, or any GPU throttle reason other "
        "than gpu_idle.",
        "cells",
    ),
    (
        "Quality %",
        "Σ(score_d × weight_d) / (5 × Σ weight_d) × 100 over the holistic dimension scores "
        "(median of the judges).",
        "%",
    ),
    (
        "Level",
        "≥ 85 high, ≥ 70 solid, ≥ 50 partial, else insufficient.",
        "–",
    ),
    (
        "K.-o.",
        "Knock-out regardless of score: the red-flag branch, then the dimension floor (see "
        "Method).",
        "–",
    ),
    (
        "Red flag / green flag",
        "Observable signs of a bad / good answer, set per prompt by the pack.",
        "–",
    ),
    (
        "Mean answer",
        "Mean of all scored verdicts (answers × judges).",
        "points 1–5",
    ),
    (
        "95 % CI",
        "Percentile bootstrap confidence interval of the mean (fixed seed).",
        "points",
    ),
    (
        "Sign test",
        "Two-sided exact test whether B beats A more often than chance (ties dropped).",
        "p",
    ),
    (
        "Krippendorff's α",
        "Agreement of the judges on dimension scores (ordinal); 1 = perfect.",
        "−1…1",
    ),
    (
        "κ (Cohen / Fleiss)",
        "Chance-corrected agreement of the judges on red flags.",
        "−1…1",
    ),
    (
        "Kendall's τ-b",
        "Rank correlation between two judges' rankings.",
        "−1…1",
    ),
    (
        "Pareto front",
        "Model variants that no other beats on both quality and decode throughput.",
        "–",
    ),
    (
        "Reasoning only",
        "No answer, only reasoning: unscored and out of every mean.",
        "–",
    ),
    (
        "Truncated",
        "Generation stopped at the token limit (finish_reason length).",
        "–",
    ),
    (
        "Prompt-cache hit",
        "The server took part of the prompt from its cache (at least 2 tokens and 5 % of the "
        "prompt; llama.cpp always reports 1, its start token; e.g. a shared "
        "system prompt or a repeat): TTFT and prefill are then not cold figures. Such cells are "
        "left out of TTFT, TTFA, E2E and prefill, counted and kept in the data; decode counts "
        "them.",
        "cells",
    ),
    (
        "TTFT cold",
        "TTFT p50 over the first cell of each prompt without a cache hit.",
        "s",
    ),
    (
        "Under load (c = N)",
        "Measured with N requests in flight (concurrency > 1). A server that queues requests "
        "internally starts one only when a slot is free: TTFT then includes the wait in its "
        "queue, and each request shares compute with the others. Not comparable with "
        "single-stream figures (c = 1); kept off the single-stream Pareto front.",
        "–",
    ),
    (
        "Prompt cut",
        "The server saw far fewer prompt tokens than were sent (< 0.8 ×) or exactly the "
        "context limit (input_truncated): the answer is to a cut prompt and stays unscored "
        "(unscored_input_truncated).",
        "–",
    ),
    (
        "Dimension score",
        "A judge's holistic score of a model variant on one dimension; with several judges "
        "the median of theirs.",
        "points 1–5",
    ),
    (
        "Variant A/B (B − A)",
        "Paired difference per prompt between variant B and variant A of one model (score, "
        "tokens, E2E, answer length), averaged over the prompts both answered.",
        "points (Δ tokens: tokens, Δ E2E: s)",
    ),
    (
        "Scored / unscored / errors",
        "Verdicts with a score, answers left without one (reasoning only, failed generation, "
        "cut prompt) and unreadable judge replies (judge errors, never a low score).",
        "verdicts",
    ),
    (
        "Band accuracy",
        "Share of the pack's calibration answers a judge puts in the expected band (high = "
        "score ≥ 4, low = ≤ 2); a judge qualifies from 0.8.",
        "0…1",
    ),
    (
        "Red-flag recall",
        "Share of the calibration answers with an expected red flag on which the judge raised "
        "one; a judge qualifies only at 1.",
        "0…1",
    ),
    (
        "Score gap",
        "Mean score a judge gave the calibration answers expected high minus those expected low.",
        "points",
    ),
    (
        "Calibration",
        "Answers written by hand with a known verdict (the pack's calibration) that each judge "
        "scores before its verdicts count.",
        "answers",
    ),
    (
        "Unknown flags",
        "Flags a judge named that are not the prompt's: left out of the verdict, kept in "
        "unknown_flags.",
        "flags",
    ),
    (
        "Judge spread",
        "Highest − lowest score one judge gave the same answer over its repeats (judge --repeats).",
        "points",
    ),
    (
        "Quality spread",
        "Lowest to highest quality % one judge gave the rows of a bundle.",
        "%",
    ),
    (
        "Outside rater",
        "An ingested rating (a person or an outside AI) against a local judge: mean |Δ| of the "
        "dimension scores, share of rows with the same K.-o. result, Δ quality %.",
        "points / share / %",
    ),
    (
        "Rubric rate",
        "Share of a judge's rationales that the outside rater marked as meeting one rubric "
        "question (cites_evidence, names_improvement, justifies_level, catches_safety), over "
        "the rationales rated 0 or 1 for it; the 95 % interval is Wilson's score interval "
        "(statsmodels proportion_confint, method wilson).",
        "share 0…1",
    ),
    (
        "Template A/B",
        "The same judge's holistic dimension score (or quality %) under the hardened template "
        "v2 minus under v1, on the same answers.",
        "points / %",
    ),
    (
        "ETA",
        "Cells (requests) left ÷ the rate at which this run finished them so far: an estimate.",
        "min, s",
    ),
    (
        "In flight",
        "Cells (requests) sent and not answered yet: at most the endpoint's concurrency.",
        "cells (requests)",
    ),
    (
        "Cell",
        "One answer of the matrix model × variant × prompt × repeat; failed: no answer after "
        "every attempt (error_kind says why).",
        "cells",
    ),
    (
        "Total tok/s",
        "Output tokens of all of a perf point's requests ÷ the point's wall time: what the "
        "server delivers to every stream together.",
        "tokens/s",
    ),
    (
        "SLO share",
        "Share of a perf point's counted requests that met every SLO target (TTFT, TPOT): its "
        "goodput.",
        "0…1",
    ),
    (
        "Send lateness",
        "How much later than scheduled a perf request was sent (the load generator's own "
        "delay); p99 per point.",
        "s",
    ),
    (
        "Capacity",
        "The highest concurrency at which ≥ 90 % of the requests meet every SLO target: users "
        "at once.",
        "users",
    ),
    (
        "Offered rate",
        "The rate an open-loop perf point's requests were due at (--rate), constant or seeded "
        "Poisson arrivals, whatever the server did.",
        "requests/s",
    ),
    (
        "Achieved rate",
        "(requests sent − 1) ÷ (last send − first send) of an open-loop point: the rate requests "
        "really went out at; below the offered rate when the load generator lagged.",
        "requests/s",
    ),
    (
        "Requests in flight",
        "An open-loop point's requests out (sent, not yet answered) at the moment each one was "
        "sent, itself included; p50 and max per point, at most --max-in-flight.",
        "requests",
    ),
    (
        "Dropped",
        "Requests of an open-loop point that were due while --max-in-flight requests were out: "
        "not sent (never sent late); the point counts as saturated.",
        "requests",
    ),
    (
        "Saturated",
        "An open-loop point stopped early because the server fell behind for good: the "
        "least-squares slope of in-flight over the last 3 s kept its 95 % interval above zero "
        "(and ≥ 4 requests of growth) for 3 s, or a request was dropped. Its figures are kept.",
        "yes/no",
    ),
    (
        "Goodput",
        "Requests of a perf point that met every SLO target ÷ the point's wall time.",
        "requests/s",
    ),
    (
        "Closed-loop throughput",
        "Requests a closed-loop perf point answered ÷ its wall time; --sweep measures it at "
        "c = 1 and at the highest --concurrency and spreads its rates between the two.",
        "requests/s",
    ),
    (
        "Sustainable rate",
        "The highest offered rate of a --sweep that did not saturate, dropped nothing and at "
        "which ≥ 90 % of the requests met every SLO target.",
        "requests/s",
    ),
    (
        "Excluded",
        "Requests of a perf point left out of its figures, by reason (failed, contended, "
        "throttled; prompt-cached ones count for decode only).",
        "requests",
    ),
    (
        "Entry duration",
        "Wall time of a queue entry, from its start (host reset and settle included) to the "
        "end of its last stage (run, judge, report).",
        "s",
    ),
)
"""The report's glossary: (term, definition, unit) for every metric (SPEC §9)."""
