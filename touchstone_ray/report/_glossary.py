"""The report's glossary: every metric with its definition and unit (SPEC §9), per language."""

from __future__ import annotations

__all__ = ["GLOSSARY"]

_DE: tuple[tuple[str, str, str], ...] = (
    (
        "TTFT",
        "Zeit bis zum ersten Token auf irgendeinem Kanal (Reasoning oder Antwort), gemessen "
        "ab dem Absenden der Anfrage; Rollen-Chunks, leere Strings und SSE-Kommentare zählen "
        "nicht.",
        "s",
    ),
    (
        "TTFA",
        "Zeit bis zum ersten Antwort-Token (ohne Reasoning).",
        "s",
    ),
    (
        "E2E",
        "Gesamtlatenz vom Absenden bis zum Ende des Streams.",
        "s",
    ),
    (
        "TPOT",
        "Zeit pro Ausgabe-Token: (E2E − TTFT) / (completion_tokens − 1).",
        "s/Token",
    ),
    (
        "ITL",
        "Inter-Token-Latenz: Abstände zwischen aufeinanderfolgenden Token-Chunks; p50 und p95 "
        "je Antwort.",
        "s",
    ),
    (
        "Decode tok/s",
        "Decode-Durchsatz: (completion_tokens − 1) / (E2E − TTFT) = 1 / TPOT (das erste Token "
        "kommt bei TTFT).",
        "Token/s",
    ),
    (
        "Prefill tok/s",
        "Prefill-Durchsatz: (prompt_tokens − cached_tokens) / TTFT, also nur die Token, die "
        "der Server wirklich verarbeitet hat (cached_tokens = 0 nur, wenn er keine meldet).",
        "Token/s",
    ),
    (
        "p50 / p95",
        "Median und 95. Perzentil (lineare Interpolation) über die erfolgreichen Zellen ohne "
        "Kaltstart; TTFT, TTFA, E2E und Prefill auch ohne Prompt-Cache-Treffer.",
        "wie die Metrik",
    ),
    (
        "CV % TTFT",
        "Variationskoeffizient der TTFT: Standardabweichung / Mittelwert × 100.",
        "%",
    ),
    (
        "Warteschlange",
        "Lokale Wartezeit vor dem Absenden (queue_wait_s); nicht in TTFT enthalten.",
        "s",
    ),
    (
        "Kaltstart",
        "Die erste gemessene Anfrage eines Modells auf seinem Host in einem Lauf (nach einem "
        "Warm-up keine); aus Latenz-Aggregaten ausgeschlossen.",
        "–",
    ),
    (
        "Token-Quelle",
        "Woher die Token-Zahlen stammen: server (gemeldet), estimated (geschätzt), missing.",
        "–",
    ),
    (
        "Baseline",
        "Messpunkt des Hosts unmittelbar bevor ein Modell startet.",
        "MB",
    ),
    (
        "Peak-RAM",
        "Höchster belegter Systemspeicher (gesamt − verfügbar) im Zeitfenster der Zellen.",
        "MB",
    ),
    (
        "Modell-Δ",
        "Peak-RAM − Baseline vor dem Modell: was das Modell den Host kostet.",
        "MB (im Diagramm GB)",
    ),
    (
        "Swap-Δ",
        "Höchster Swap-Verbrauch − Baseline.",
        "MB",
    ),
    (
        "Engine-RSS / Engine-Δ",
        "RSS des Serverprozesses samt Kindprozessen (per Port oder engine_process gefunden), "
        "Höchstwert im Zeitfenster; Engine-Δ = dieser Wert − sein RSS an der Baseline. Hängt "
        "nicht davon ab, was sonst auf dem Host läuft.",
        "MB",
    ),
    (
        "Engine-CPU / fremde CPU",
        "CPU-Zeit des Serverprozesses bzw. aller anderen Prozesse außer Engine und touchstone "
        "je Sekunde; 100 = ein voll belegter Kern. Belastet: fremde CPU > 25 % aller Kerne; "
        "solche Zellen zählen nicht in die Geschwindigkeitswerte.",
        "% eines Kerns",
    ),
    (
        "GPU-Speicher",
        "Höchste Summe des belegten GPU-Speichers aller GPUs; GPU-Δ analog zur Baseline.",
        "MB",
    ),
    (
        "GPU-Auslastung / -Temperatur / -Leistung",
        "Maximum über Messpunkte und GPUs; Leistung als Summe aller GPUs.",
        "% / °C / W",
    ),
    (
        "Speicherdruck",
        "Schlechteste Stufe (normal < warn < critical) aus PSI some avg10 und verfügbarem "
        "Speicher.",
        "Stufe",
    ),
    (
        "Drosselung",
        "Ein Anstieg des CPU-Drosselzählers im Zeitfenster oder ein GPU-Drosselgrund außer "
        "gpu_idle.",
        "Zellen",
    ),
    (
        "Qualität %",
        "Σ(Punkte_d × Gewicht_d) / (5 × Σ Gewicht_d) × 100 über die holistischen "
        "Dimensionspunkte (Median der Judges).",
        "%",
    ),
    (
        "Stufe",
        "≥ 85 hoch, ≥ 70 solide, ≥ 50 teilweise, sonst ungenügend.",
        "–",
    ),
    (
        "K.-o.",
        "Ausschluss trotz Punktzahl: Red-Flag-Zweig, dann Dimensions-Boden (siehe Methode).",
        "–",
    ),
    (
        "Red Flag / Green Flag",
        "Beobachtbare Zeichen einer schlechten / guten Antwort, vom Pack je Prompt festgelegt.",
        "–",
    ),
    (
        "Ø Antwort",
        "Mittelwert aller bewerteten Einzelurteile (Antworten × Judges).",
        "Punkte 1–5",
    ),
    (
        "95-%-KI",
        "Perzentil-Bootstrap-Konfidenzintervall des Mittelwerts (fester Seed).",
        "Punkte",
    ),
    (
        "Vorzeichentest",
        "Zweiseitiger exakter Test, ob B öfter besser ist als A (Gleichstände entfallen).",
        "p",
    ),
    (
        "Krippendorffs α",
        "Übereinstimmung der Judges auf den Dimensionspunkten (ordinal); 1 = perfekt.",
        "−1…1",
    ),
    (
        "κ (Cohen / Fleiss)",
        "Übereinstimmung der Judges auf Red Flags, bereinigt um Zufall.",
        "−1…1",
    ),
    (
        "Kendalls τ-b",
        "Rangkorrelation zwischen den Ranglisten zweier Judges.",
        "−1…1",
    ),
    (
        "Pareto-Front",
        "Modell-Varianten, die keine andere zugleich an Qualität und Decode-Durchsatz übertrifft.",
        "–",
    ),
    (
        "Nur Reasoning",
        "Keine Antwort, nur Reasoning: unbewertet und aus allen Mittelwerten ausgeschlossen.",
        "–",
    ),
    (
        "Abgeschnitten",
        "Die Generierung endete am Token-Limit (finish_reason length).",
        "–",
    ),
    (
        "Prompt-Cache-Treffer",
        "Der Server nahm einen Teil des Prompts aus seinem Cache (mindestens 2 Token und 5 % des "
        "Prompts; llama.cpp meldet immer 1 Token, sein Start-Token; z. B. ein "
        "gemeinsamer System-Prompt oder eine Wiederholung): TTFT und Prefill sind dann keine "
        "kalten Werte. Solche Zellen fehlen in TTFT, TTFA, E2E und Prefill, werden gezählt und "
        "bleiben in den Daten; Decode zählt sie.",
        "Zellen",
    ),
    (
        "TTFT kalt",
        "TTFT p50 über die erste Zelle ohne Cache-Treffer je Prompt.",
        "s",
    ),
    (
        "Unter Last (c = N)",
        "Mit N gleichzeitigen Anfragen (concurrency > 1) gemessen. Ein Server, der Anfragen "
        "intern einreiht, beginnt eine Anfrage erst, wenn ein Platz frei ist: TTFT enthält "
        "dann die Wartezeit in seiner Warteschlange, und jede Anfrage teilt sich die Rechenzeit "
        "mit den anderen. Nicht mit Einzelmessungen (c = 1) vergleichbar; nicht auf der "
        "Pareto-Front der Einzelmessungen.",
        "–",
    ),
    (
        "Prompt gekürzt",
        "Der Server sah deutlich weniger Prompt-Token als gesendet (< 0,8 ×) oder genau das "
        "Kontextlimit (input_truncated): Die Antwort gilt einem gekürzten Prompt und bleibt "
        "unbewertet (unscored_input_truncated).",
        "–",
    ),
)

_EN: tuple[tuple[str, str, str], ...] = (
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
)

GLOSSARY: dict[str, tuple[tuple[str, str, str], ...]] = {"de": _DE, "en": _EN}
"""Language → (term, definition, unit) rows."""
