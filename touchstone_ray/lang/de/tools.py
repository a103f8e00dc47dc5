"""Deutsch: die Beschriftungen des Werkzeug-Berichts, seines gepaarten Vergleichs und seiner
Seiten in der Web-Oberfläche (SPEC §7c; die ``language`` des Packs wählt die Tabelle).
``d_<key>`` ist die Definition der Zahl unter der Beschriftung ``<key>``: der Bericht listet
sie auf, die Spaltenköpfe im HTML tragen sie als Tooltip."""

from __future__ import annotations

TOOLS: dict[str, str] = {
    # report: setup
    "title": "Werkzeug-Bericht",
    "setup": "Aufbau",
    "pack": "Pack",
    "checks_fingerprint": "Fingerabdruck der Prüfungen",
    "pack_fingerprint": "Fingerabdruck des Packs",
    "status": "Status",
    "models": "Modelle",
    "hosts": "Hosts",
    "items": "Aufgaben",
    "cells": "Zellen",
    "started": "Gestartet",
    "finished": "Beendet",
    "simulated_title": "Simuliert",
    "simulated": (
        "Simuliert: Ein simuliertes Modell hat diese Zellen erzeugt; sie zeigen den Ablauf "
        "und sagen nichts über echte Modelle."
    ),
    "malformed": (
        "{n} Zeilen in cells/ wurden beim Lesen übersprungen (fehlerhaft oder keine Zelle)."
    ),
    "running_note": "Der Lauf geht noch: {done} von {planned} Zellen haben einen Eintrag.",
    # report: per model
    "per_model": "Je Modell",
    "model": "Modell",
    "host": "Host",
    "passed": "bestanden",
    "pass_pct": "bestanden %",
    "ci": "95-%-KI",
    "checks": "Prüfungen ok/falsch/n.g.",
    "cutoffs": "Längen-Abbrüche",
    "empty_args": "leere Argumente",
    "schema_errors": "Schemafehler",
    "transport": "Übertragungsfehler",
    "http_4xx": "4xx",
    "missing": "fehlend",
    "tokens_median": "Antwort-Tok/Zelle",
    "tokens_total": "Antwort-Tok Σ",
    "reasoning_median": "Reasoning-Tok/Zelle",
    "reasoning_total": "Reasoning-Tok Σ",
    "run_s": "Laufzeit Σ s",
    "wall_s": "Wanduhr s",
    "turns": "Züge/Zelle",
    "decode_tps": "Decode tok/s",
    "d_passed": (
        "Bestandene Zellen von den bewerteten (ok, mindestens eine Prüfung gemessen); eine "
        "Zelle besteht, wenn jede gemessene Prüfung ok ist. Übertragungsfehler sind kein "
        "Ergebnis des Modells und zählen nicht."
    ),
    "d_pass_pct": "bestanden / bewertet × 100 (%).",
    "d_ci": "Wilsons 95-%-Score-Intervall des Anteils bestanden (%).",
    "d_checks": (
        "Ergebnisse der Prüfungen der ok-Zellen: ok / falsch / nicht gemessen (die Prüfung "
        "konnte nicht laufen; nie ein Bestehen)."
    ),
    "d_cutoffs": "Ok-Zellen, in denen ein Zug mit finish_reason length endete (Zellen).",
    "d_empty_args": (
        'Aufrufe mit leeren Argumenten ({}, "", null) eines Werkzeugs mit Pflichtparametern '
        "(Aufrufe)."
    ),
    "d_schema_errors": "Fehlgeschlagene schema_valid-Prüfungen (Prüfungen).",
    "d_transport": (
        "Zellen ohne Ergebnis des Modells (ok false): wiederholt, dann als Fehler behalten."
    ),
    "d_http_4xx": "Davon Anfragen, die der Server abgelehnt hat (error_kind http_4xx).",
    "d_missing": "Geplante Zellen ohne Eintrag (der Lauf brach ab oder läuft noch).",
    "d_tokens_median": "Median je ok-Zelle der Antwort-Tokens über ihre Züge (Tokens).",
    "d_tokens_total": "Σ Antwort-Tokens der ok-Zellen (Tokens).",
    "d_reasoning_median": "Median je ok-Zelle der Reasoning-Tokens über ihre Züge (Tokens).",
    "d_reasoning_total": "Σ Reasoning-Tokens der ok-Zellen (Tokens).",
    "d_run_s": "Σ der Laufzeit jeder Zelle, erste Anfrage bis letztes Byte (s).",
    "d_wall_s": "Ende der letzten − Start der ersten Zelle des Modells (s).",
    "d_turns": "Median der Antworten des Modells je ok-Zelle.",
    "d_decode_tps": (
        "Median über die Züge der ok-Zellen ohne Fremdlast und Drosselung von "
        "(Antwort-Tokens − 1) / (E2E − TTFT) (Tokens/s)."
    ),
    # report: chart
    "pass_speed": "Bestehensquote gegen Tempo",
    "x_run": "Median Zeit je Zelle (s)",
    "x_decode": "Median Decode tok/s",
    "y_pass": "Zellen bestanden %",
    "chart_empty": "kein Modell wurde bewertet",
    "chart_caption": "Ein Punkt je Modell, mit seinem Wilson-95-%-Intervall.",
    # report: per item
    "per_item": "Je Aufgabe",
    "item": "Aufgabe",
    "item_title": "Titel",
    "item_detail": "Je Aufgabe und Modell",
    "mark": "bestanden",
    "checks_ok": "Prüfungen ok",
    "finish": "Abschlussgründe",
    "calls_turn": "Aufrufe je Zug",
    "failed_checks": "fehlgeschlagene Prüfungen",
    "not_measured": "nicht gemessen",
    "d_mark": "✓ jede bewertete Zelle bestand, ✗ keine, k/n einige, – keine bewertet.",
    "d_checks_ok": "Prüfungen ok von den gemessenen, über die ok-Zellen der Aufgabe.",
    "d_finish": "Abschlussgrund jedes Zugs, gezählt.",
    "d_calls_turn": "Aufrufe in jedem Zug, eine Gruppe je Zelle (Wiederholungen der Reihe nach).",
    # report: cells
    "cells_section": "Zellen",
    "turn": "Zug {n}",
    "answer": "Antwort",
    "reasoning": "Reasoning",
    "calls": "Aufrufe",
    "tool": "Werkzeug",
    "arguments": "Argumente",
    "not_json": "kein gültiges JSON",
    "world": "Antworten der Welt",
    "check": "Prüfung",
    "type": "Typ",
    "outcome": "Ergebnis",
    "detail": "Detail",
    "ok": "ok",
    "failed": "falsch",
    "error": "Fehler",
    "no_text": "(kein Text)",
    "chars_cut": "… ({n} Zeichen insgesamt)",
    "of_reasoning": "(davon {n} Reasoning)",
    "turn_figures": "Abschluss {finish} · {tokens} Tokens · TTFT {ttft} s · E2E {e2e} s",
    "method": "So liest man das",
    # tools-compare
    "compare_title": "Werkzeug-Vergleich",
    "side_a": "A",
    "side_b": "B",
    "pairs": "Paare",
    "a_passed": "A bestanden",
    "b_passed": "B bestanden",
    "only_a": "nur A (b)",
    "only_b": "nur B (c)",
    "mcnemar": "McNemar p",
    "unpaired": "ungepaart A/B",
    "turns_ab": "Züge A/B",
    "tokens_ab": "Antwort-Tok A/B",
    "reasoning_ab": "Reasoning-Tok A/B",
    "discordant": "Diskordante Paare",
    "no_discordant": "keine",
    "compare_method": (
        "Zellen gepaart nach Aufgabe und Wiederholung, wo beide Seiten bewertet wurden. b: nur "
        "in A bestanden, c: nur in B; McNemars exakter Test: zweiseitiger Binomialtest von b "
        "in b + c bei 0,5 (p = 1 bei b + c = 0). Mediane je Zelle über die gepaarten Zellen."
    ),
    # web UI
    "ui_pass": "Bestehensquote",
    "ui_best": "bestes",
    "ui_cells_live": "Zellen",
    "ui_no_summary": "noch keine Zelle bewertet",
}
"""Beschriftungen und Definitionen des Werkzeug-Berichts, von ``tools-compare`` und der
Werkzeug-Seiten der Oberfläche."""
