"""German: the report's glossary of metrics."""

from __future__ import annotations

GLOSSARY: tuple[tuple[str, str, str], ...] = (
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
    (
        "Dimensionspunkte",
        "Die ganzheitliche Bewertung einer Modell-Variante durch einen Judge in einer "
        "Dimension; bei mehreren Judges deren Median.",
        "Punkte 1–5",
    ),
    (
        "Varianten-A/B (B − A)",
        "Gepaarte Differenz je Prompt zwischen Variante B und Variante A eines Modells (Punkte, "
        "Token, E2E, Antwortlänge), gemittelt über die Prompts, die beide beantwortet haben.",
        "Punkte (Δ Token: Token, Δ E2E: s)",
    ),
    (
        "Bewertet / unbewertet / Fehler",
        "Urteile mit Punkten, Antworten ohne Punkte (nur Reasoning, fehlgeschlagene "
        "Generierung, gekürzter Prompt) und unlesbare Judge-Antworten (Judge-Fehler, nie eine "
        "niedrige Punktzahl).",
        "Urteile",
    ),
    (
        "Band-Treffer",
        "Anteil der Kalibrierungsantworten des Packs, die ein Judge ins erwartete Band setzt "
        "(hoch = ≥ 4 Punkte, niedrig = ≤ 2); ein Judge qualifiziert sich ab 0,8.",
        "0…1",
    ),
    (
        "Red-Flag-Recall",
        "Anteil der Kalibrierungsantworten mit erwarteter Red Flag, bei denen der Judge eine "
        "gesetzt hat; ein Judge qualifiziert sich nur mit 1.",
        "0…1",
    ),
    (
        "Abstand hoch − niedrig",
        "Mittlere Punktzahl eines Judges für die als hoch erwarteten Kalibrierungsantworten "
        "minus die für die als niedrig erwarteten.",
        "Punkte",
    ),
    (
        "Kalibrierung",
        "Von Hand geschriebene Antworten mit bekanntem Urteil (die Kalibrierung des Packs), die "
        "jeder Judge bewertet, bevor seine Urteile zählen.",
        "Antworten",
    ),
    (
        "Unbekannte Flags",
        "Flags, die ein Judge nennt und die nicht zum Prompt gehören: nicht im Urteil, in "
        "unknown_flags aufbewahrt.",
        "Flags",
    ),
    (
        "Judge-Streuung",
        "Höchste − niedrigste Punktzahl, die ein Judge derselben Antwort über seine "
        "Wiederholungen gab (judge --repeats).",
        "Punkte",
    ),
    (
        "Qualitätsspanne",
        "Niedrigste bis höchste Qualität %, die ein Judge den Zeilen eines Bundles gab.",
        "%",
    ),
    (
        "Externe Bewertung",
        "Eine eingelesene Bewertung (ein Mensch oder eine externe KI) gegen einen lokalen "
        "Judge: mittleres |Δ| der Dimensionspunkte, Anteil der Zeilen mit gleichem "
        "K.-o.-Ergebnis, Δ Qualität %.",
        "Punkte / Anteil / %",
    ),
    (
        "Rubrikquote",
        "Anteil der Begründungen eines Judges, die die externe Bewertung als erfüllt für eine "
        "Rubrikfrage markiert hat (cites_evidence, names_improvement, justifies_level, "
        "catches_safety), über die dafür mit 0 oder 1 bewerteten Begründungen; das 95-%-"
        "Intervall ist Wilsons Score-Intervall (statsmodels proportion_confint, Methode wilson).",
        "Anteil 0…1",
    ),
    (
        "Vorlagen-A/B",
        "Die holistische Dimensionspunktzahl (oder Qualität %) desselben Judges mit der "
        "gehärteten Vorlage v2 minus mit v1, auf denselben Antworten.",
        "Punkte / %",
    ),
    (
        "Restzeit",
        "Verbleibende Zellen (Anfragen) ÷ das bisherige Tempo dieses Laufs: eine Schätzung.",
        "min, s",
    ),
    (
        "In Arbeit",
        "Gesendete, noch nicht beantwortete Zellen (Anfragen): höchstens die Parallelität des "
        "Endpunkts.",
        "Zellen (Anfragen)",
    ),
    (
        "Zelle",
        "Eine Antwort der Matrix Modell × Variante × Prompt × Wiederholung; fehlgeschlagen: "
        "keine Antwort nach allen Versuchen (error_kind sagt, warum).",
        "Zellen",
    ),
    (
        "Gesamt-tok/s",
        "Ausgabe-Token aller Anfragen eines Perf-Punkts ÷ seine Laufzeit: was der Server allen "
        "Strömen zusammen liefert.",
        "Token/s",
    ),
    (
        "SLO-Anteil",
        "Anteil der gezählten Anfragen eines Perf-Punkts, die jedes SLO-Ziel (TTFT, TPOT) "
        "einhielten: sein Goodput.",
        "0…1",
    ),
    (
        "Sendeverzug",
        "Um wie viel später als geplant eine Perf-Anfrage gesendet wurde (die eigene "
        "Verzögerung des Lastgenerators); p99 je Punkt.",
        "s",
    ),
    (
        "Kapazität",
        "Die höchste Parallelität, bei der ≥ 90 % der Anfragen jedes SLO-Ziel einhalten: "
        "gleichzeitige Nutzer.",
        "Nutzer",
    ),
    (
        "Angebotene Rate",
        "Die Rate, zu der die Anfragen eines Open-Loop-Perf-Punkts fällig waren (--rate), "
        "gleichmäßig oder als Poisson-Prozess mit Seed, egal was der Server tat.",
        "Anfragen/s",
    ),
    (
        "Erreichte Rate",
        "(gesendete Anfragen − 1) ÷ (letztes Senden − erstes Senden) eines Open-Loop-Punkts: "
        "die Rate, zu der Anfragen wirklich hinausgingen; unter der angebotenen, wenn der "
        "Lastgenerator zurückfiel.",
        "Anfragen/s",
    ),
    (
        "Anfragen in Arbeit",
        "Offene Anfragen (gesendet, noch nicht beantwortet) eines Open-Loop-Punkts im Moment "
        "jedes Sendens, die eigene mitgezählt; p50 und Maximum je Punkt, höchstens "
        "--max-in-flight.",
        "Anfragen",
    ),
    (
        "Verworfen",
        "Anfragen eines Open-Loop-Punkts, die fällig waren, während --max-in-flight Anfragen "
        "offen waren: nicht gesendet (nie verspätet gesendet); der Punkt gilt als überlastet.",
        "Anfragen",
    ),
    (
        "Überlastet",
        "Ein Open-Loop-Punkt endete früh, weil der Server dauerhaft zurückfiel: die Steigung "
        "der Kleinste-Quadrate-Geraden der offenen Anfragen über die letzten 3 s blieb 3 s lang "
        "mit ihrem 95-%-Intervall über null (und ≥ 4 Anfragen Zuwachs), oder eine Anfrage "
        "wurde verworfen. Seine Werte bleiben erhalten.",
        "ja/nein",
    ),
    (
        "Goodput",
        "Anfragen eines Perf-Punkts, die jedes SLO-Ziel einhielten ÷ seine Laufzeit.",
        "Anfragen/s",
    ),
    (
        "Closed-Loop-Durchsatz",
        "Beantwortete Anfragen eines Closed-Loop-Perf-Punkts ÷ seine Laufzeit; --sweep misst "
        "ihn bei c = 1 und bei der höchsten --concurrency und verteilt seine Raten dazwischen.",
        "Anfragen/s",
    ),
    (
        "Tragbare Rate",
        "Die höchste angebotene Rate eines --sweep, die nicht überlastete, nichts verwarf und "
        "bei der ≥ 90 % der Anfragen jedes SLO-Ziel einhielten.",
        "Anfragen/s",
    ),
    (
        "Ausgeschlossen",
        "Anfragen eines Perf-Punkts, die nicht in seine Werte eingehen, nach Grund "
        "(fehlgeschlagen, belastet, gedrosselt; Prompt-Cache-Treffer zählen nur für Decode).",
        "Anfragen",
    ),
    (
        "Dauer des Eintrags",
        "Wanduhrzeit eines Warteschlangen-Eintrags von seinem Start (Zurücksetzen und "
        "Abklingen des Hosts eingeschlossen) bis zum Ende seiner letzten Stufe (Lauf, Judge, "
        "Bericht).",
        "s",
    ),
)
"""The report's glossary: (term, definition, unit) for every metric (SPEC §9)."""
