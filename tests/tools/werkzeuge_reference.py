"""Reference turns for every item of ``packs/werkzeuge.yaml``.

:data:`GOOD`: what a careful model does (its calls, turn by turn, and its final answer); every
check of the item passes on it. :data:`BAD`: the typical mistake the item is built to catch
(an integer where the schema wants a string, seconds instead of milliseconds, an edit whose
``old`` text occurs twice, ...), with :data:`BAD_FAILS` naming exactly the checks that fail on
it. The world's replies are left out: the checks read only the calls and the answer.
"""

from __future__ import annotations

import itertools
from typing import Any

from touchstone_ray.records import ToolCall
from touchstone_ray.tool_records import ToolTurn

_ids = itertools.count(1)


def call(name: str, **arguments: Any) -> ToolCall:
    """One well-formed call of ``name`` with ``arguments`` (a fresh call id)."""
    return ToolCall(id=f"call_{next(_ids)}", name=name, arguments=arguments)


def calls(*made: ToolCall) -> ToolTurn:
    """A turn that only calls tools (finish reason ``tool_calls``)."""
    return ToolTurn(tool_calls=list(made), finish_reason="tool_calls")


def answer(text: str) -> ToolTurn:
    """A final turn: text, no calls (finish reason ``stop``)."""
    return ToolTurn(content=text, finish_reason="stop")


def code_answer(lead: str, language: str, code: str) -> ToolTurn:
    """A final answer with ``code`` in one fenced block tagged ``language``."""
    return answer(f"{lead}\n\n```{language}\n{code}```\n")


# --- code a good model writes -------------------------------------------------------------

IBAN = '''def iban_gueltig(iban: str) -> bool:
    """Prüft eine IBAN nach ISO 13616 (Prüfziffer modulo 97)."""
    text = iban.replace(" ", "").upper()
    if not 15 <= len(text) <= 34 or not text.isascii() or not text.isalnum():
        return False
    if not (text[:2].isalpha() and text[2:4].isdigit()):
        return False
    umgestellt = text[4:] + text[:4]
    zahl = "".join(str(int(zeichen, 36)) for zeichen in umgestellt)
    return int(zahl) % 97 == 1
'''

IBAN_NUR_FORMAT = """import re


def iban_gueltig(iban: str) -> bool:
    text = iban.replace(" ", "").upper()
    return re.fullmatch(r"[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}", text) is not None
"""

DAUER = '''"""Zeitangaben wie "1h30m" in Sekunden."""

import re

_MUSTER = re.compile(r"\\s*(?:(\\d+)h)?\\s*(?:(\\d+)m)?\\s*(?:(\\d+)s)?\\s*")


def dauer_in_sekunden(text: str) -> int:
    """Sekunden einer Angabe aus h, m und s (jede höchstens einmal, in dieser Reihenfolge)."""
    treffer = _MUSTER.fullmatch(text)
    if treffer is None or not any(treffer.groups()):
        raise ValueError(f"keine gültige Dauer: {text!r}")
    stunden, minuten, sekunden = (int(teil) if teil else 0 for teil in treffer.groups())
    return stunden * 3600 + minuten * 60 + sekunden
'''

DAUER_ZU_LAX = """import re


def dauer_in_sekunden(text: str) -> int:
    faktor = {"h": 3600, "m": 60, "s": 1}
    teile = re.findall(r"(\\d+)([hms])", text)
    if not teile:
        raise ValueError(text)
    return sum(int(zahl) * faktor[einheit] for zahl, einheit in teile)
"""

CSV_SUMME = '''import csv
import io


def summe_je_kategorie(csv_text: str) -> dict[str, float]:
    """Summe der Beträge je Kategorie, auf zwei Nachkommastellen gerundet."""
    summen: dict[str, float] = {}
    for zeile in csv.DictReader(io.StringIO(csv_text), delimiter=";"):
        kategorie = (zeile.get("Kategorie") or "").strip()
        if not kategorie:
            continue
        betrag = float(zeile["Betrag"].strip().replace(".", "").replace(",", "."))
        summen[kategorie] = summen.get(kategorie, 0.0) + betrag
    return {kategorie: round(summe, 2) for kategorie, summe in summen.items()}
'''

CSV_OHNE_TAUSENDER = """def summe_je_kategorie(csv_text: str) -> dict[str, float]:
    summen: dict[str, float] = {}
    for zeile in csv_text.splitlines()[1:]:
        if not zeile.strip():
            continue
        _, kategorie, betrag = zeile.split(";")
        summen[kategorie] = summen.get(kategorie, 0.0) + float(betrag.replace(",", "."))
    return summen
"""

BEREICHE = """function bereicheKomprimieren(zahlen) {
  const teile = [];
  let i = 0;
  while (i < zahlen.length) {
    let j = i;
    while (j + 1 < zahlen.length && zahlen[j + 1] === zahlen[j] + 1) j++;
    if (j - i >= 2) {
      teile.push(`${zahlen[i]}-${zahlen[j]}`);
    } else {
      for (let k = i; k <= j; k++) teile.push(String(zahlen[k]));
    }
    i = j + 1;
  }
  return teile.join(",");
}
"""

BEREICHE_AB_ZWEI = """function bereicheKomprimieren(zahlen) {
  const teile = [];
  let start = 0;
  for (let i = 1; i <= zahlen.length; i++) {
    if (i === zahlen.length || zahlen[i] !== zahlen[i - 1] + 1) {
      teile.push(i - 1 > start ? `${zahlen[start]}-${zahlen[i - 1]}` : String(zahlen[start]));
      start = i;
    }
  }
  return zahlen.length ? teile.join(",") : "";
}
"""

MAKEFILE = ".PHONY: test lint\n\ntest:\n\tpytest -q\n\nlint:\n\truff check .\n"
MAKEFILE_LEERZEICHEN = ".PHONY: test lint\n\ntest:\n    pytest -q\n\nlint:\n    ruff check .\n"

PREISE_KONTEXT_ALT = '    """Bruttopreis für Lebensmittel."""\n    return round(netto * 1.19, 2)'
PREISE_KONTEXT_NEU = '    """Bruttopreis für Lebensmittel."""\n    return round(netto * 1.07, 2)'

SLUG_ALT = "    text = titel.lower()\n"
SLUG_NEU = (
    "    text = titel.lower()\n"
    '    for umlaut, ersatz in (("ä", "ae"), ("ö", "oe"), ("ü", "ue"), ("ß", "ss")):\n'
    "        text = text.replace(umlaut, ersatz)\n"
)

# --- the good turns -----------------------------------------------------------------------

GOOD: dict[str, list[ToolTurn]] = {
    "schema-bestellnummer": [
        calls(call("order_status", order_id="004711")),
        answer(
            "Deine Bestellung 004711 ist unterwegs: DHL hat sie am 3. Juni übernommen "
            "(Sendungsnummer 00340434161094042557), die Zustellung ist für Mittwoch, "
            "5. Juni, angekündigt."
        ),
    ],
    "schema-menge-ganzzahl": [
        calls(call("add_to_cart", sku="KF-0415", quantity=2)),
        answer("Erledigt: zwei Packungen Kaffeefilter Größe 4 (KF-0415) liegen im Warenkorb."),
    ],
    "schema-timer-ms": [
        calls(call("set_timer", duration_ms=150000, label="Tee")),
        answer("Der Timer für den Tee läuft: 2 Minuten 30 Sekunden."),
    ],
    "schema-timer-stunden": [
        calls(call("set_timer", duration_ms=5400000, label="Wäsche aufhängen")),
        answer("Ich erinnere dich in anderthalb Stunden ans Wäscheaufhängen."),
    ],
    "schema-json-im-string": [
        calls(
            call(
                "http_post",
                url="https://hooks.example.org/lager/nachbestellung",
                body='{"artikel": "SCHR-1000", "menge": 500, "dringend": true}',
            )
        ),
        answer("Gesendet; der Server hat mit Status 202 (accepted) geantwortet."),
    ],
    "schema-json-escapes": [
        calls(
            call(
                "http_post",
                url="https://hooks.example.org/lager/notiz",
                body='{"autor": "J\\u00fcrgen Wei\\u00df", '
                '"text": "Palette \\"Express\\" steht an Tor 2 \\u2013 bitte bis 14 Uhr abholen"}',
            )
        ),
        answer("Die Notiz ist raus, der Webhook hat sie mit Status 202 angenommen."),
    ],
    "schema-makefile-tabs": [
        calls(call("write", path="Makefile", content=MAKEFILE)),
        answer("Das Makefile ist angelegt: `make test` startet pytest, `make lint` ruff."),
    ],
    "schema-termin": [
        calls(
            call(
                "create_event",
                title="Sprint-Review",
                date="2024-05-14",
                start="09:30",
                duration_min=60,
                attendees=["Anna", "Jonas"],
            )
        ),
        answer(
            "Eingetragen: Sprint-Review am Dienstag, 14. Mai 2024, 9:30–10:30 mit Anna und Jonas."
        ),
    ],
    "schema-fahrenheit": [
        calls(call("get_weather", city="Boston", units="fahrenheit")),
        answer("In Boston ist es gerade bedeckt bei 41 °F."),
    ],
    "ohne-werkzeug-wissen": [
        answer("Ein Tag hat 24 × 60 × 60 = 86.400 Sekunden."),
    ],
    "ohne-werkzeug-rueckfrage": [
        answer("Gern – wie lange soll der Timer laufen, und wofür ist er?"),
    ],
    "ohne-werkzeug-json": [
        answer(
            '{"title": "Inventurbesprechung", "date": "2024-06-07", "start": "13:00", '
            '"duration_min": 90}'
        ),
    ],
    "ohne-werkzeug-code-lesen": [
        answer("Es gibt `[3, 2, 1]` aus: sorted macht aus der Menge eine absteigende Liste."),
    ],
    "parallel-wetter": [
        calls(
            call("get_weather", city="Hamburg"),
            call("get_weather", city="München"),
            call("get_weather", city="Leipzig"),
        ),
        answer(
            "Hamburg: Nieselregen bei 12 °C und kräftigem Wind.\n"
            "München: sonnig bei 17 °C.\n"
            "Leipzig: bewölkt bei 15 °C."
        ),
    ],
    "parallel-timer": [
        calls(
            call("set_timer", duration_ms=720000, label="Pizza"),
            call("set_timer", duration_ms=45000, label="Ei"),
        ),
        answer("Beide Timer laufen: Pizza in 12 Minuten, Ei in 45 Sekunden."),
    ],
    "parallel-dateien": [
        calls(
            call("read", path="README.md"),
            call("read", path="pyproject.toml"),
            call("read", path="src/lager/__init__.py"),
        ),
        answer(
            "README.md und pyproject.toml nennen 3.4.1, src/lager/__init__.py noch 3.4.0.\n"
            "src/lager/__init__.py"
        ),
    ],
    "code-iban": [code_answer("Hier die Funktion:", "python", IBAN)],
    "code-dauer-datei": [
        calls(call("write", path="src/dauer.py", content=DAUER)),
        answer(
            "src/dauer.py ist angelegt; `dauer_in_sekunden` wirft bei allem anderen ValueError."
        ),
    ],
    "code-csv-summe": [code_answer("So geht es:", "python", CSV_SUMME)],
    "code-js-bereiche": [code_answer("Die Funktion:", "javascript", BEREICHE)],
    "edit-port": [
        calls(call("read", path="config/app.toml")),
        calls(call("edit", path="config/app.toml", old="port = 8080", new="port = 9090")),
        answer("Der Server lauscht jetzt auf Port 9090; der Metrik-Port 9100 bleibt."),
    ],
    "edit-mehrdeutig": [
        calls(call("read", path="src/preise.py")),
        calls(call("edit", path="src/preise.py", old=PREISE_KONTEXT_ALT, new=PREISE_KONTEXT_NEU)),
        answer(
            "`brutto_lebensmittel` rechnet jetzt mit 1.07; die gleiche return-Zeile in "
            "`brutto_standard` habe ich über den Docstring davor unterschieden und nicht "
            "angefasst."
        ),
    ],
    "edit-lesen-dann-aendern": [
        calls(call("read", path="src/kalender.py")),
        calls(
            call(
                "edit",
                path="src/kalender.py",
                old="    return jahr % 4 == 0 and jahr % 100 != 0",
                new="    return jahr % 4 == 0 and (jahr % 100 != 0 or jahr % 400 == 0)",
            )
        ),
        answer(
            "Die 400er-Regel fehlte: durch 100 teilbare Jahre sind nur Schaltjahre, wenn sie "
            "auch durch 400 teilbar sind. Jetzt ist 2000 ein Schaltjahr, 1900 nicht."
        ),
    ],
    "edit-tests-rot": [
        calls(call("run_tests")),
        calls(call("read", path="src/textwerk.py")),
        calls(call("edit", path="src/textwerk.py", old=SLUG_ALT, new=SLUG_NEU)),
        answer(
            "`slug` hat Umlaute und ß einfach durch Bindestriche ersetzt. Jetzt werden sie "
            "vorher umschrieben (ä → ae, ö → oe, ü → ue, ß → ss); der Test bleibt unverändert."
        ),
    ],
    "edit-umbenennen": [
        calls(call("read", path="src/bericht.py")),
        calls(
            call("edit", path="src/bericht.py", old="def summe(", new="def umsatz_summe("),
            call(
                "edit",
                path="src/bericht.py",
                old="{summe(umsaetze)",
                new="{umsatz_summe(umsaetze)",
            ),
        ),
        answer("Umbenannt: Definition und Aufruf in `bericht` heißen jetzt `umsatz_summe`."),
    ],
    "dateien-finden": [
        calls(call("find", pattern="docs/*.md")),
        answer(
            "Im Ordner docs liegen:\n- docs/installation.md\n- docs/handbuch.md\n"
            "- docs/changelog.md"
        ),
    ],
    "lang-handbuch-retoure": [
        answer(
            "Laut Handbuch (Abschnitt 9) nehmen wir Sonderanfertigungen nur bis 10 Werktage "
            "nach Zustellung zurück, und nur nach Rücksprache mit dem Vertrieb. Nach einer "
            "Woche ist die Frist also noch offen, außer es handelt sich um zugeschnittene "
            "Kabel, Rohre oder Platten."
        ),
    ],
    "lang-code-vs-handbuch": [
        answer(
            "Handbuch: 1,5 (Abschnitt 6)\n"
            "Code: 1.25 (SICHERHEITSFAKTOR in src/lager/bestand.py)\n"
            "Version: 3.2.0"
        ),
    ],
    "lang-modul-edit": [
        calls(
            call(
                "edit",
                path="src/lager/bestand.py",
                old="    return (menge // einheit) * einheit",
                new="    return -(-menge // einheit) * einheit",
            )
        ),
        answer(
            "`runde_auf_verpackungseinheit` rundet jetzt auf: 101 Stück bei Einheiten zu 25 "
            "ergeben 125. Sonst ist nichts geändert."
        ),
    ],
}
"""Per item id, the turns of a careful model."""

# --- the typical mistakes -----------------------------------------------------------------

BAD: dict[str, list[ToolTurn]] = {
    "schema-bestellnummer": [
        calls(call("order_status", order_id=4711)),
        answer("Zu dieser Nummer finde ich keine Bestellung."),
    ],
    "schema-menge-ganzzahl": [
        calls(call("add_to_cart", sku="KF-0415", quantity="2")),
        answer("Liegt im Warenkorb."),
    ],
    "schema-timer-ms": [
        calls(call("set_timer", duration_ms=150, label="Tee")),
        answer("Timer läuft."),
    ],
    "schema-timer-stunden": [
        calls(call("set_timer", duration_ms=5400, label="Wäsche")),
        answer("Timer läuft."),
    ],
    "schema-json-im-string": [
        calls(
            call(
                "http_post",
                url="https://hooks.example.org/lager/nachbestellung",
                body={"artikel": "SCHR-1000", "menge": 500, "dringend": True},
            )
        ),
        answer("Gesendet."),
    ],
    "schema-json-escapes": [
        calls(
            call(
                "http_post",
                url="https://hooks.example.org/lager/notiz",
                body='{"autor": "Jürgen Weiß", '
                '"text": "Palette \'Express\' steht an Tor 2 - bitte bis 14 Uhr abholen"}',
            )
        ),
        answer("Gesendet."),
    ],
    "schema-makefile-tabs": [
        calls(call("write", path="Makefile", content=MAKEFILE_LEERZEICHEN)),
        answer("Makefile angelegt."),
    ],
    "schema-termin": [
        calls(
            call(
                "create_event",
                title="Sprint-Review",
                date="14.05.2024",
                start="9:30",
                duration_min=60,
                attendees=["Anna", "Jonas"],
            )
        ),
        answer("Eingetragen."),
    ],
    "schema-fahrenheit": [
        calls(call("get_weather", city="Boston")),
        answer("In Boston sind es gerade 5 Grad."),
    ],
    "ohne-werkzeug-wissen": [
        calls(call("set_timer", duration_ms=86400000, label="Ein Tag")),
        answer("Ein Tag hat 86400 Sekunden."),
    ],
    "ohne-werkzeug-rueckfrage": [
        calls(call("set_timer", duration_ms=300000, label="Timer")),
        answer("Ich habe einen Timer über 5 Minuten gestellt."),
    ],
    "ohne-werkzeug-json": [
        calls(
            call(
                "create_event",
                title="Inventurbesprechung",
                date="2024-06-07",
                start="13:00",
                duration_min=90,
            )
        ),
        answer("Ich habe den Termin eingetragen."),
    ],
    "ohne-werkzeug-code-lesen": [
        calls(call("run_tests")),
        answer("Die Ausgabe ist [1, 2, 3]."),
    ],
    "parallel-wetter": [
        calls(call("get_weather", city="Hamburg")),
        calls(call("get_weather", city="München")),
        calls(call("get_weather", city="Leipzig")),
        answer("Hamburg 12 °C, München 17 °C, Leipzig 15 °C."),
    ],
    "parallel-timer": [
        calls(call("set_timer", duration_ms=720, label="Pizza")),
        calls(call("set_timer", duration_ms=45, label="Ei")),
        answer("Beide Timer laufen."),
    ],
    "parallel-dateien": [
        calls(call("read", path="README.md"), call("read", path="pyproject.toml")),
        answer("Beide nennen 3.4.1, es gibt keine Abweichung."),
    ],
    "code-iban": [
        ToolTurn(
            content=f"```python\n{IBAN_NUR_FORMAT}",
            finish_reason="length",
        )
    ],
    "code-dauer-datei": [
        calls(call("write", path="dauer.py", content=DAUER_ZU_LAX)),
        answer("Datei angelegt."),
    ],
    "code-csv-summe": [code_answer("Code:", "python", CSV_OHNE_TAUSENDER)],
    "code-js-bereiche": [code_answer("Code:", "js", BEREICHE_AB_ZWEI)],
    "edit-port": [
        calls(call("edit", path="config/app.toml", old="port=8080", new="port=9090")),
        answer("Port geändert."),
    ],
    # Der sorglose Weg: nur die return-Zeile, die in src/preise.py zweimal steht.
    "edit-mehrdeutig": [
        calls(call("read", path="src/preise.py")),
        calls(
            call(
                "edit",
                path="src/preise.py",
                old="return round(netto * 1.19, 2)",
                new="return round(netto * 1.07, 2)",
            )
        ),
        answer("Erledigt, Lebensmittel rechnen jetzt mit 7 %."),
    ],
    "edit-lesen-dann-aendern": [
        calls(
            call(
                "edit",
                path="src/kalender.py",
                old="return jahr % 4 == 0",
                new="return jahr % 4 == 0 and (jahr % 100 != 0 or jahr % 400 == 0)",
            )
        ),
        answer("Behoben."),
    ],
    "edit-tests-rot": [
        calls(call("run_tests")),
        calls(
            call(
                "edit",
                path="tests/test_textwerk.py",
                old='"groesse-ueber-mass"',
                new='"gr-e-ber-ma"',
            )
        ),
        answer("Test angepasst, jetzt ist er grün."),
    ],
    "edit-umbenennen": [
        calls(call("read", path="src/bericht.py")),
        calls(call("edit", path="src/bericht.py", old="summe(", new="umsatz_summe(")),
        answer("Umbenannt."),
    ],
    "dateien-finden": [
        answer("Vermutlich docs/handbuch.md und docs/changelog.md."),
    ],
    "lang-handbuch-retoure": [
        answer("Retouren nehmen wir innerhalb von 30 Tagen nach Zustellung zurück."),
    ],
    "lang-code-vs-handbuch": [
        answer("Handbuch: 1,5\nCode: 1,5\nVersion: 3.4.1"),
    ],
    "lang-modul-edit": [
        calls(
            call(
                "edit",
                path="src/lager/bestand.py",
                old="    return (menge // einheit) * einheit",
                new="    return round(menge / einheit) * einheit",
            )
        ),
        answer("Rundet jetzt kaufmännisch."),
    ],
}
"""Per item id, the turns of the mistake the item is built to catch."""

BAD_FAILS: dict[str, set[str]] = {
    "schema-bestellnummer": {"ein-aufruf", "schema", "nummer-als-text", "zustelltermin"},
    "schema-menge-ganzzahl": {"schema", "menge-zwei"},
    "schema-timer-ms": {"schema", "millisekunden"},
    "schema-timer-stunden": {"millisekunden"},
    "schema-json-im-string": {"schema"},
    "schema-json-escapes": {"body"},
    "schema-makefile-tabs": {"test-mit-tab", "lint-mit-tab", "keine-leerzeichen-einrueckung"},
    "schema-termin": {"schema", "datum", "beginn"},
    "schema-fahrenheit": {"ein-aufruf", "temperatur"},
    "ohne-werkzeug-wissen": {"kein-aufruf"},
    "ohne-werkzeug-rueckfrage": {"kein-aufruf", "rueckfrage"},
    "ohne-werkzeug-json": {"kein-aufruf", "json"},
    "ohne-werkzeug-code-lesen": {"kein-aufruf", "ausgabe"},
    "parallel-wetter": {"drei-im-ersten-zug"},
    "parallel-timer": {"zwei-im-ersten-zug", "schema", "pizza", "ei"},
    "parallel-dateien": {"drei-im-ersten-zug", "abweichung"},
    "code-iban": {"asserts", "nicht-abgeschnitten"},
    "code-dauer-datei": {"dateiname", "asserts"},
    "code-csv-summe": {"asserts"},
    "code-js-bereiche": {"asserts"},
    "edit-port": {"wendet-sich-an"},
    "edit-mehrdeutig": {"wendet-sich-an", "nur-lebensmittel"},
    "edit-lesen-dann-aendern": {"liest-zuerst", "schaltjahre"},
    "edit-tests-rot": {"nur-quellcode", "wendet-sich-an", "umlaute"},
    "edit-umbenennen": {"wendet-sich-an", "umbenannt"},
    "dateien-finden": {"alle-pfade"},
    "lang-handbuch-retoure": {"frist", "bedingung"},
    "lang-code-vs-handbuch": {"code", "version"},
    "lang-modul-edit": {"rundet-auf"},
}
"""Per item id, exactly the checks that fail on its :data:`BAD` turns (the rest pass or are
not measured as listed in :data:`BAD_NOT_MEASURED`)."""

BAD_NOT_MEASURED: dict[str, set[str]] = {
    "dateien-finden": {"schema"},
}
"""Checks that cannot run on a :data:`BAD` cell (no call to validate)."""
