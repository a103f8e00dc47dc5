"""The long fixture files of ``packs/werkzeuge.yaml``, generated deterministically.

The three long-context items of the shipped German tools pack put about 30,000 tokens of
fixture text into the conversation (``context_files``): a warehouse module in Python
(``src/lager/bestand.py``), its German handbook (``docs/handbuch.md``) and its changelog
(``docs/changelog.md``), 86,844 characters together: 29,103 tokens by Gemma 3's tokenizer
(llama.cpp ``/tokenize``), 28,948 by the fit check's estimate of 3 characters a token. They
are written here from fixed tables (no randomness), so the text can be checked and rebuilt:

* ``python scripts/werkzeuge_fixtures.py`` rewrites the part of the pack after the marker line
  :data:`MARKER` (the generated files are the last entries of ``world.files``);
* ``python scripts/werkzeuge_fixtures.py --check`` exits 1 when the pack differs.

Planted facts the items ask about: the handbook's safety factor 1,5 vs the code's 1.25, the
version that changed it (3.2.0, changelog only), the return window for custom-made goods
(10 Werktage, handbook section 9), and the bug in ``runde_auf_verpackungseinheit`` (rounds
down although its docstring says up).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

PACK = Path(__file__).resolve().parent.parent / "packs" / "werkzeuge.yaml"
"""The shipped pack whose tail this script writes."""
MARKER = "    # ---- generated: scripts/werkzeuge_fixtures.py (do not edit below) ----"
"""The line after which the generated files stand in the pack (inside ``world.files``)."""
FILE_INDENT = "      "
"""Indentation of a file's text inside its YAML block scalar."""


@dataclass(frozen=True)
class Gruppe:
    """One product group of the fixture warehouse."""

    kuerzel: str
    name: str
    zone: str
    ve: int
    lieferzeit: int
    verbrauch: float
    reichweite: int
    einheit: str
    gefahrstoff: bool = False
    saisonal: bool = False
    haltbar_monate: int | None = None
    max_gewicht: float = 25.0
    lieferant: str = ""
    hinweis: str = ""
    mehrzahl: str = ""
    dativ: str = ""

    def menge(self, n: float, dativ: bool = False) -> str:
        """``n`` with the unit, singular for exactly 1, else plural (dative plural after
        "zu"/"bei"), in German notation."""
        if n == 1:
            unit = self.einheit
        elif dativ:
            unit = self.dativ or self.mehrzahl or self.einheit
        else:
            unit = self.mehrzahl or self.einheit
        return f"{_de(n)} {unit}"


GRUPPEN: tuple[Gruppe, ...] = (
    Gruppe(
        "SCHR",
        "Schrauben und Muttern",
        "A",
        100,
        5,
        340.0,
        12,
        "Stück",
        lieferant="Schraubenwerk Lindner KG",
        hinweis="Edelstahl und verzinkte Ware getrennt lagern, nie im selben Fach.",
    ),
    Gruppe(
        "DUEB",
        "Dübel und Befestigung",
        "A",
        50,
        5,
        120.0,
        12,
        "Stück",
        lieferant="Fischbach Befestigungstechnik",
        hinweis="Nylondübel sind lichtempfindlich und bleiben im Karton.",
    ),
    Gruppe(
        "KABL",
        "Kabel und Leitungen",
        "B",
        1,
        10,
        6.0,
        20,
        "Rolle",
        max_gewicht=40.0,
        mehrzahl="Rollen",
        lieferant="Elektro-Großhandel Neumann",
        hinweis="Rollen liegend lagern; angebrochene Rollen mit Restlänge beschriften.",
    ),
    Gruppe(
        "FARB",
        "Farben und Lacke",
        "G",
        6,
        14,
        9.0,
        21,
        "Eimer",
        gefahrstoff=True,
        dativ="Eimern",
        haltbar_monate=24,
        lieferant="Farbwerke Südhang",
        hinweis="Frostfrei lagern; Temperatur im Gefahrstoffraum täglich notieren.",
    ),
    Gruppe(
        "KLEB",
        "Klebstoffe und Dichtmassen",
        "G",
        12,
        7,
        15.0,
        14,
        "Kartusche",
        mehrzahl="Kartuschen",
        gefahrstoff=True,
        haltbar_monate=18,
        lieferant="Adhäsiv-Technik Brandt",
        hinweis="Kartuschen stehend lagern, älteste Charge zuerst ausgeben.",
    ),
    Gruppe(
        "WERK",
        "Handwerkzeug",
        "C",
        1,
        21,
        3.0,
        30,
        "Stück",
        lieferant="Werkzeughandel Ostermann",
        hinweis="Vorführgeräte bekommen eine eigene Artikelnummer mit Suffix -V.",
    ),
    Gruppe(
        "LEUC",
        "Leuchtmittel",
        "C",
        10,
        9,
        25.0,
        14,
        "Stück",
        lieferant="Lichttechnik Rheinau",
        hinweis="Bruchware sofort ausbuchen; Leuchtstoffröhren sind Sondermüll.",
    ),
    Gruppe(
        "ROHR",
        "Rohre und Formstücke",
        "B",
        5,
        12,
        11.0,
        18,
        "Stück",
        max_gewicht=60.0,
        lieferant="Sanitär-Union Weber",
        hinweis="Langgut über 3 m nur im Kragarmregal, nie quer im Gang.",
    ),
    Gruppe(
        "DICH",
        "Dichtungen und O-Ringe",
        "A",
        25,
        6,
        60.0,
        14,
        "Stück",
        haltbar_monate=36,
        lieferant="Gummiwerk Haller",
        hinweis="Elastomere vor Ozon schützen: nicht neben Elektromotoren lagern.",
    ),
    Gruppe(
        "SCHU",
        "Arbeitsschutz",
        "D",
        10,
        8,
        30.0,
        14,
        "Paar",
        lieferant="Safety-Depot Krämer",
        hinweis="Größen gemischter Kartons beim Wareneingang einzeln erfassen.",
    ),
    Gruppe(
        "REIN",
        "Reinigungsmittel",
        "G",
        4,
        10,
        7.0,
        21,
        "Kanister",
        gefahrstoff=True,
        dativ="Kanistern",
        haltbar_monate=30,
        lieferant="Hygiene-Service Albrecht",
        hinweis="Säuren und Laugen in getrennten Auffangwannen lagern.",
    ),
    Gruppe(
        "HOLZ",
        "Holzplatten",
        "B",
        1,
        15,
        4.0,
        21,
        "Platte",
        max_gewicht=80.0,
        mehrzahl="Platten",
        lieferant="Holzhandel Brückner",
        hinweis="Platten liegend auf Kanthölzern, höchstens 40 Stück je Stapel.",
    ),
    Gruppe(
        "FLIE",
        "Fliesen und Naturstein",
        "E",
        1,
        20,
        2.0,
        30,
        "Palette",
        mehrzahl="Paletten",
        max_gewicht=900.0,
        lieferant="Keramik Oberland",
        hinweis="Paletten nur mit dem Stapler bewegen; Chargen nie mischen (Farbton).",
    ),
    Gruppe(
        "GART",
        "Gartenbedarf",
        "E",
        8,
        18,
        14.0,
        21,
        "Sack",
        saisonal=True,
        mehrzahl="Säcke",
        dativ="Säcken",
        max_gewicht=30.0,
        lieferant="Grünland Versand",
        hinweis="Saisonware: Bestand von März bis Juni hochfahren, ab August abbauen.",
    ),
)
"""The product groups, in catalogue order."""

SAISON = (0.4, 0.5, 1.3, 1.8, 1.9, 1.6, 1.1, 0.8, 0.7, 0.6, 0.5, 0.4)
"""Monthly demand factors of the seasonal group (January first)."""

ARTIKEL: dict[str, tuple[tuple[str, float], ...]] = {
    "SCHR": (
        ("Sechskantschraube M8 x 40 verzinkt", 0.02),
        ("Sechskantmutter M8 Edelstahl A2", 0.005),
        ("Holzschraube 5 x 60 Senkkopf Torx", 0.01),
        ("Gewindestange M10 x 1000", 0.48),
        ("Unterlegscheibe 10,5 mm verzinkt", 0.003),
        ("Flügelmutter M6 Messing", 0.006),
        ("Spanplattenschraube 4 x 35 gelb verzinkt", 0.004),
    ),
    "DUEB": (
        ("Nylondübel 8 x 40", 0.002),
        ("Hohlraumdübel Metall 6 x 52", 0.009),
        ("Schwerlastanker M12 x 110", 0.19),
        ("Rahmendübel 10 x 100 mit Schraube", 0.03),
        ("Injektionsmörtel 300 ml", 0.52),
        ("Gasbetondübel 10 x 60", 0.004),
    ),
    "KABL": (
        ("Mantelleitung NYM-J 3 x 1,5 mm², 100 m", 11.8),
        ("Mantelleitung NYM-J 5 x 2,5 mm², 50 m", 12.4),
        ("Netzwerkkabel Cat.7 Verlegekabel, 100 m", 7.9),
        ("Erdkabel NYY-J 3 x 2,5 mm², 50 m", 9.6),
        ("Lautsprecherkabel 2 x 2,5 mm², 25 m", 1.9),
        ("Schlauchleitung H07RN-F 3 x 1,5 mm², 50 m", 8.7),
    ),
    "FARB": (
        ("Dispersionsfarbe weiß matt 10 l", 15.2),
        ("Acryllack seidenmatt RAL 9010 2,5 l", 3.1),
        ("Holzlasur Eiche hell 5 l", 5.4),
        ("Tiefgrund lösemittelfrei 10 l", 10.3),
        ("Metallschutzlack anthrazit 750 ml", 1.0),
        ("Fassadenfarbe Silikonharz 12,5 l", 19.8),
    ),
    "KLEB": (
        ("Montagekleber lösemittelfrei 290 ml", 0.45),
        ("Sanitärsilikon transparent 310 ml", 0.38),
        ("Acryl-Dichtstoff weiß 310 ml", 0.5),
        ("PU-Schaum Pistolenschaum 750 ml", 0.95),
        ("Sekundenkleber Gel 20 g", 0.04),
        ("Parkettklebstoff 1K 16 kg", 16.6),
    ),
    "WERK": (
        ("Schlosserhammer 500 g Eschenstiel", 0.71),
        ("Schraubendreher-Satz 6-teilig", 0.64),
        ("Wasserwaage 80 cm", 0.55),
        ("Kombizange 180 mm", 0.29),
        ("Cuttermesser 18 mm mit Abbrechklingen", 0.12),
        ("Knarrenkasten 1/2 Zoll 24-teilig", 4.3),
    ),
    "LEUC": (
        ("LED-Lampe E27 8 W warmweiß", 0.06),
        ("LED-Röhre T8 150 cm 24 W", 0.31),
        ("Halogenstab R7s 118 mm", 0.02),
        ("LED-Spot GU10 5 W dimmbar", 0.05),
        ("Leuchtstoffröhre T5 49 W", 0.12),
        ("LED-Panel 62 x 62 cm 40 W", 2.8),
    ),
    "ROHR": (
        ("HT-Rohr DN 50 x 1000", 0.62),
        ("KG-Rohr DN 110 x 2000", 3.9),
        ("Kupferrohr 15 mm x 5 m", 2.2),
        ("Pressfitting Bogen 90° 16 mm", 0.05),
        ("HT-Abzweig DN 50/50 45°", 0.14),
        ("Mehrschichtverbundrohr 16 mm, 50 m Ring", 6.4),
    ),
    "DICH": (
        ("O-Ring 20 x 2 NBR 70", 0.001),
        ("Flachdichtung 3/4 Zoll Fiber", 0.001),
        ("Hanf zum Eindichten 100 g", 0.1),
        ("Dichtband PTFE 12 m", 0.02),
        ("Fensterdichtung E-Profil 6 m", 0.09),
        ("O-Ring-Sortiment 419-teilig", 0.6),
    ),
    "SCHU": (
        ("Schnittschutzhandschuh Stufe C, Gr. 9", 0.07),
        ("Gehörschutzstöpsel, 200 Paar", 0.6),
        ("Schutzbrille klar EN 166", 0.04),
        ("Sicherheitsschuh S3, Gr. 43", 1.4),
        ("FFP2-Maske ohne Ventil, 20 Stück", 0.2),
        ("Warnweste gelb EN ISO 20471", 0.13),
    ),
    "REIN": (
        ("Allzweckreiniger 10 l", 10.4),
        ("Zementschleierentferner 5 l", 5.9),
        ("Industriereiniger alkalisch 10 l", 11.1),
        ("Händedesinfektion 5 l", 4.6),
        ("Bodenreiniger für Hallen 20 l", 21.0),
        ("Entkalker Zitronensäure 1 kg", 1.0),
    ),
    "HOLZ": (
        ("OSB/3-Platte 2500 x 1250 x 18 mm", 44.0),
        ("Siebdruckplatte 2500 x 1250 x 15 mm", 33.5),
        ("MDF-Platte 2800 x 2070 x 19 mm", 78.0),
        ("Sperrholz Birke 2500 x 1250 x 12 mm", 25.0),
        ("Rauspund Fichte 19 x 146 x 4000 mm", 5.6),
        ("Tischlerplatte 2440 x 1220 x 19 mm", 29.0),
    ),
    "FLIE": (
        ("Feinsteinzeug 60 x 60 grau, Palette 57,6 m²", 1180.0),
        ("Wandfliese weiß glänzend 30 x 60, Palette 64,8 m²", 890.0),
        ("Naturstein Granit 40 x 40 hellgrau, Palette", 920.0),
        ("Terrassenplatte 60 x 60 x 2 cm, Palette", 1040.0),
        ("Mosaik Glas blau 30 x 30, Palette", 640.0),
        ("Sockelleiste Feinsteinzeug 8 x 60, Palette", 710.0),
    ),
    "GART": (
        ("Blumenerde torffrei 40 l", 14.0),
        ("Rasendünger organisch 10 kg", 10.2),
        ("Rindenmulch 60 l", 18.0),
        ("Rasensamen Sport und Spiel 2 kg", 2.1),
        ("Quarzsand für Sandkästen 25 kg", 25.0),
        ("Hochbeeterde 70 l", 27.0),
    ),
}
"""Catalogue articles per group: name, weight in kg."""

PRUEFUNG: dict[str, str] = {
    "SCHR": "Gewindemaß und Festigkeitsklasse auf dem Etikett gegen die Bestellung prüfen; "
    "eine Packung je Artikel öffnen und zehn Teile mit der Lehre messen.",
    "DUEB": "Durchmesser und Länge prüfen, bei Schwerlastankern die Zulassung (ETA-Nummer) auf "
    "dem Karton suchen; fehlt sie, Ware sperren.",
    "KABL": "Querschnitt und Aderzahl auf dem Mantelaufdruck lesen, Rollenlänge auf dem Etikett "
    "prüfen, Trommeln auf Transportschäden am Flansch ansehen.",
    "FARB": "Chargennummer und Herstelldatum notieren, Gebinde auf Dellen und Undichtigkeit "
    "prüfen; beschädigte Eimer nie einlagern.",
    "KLEB": "Herstelldatum und Haltbarkeit auf der Kartusche lesen; Ware mit weniger als sechs "
    "Monaten Resthaltbarkeit nur nach Rücksprache mit dem Einkauf annehmen.",
    "WERK": "Jedes Werkzeug einzeln gegen den Lieferschein zählen; Sets auf Vollständigkeit "
    "prüfen, fehlende Teile auf dem Lieferschein vermerken.",
    "LEUC": "Kartons schütteln: klirrt es, einzeln prüfen. Sockel und Leistung gegen die "
    "Bestellung vergleichen, Bruch sofort fotografieren.",
    "ROHR": "Nennweite und Länge stichprobenartig nachmessen, Muffen auf Risse prüfen; "
    "Rohre mit Kratzern auf der Dichtfläche zurückweisen.",
    "DICH": "Werkstoff (NBR, EPDM, FKM) und Härte auf dem Beutel prüfen; Beutel geschlossen "
    "lassen, Stichprobe nur mit Handschuhen entnehmen.",
    "SCHU": "Größen und Schutzklassen auf jedem Karton prüfen; gemischte Kartons auspacken und "
    "je Größe einzeln buchen.",
    "REIN": "Kanister auf Dichtheit prüfen, Gefahrstoffkennzeichnung mit dem Datenblatt "
    "vergleichen; Säuren und Laugen getrennt abstellen.",
    "HOLZ": "Plattenmaß und Stärke an drei Platten nachmessen, Kanten auf Stoßschäden "
    "prüfen; feuchte Platten nicht einlagern.",
    "FLIE": "Farbton-Charge und Sortierung auf jeder Palette notieren, Folie auf Risse prüfen; "
    "Paletten verschiedener Chargen nicht zusammen einlagern.",
    "GART": "Säcke auf Risse und Nässe prüfen, Erde und Mulch nicht in der Sonne stehen lassen; "
    "Saatgut mit Keimdatum buchen.",
}
"""What the goods receipt checks per group (handbook text)."""

KOMMISSIONIERUNG: tuple[str, ...] = (
    "Beim Kommissionieren werden angebrochene Packungen zuerst aufgebraucht; volle "
    "Verpackungseinheiten gehen ungeöffnet raus, wenn der Auftrag sie ganz abnimmt.",
    "Kommissioniert wird mit Handschuhen; Teile, die auf den Boden fallen, werden geprüft, "
    "bevor sie in den Auftrag gehen.",
    "Große Mengen holt die Kommissionierung mit dem Hubwagen; Einzelteile aus dem Fach gehen "
    "in den Pickbehälter.",
    "Wer eine Verpackungseinheit anbricht, beschriftet den Rest mit Datum und Restmenge.",
    "Die Pickliste nennt die Stückzahl in der Einheit der Warengruppe; Umrechnungen macht "
    "die Software, nicht der Kommissionierer.",
    "Bei Eilaufträgen darf vom Stammplatz abgewichen werden, wenn die Ware auf einem "
    "Pufferplatz der gleichen Zone bereitsteht.",
    "Ware mit Beschädigungen geht nicht in den Auftrag, sondern als Sperrbestand an die "
    "Lagerleitung.",
)
"""Picking rules cycled through the groups (handbook text)."""

ZONEN = {
    "A": ("Kleinteile", "Fachbodenregal, Behälter bis 15 kg", "Halle 1, Gänge 1–6"),
    "B": ("Langgut und Platten", "Kragarmregal", "Halle 1, Außenwand Nord"),
    "C": ("Geräte und Leuchten", "Fachbodenregal mit Sicherung", "Halle 2, Gänge 1–4"),
    "D": ("Arbeitsschutz und Textil", "Fachbodenregal", "Halle 2, Gänge 5–7"),
    "E": ("Schwerlast und Freilager", "Palettenregal, Bodenlager", "Halle 3 und Hof"),
    "G": ("Gefahrstoffe", "Gefahrstoffschrank, Auffangwannen", "Gefahrstoffraum, Halle 3"),
}
"""Storage zones: name, shelving, location."""


# --------------------------------------------------------------------------- Python module


def _plaetze(g: Gruppe, index: int) -> list[str]:
    """Shelf ids of a group: zone, aisle, bay, level (deterministic)."""
    out = []
    for k in range(8):
        gang = 1 + (index * 3 + k) % 7
        fach = 1 + (index * 11 + k * 5) % 40
        ebene = 1 + (k + index) % 4
        out.append(f"{g.zone}-{gang:02d}-{fach:02d}-{ebene}")
    return out


def _katalog(g: Gruppe, index: int) -> list[tuple[str, str, float, str]]:
    """Catalogue rows of a group: number, name, weight in kg, home shelf."""
    plaetze = _plaetze(g, index)
    return [
        (f"{g.kuerzel}-{1000 + index * 131 + j * 17}", name, kg, plaetze[j % len(plaetze)])
        for j, (name, kg) in enumerate(ARTIKEL[g.kuerzel])
    ]


def _modul_kopf() -> str:
    return '''"""Bestandsführung des Zentrallagers (Modul ``lager.bestand``).

Das Modul rechnet Meldebestände, Bestellvorschläge, Reichweiten und Inventurdifferenzen für
alle Warengruppen des Zentrallagers. Es greift bewusst auf keine Datenbank zu: Bestände,
Buchungen und Artikel werden als einfache Datenklassen übergeben, damit sich jede Rechnung
ohne Testdatenbank prüfen lässt. Die fachlichen Regeln stehen im Handbuch (docs/handbuch.md);
wo Code und Handbuch voneinander abweichen, gilt bis zur Klärung der Code.

Mengen sind immer ganze Stück (oder die Einheit der Warengruppe: Rolle, Eimer, Palette),
Zeiten in Kalendertagen, Gewichte in Kilogramm.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta

SICHERHEITSFAKTOR = 1.25
"""Aufschlag auf den Verbrauch während der Wiederbeschaffungszeit (dimensionslos)."""

INVENTUR_TOLERANZ = 0.02
"""Relative Inventurdifferenz, ab der eine Nachzählung angeordnet wird (2 %)."""

MAX_STAPELHOEHE_M = 2.4
"""Höchste zulässige Stapelhöhe im Bodenlager in Metern."""

BUCHUNGSARTEN = ("zugang", "abgang", "umlagerung", "korrektur", "retoure")
"""Zulässige Buchungsarten, in der Reihenfolge der Buchungsmaske."""


@dataclass(frozen=True)
class Warengruppe:
    """Stammdaten einer Warengruppe, wie sie der Einkauf pflegt."""

    kuerzel: str
    name: str
    zone: str
    verpackungseinheit: int
    lieferzeit_tage: int
    tagesverbrauch: float
    zielreichweite_tage: int = 14
    gefahrstoff: bool = False
    saisonal: bool = False
    haltbarkeit_monate: int | None = None
    max_gewicht_kg: float = 25.0


@dataclass
class Artikel:
    """Ein Lagerartikel mit seinem aktuellen Bestand."""

    nummer: str
    bezeichnung: str
    warengruppe: str
    zone: str
    bestand: int = 0
    gewicht_kg: float = 0.0
    mindesthaltbar_bis: date | None = None
    sicherheitsdatenblatt: bool = False
    lagerplatz: str = ""
    gesperrt: bool = False


@dataclass
class Buchung:
    """Eine Bestandsbuchung; ``menge`` ist bei Abgängen positiv anzugeben."""

    artikel: str
    menge: int
    art: str
    datum: date
    beleg: str = ""


@dataclass
class Inventurposition:
    """Eine gezählte Position der Inventur: Soll aus dem System, Ist aus der Zählung."""

    artikel: str
    soll: int
    ist: int
    zaehler: str = ""
    nachgezaehlt: bool = False


@dataclass
class Bestandsliste:
    """Bestände je Artikelnummer, mit den Buchungen, aus denen sie entstanden sind."""

    bestaende: dict[str, int] = field(default_factory=dict)
    journal: list[Buchung] = field(default_factory=list)

    def buche(self, buchung: Buchung) -> int:
        """Bucht ``buchung`` und gibt den neuen Bestand des Artikels zurück.

        Abgänge, die den Bestand unter null drücken würden, werden abgelehnt
        (``ValueError``); Korrekturen dürfen den Bestand auf jeden Wert setzen, der nicht
        negativ ist.
        """
        if buchung.art not in BUCHUNGSARTEN:
            raise ValueError(f"unbekannte Buchungsart: {buchung.art}")
        alt = self.bestaende.get(buchung.artikel, 0)
        if buchung.art in ("zugang", "retoure"):
            neu = alt + buchung.menge
        elif buchung.art == "abgang":
            neu = alt - buchung.menge
        elif buchung.art == "korrektur":
            neu = buchung.menge
        else:
            neu = alt
        if neu < 0:
            raise ValueError(f"Bestand von {buchung.artikel} würde negativ ({neu})")
        self.bestaende[buchung.artikel] = neu
        self.journal.append(buchung)
        return neu

    def buche_alle(self, buchungen: Iterable[Buchung]) -> None:
        """Bucht ``buchungen`` in der gegebenen Reihenfolge."""
        for buchung in buchungen:
            self.buche(buchung)

    def abgaenge(self, artikel: str, seit: date) -> int:
        """Summe der Abgänge von ``artikel`` seit ``seit`` (einschließlich)."""
        return sum(
            b.menge
            for b in self.journal
            if b.artikel == artikel and b.art == "abgang" and b.datum >= seit
        )


def meldebestand(
    tagesverbrauch: float, lieferzeit_tage: int, sicherheitsfaktor: float = SICHERHEITSFAKTOR
) -> int:
    """Bestand, bei dessen Unterschreiten nachbestellt wird.

    Verbrauch während der Lieferzeit mal Sicherheitsfaktor, auf ganze Einheiten aufgerundet.
    """
    if tagesverbrauch < 0 or lieferzeit_tage < 0:
        raise ValueError("Verbrauch und Lieferzeit dürfen nicht negativ sein")
    return math.ceil(tagesverbrauch * lieferzeit_tage * sicherheitsfaktor)


def runde_auf_verpackungseinheit(menge: int, einheit: int) -> int:
    """Rundet ``menge`` auf ganze Verpackungseinheiten zu ``einheit`` Stück auf.

    Bestellt wird immer in vollen Verpackungseinheiten; eine angebrochene Einheit wird ganz
    bestellt. Mengen bis einschließlich 0 ergeben 0.
    """
    if einheit <= 0:
        raise ValueError("Verpackungseinheit muss positiv sein")
    if menge <= 0:
        return 0
    return (menge // einheit) * einheit


def reichweite_tage(bestand: int, tagesverbrauch: float) -> float:
    """Wie viele Tage ``bestand`` beim gegebenen Verbrauch reicht (unendlich ohne Verbrauch)."""
    if tagesverbrauch <= 0:
        return math.inf
    return bestand / tagesverbrauch


def inventurdifferenz(position: Inventurposition) -> float:
    """Relative Abweichung der Zählung vom Soll (``ist - soll`` geteilt durch ``soll``)."""
    if position.soll == 0:
        return 0.0 if position.ist == 0 else math.inf
    return (position.ist - position.soll) / position.soll


def nachzaehlen(positionen: Iterable[Inventurposition]) -> list[str]:
    """Artikelnummern, deren Differenz die Inventurtoleranz überschreitet und die noch nicht
    nachgezählt wurden, in der Reihenfolge der Zählliste."""
    return [
        p.artikel
        for p in positionen
        if not p.nachgezaehlt and abs(inventurdifferenz(p)) > INVENTUR_TOLERANZ
    ]


def abc_klasse(umsatzanteil: float) -> str:
    """ABC-Klasse nach kumuliertem Umsatzanteil: bis 80 % A, bis 95 % B, sonst C."""
    if not 0.0 <= umsatzanteil <= 1.0:
        raise ValueError("Umsatzanteil liegt zwischen 0 und 1")
    if umsatzanteil <= 0.80:
        return "A"
    if umsatzanteil <= 0.95:
        return "B"
    return "C"


def faellig_bis(lieferdatum: date, lieferzeit_tage: int) -> date:
    """Spätestes Bestelldatum für eine Lieferung am ``lieferdatum``."""
    return lieferdatum - timedelta(days=lieferzeit_tage)


def _mhd_pruefung(artikel: Artikel, stichtag: date, warnung_tage: int = 60) -> list[str]:
    """Mängel zum Mindesthaltbarkeitsdatum eines Artikels am ``stichtag``."""
    if artikel.mindesthaltbar_bis is None:
        return [f"{artikel.nummer}: Mindesthaltbarkeitsdatum fehlt"]
    if artikel.mindesthaltbar_bis < stichtag:
        return [f"{artikel.nummer}: Mindesthaltbarkeit abgelaufen, Artikel sperren"]
    if artikel.mindesthaltbar_bis - stichtag <= timedelta(days=warnung_tage):
        return [f"{artikel.nummer}: läuft in weniger als {warnung_tage} Tagen ab"]
    return []
'''


def _gruppe_code(g: Gruppe, index: int) -> str:
    k = g.kuerzel
    low = k.lower()
    plaetze = _plaetze(g, index)
    plaetze_text = "".join(f'    "{p}",\n' for p in plaetze)
    extra_fields = []
    if g.gefahrstoff:
        extra_fields.append("    gefahrstoff=True,\n")
    if g.saisonal:
        extra_fields.append("    saisonal=True,\n")
    if g.haltbar_monate is not None:
        extra_fields.append(f"    haltbarkeit_monate={g.haltbar_monate},\n")
    if g.max_gewicht != 25.0:
        extra_fields.append(f"    max_gewicht_kg={g.max_gewicht},\n")
    rules = [
        f"""    if artikel.warengruppe != "{k}":
        maengel.append(f"{{artikel.nummer}}: gehört nicht zur Warengruppe {k}")
""",
        f"""    if artikel.zone != GRUPPE_{k}.zone:
        maengel.append(f"{{artikel.nummer}}: Lagerzone {{artikel.zone}}, erwartet {g.zone}")
""",
        f"""    if artikel.gewicht_kg > GRUPPE_{k}.max_gewicht_kg:
        maengel.append(f"{{artikel.nummer}}: {{artikel.gewicht_kg}} kg, zu schwer für {g.zone}")
""",
        f"""    if artikel.lagerplatz and artikel.lagerplatz not in LAGERPLAETZE_{k}:
        maengel.append(f"{{artikel.nummer}}: Lagerplatz {{artikel.lagerplatz}} gehört nicht zu {k}")
""",
    ]
    if g.gefahrstoff:
        rules.append(
            """    if not artikel.sicherheitsdatenblatt:
        maengel.append(f"{artikel.nummer}: Sicherheitsdatenblatt fehlt (Gefahrstoff)")
"""
        )
    if g.haltbar_monate is not None:
        rules.append(
            """    if stichtag is not None:
        maengel.extend(_mhd_pruefung(artikel, stichtag))
"""
        )
    if g.saisonal:
        faktor_text = ", ".join(f"{f}" for f in SAISON)
        saison = f"""

SAISONFAKTOR_{k} = ({faktor_text})
\"\"\"Monatsfaktoren des Verbrauchs von {g.name} (Januar zuerst).\"\"\"


def tagesverbrauch_{low}(monat: int) -> float:
    \"\"\"Erwarteter Tagesverbrauch von {g.name} im ``monat`` (1–12) in {g.einheit}.\"\"\"
    if not 1 <= monat <= 12:
        raise ValueError("Monat liegt zwischen 1 und 12")
    return GRUPPE_{k}.tagesverbrauch * SAISONFAKTOR_{k}[monat - 1]
"""
        verbrauch = f"tagesverbrauch_{low}(monat)"
        sig = "bestand: int, offen: int = 0, monat: int = 1"
        monat_doc = (
            "\n\n    Der Verbrauch folgt der Saison (``SAISONFAKTOR_"
            + k
            + "``); ``monat`` ist der\n    Bestellmonat."
        )
    else:
        saison = ""
        verbrauch = f"GRUPPE_{k}.tagesverbrauch"
        sig = "bestand: int, offen: int = 0"
        monat_doc = ""
    stichtag_sig = ", stichtag: date | None = None" if g.haltbar_monate is not None else ""
    hinweis = g.hinweis
    return f'''

# ---------------------------------------------------------------------------
# Warengruppe {k}: {g.name}
# ---------------------------------------------------------------------------

GRUPPE_{k} = Warengruppe(
    kuerzel="{k}",
    name="{g.name}",
    zone="{g.zone}",
    verpackungseinheit={g.ve},
    lieferzeit_tage={g.lieferzeit},
    tagesverbrauch={g.verbrauch},
    zielreichweite_tage={g.reichweite},
{"".join(extra_fields)})
"""Stammdaten {g.name}; Hauptlieferant {g.lieferant}."""

LAGERPLAETZE_{k} = (
{plaetze_text})
"""Feste Lagerplätze der Warengruppe {k} (Zone-Gang-Fach-Ebene)."""
{saison}

def bestellvorschlag_{low}({sig}) -> int:
    """Bestellvorschlag für {g.name} in {g.mehrzahl or g.einheit}.

    Liegt der verfügbare Bestand (Lagerbestand plus offene Bestellungen) unter dem
    Meldebestand, wird auf {g.reichweite} Tagesverbräuche aufgefüllt und auf ganze
    Verpackungseinheiten zu {g.menge(g.ve, True)} gerundet.{monat_doc}
    """
    verfuegbar = bestand + offen
    verbrauch = {verbrauch}
    grenze = meldebestand(verbrauch, GRUPPE_{k}.lieferzeit_tage)
    if verfuegbar >= grenze:
        return 0
    ziel = math.ceil(verbrauch * GRUPPE_{k}.zielreichweite_tage)
    return runde_auf_verpackungseinheit(ziel - verfuegbar, GRUPPE_{k}.verpackungseinheit)


def pruefe_{low}(artikel: Artikel{stichtag_sig}) -> list[str]:
    """Plausibilitätsprüfung eines Artikels der Warengruppe {g.name}.

    Gibt die gefundenen Mängel als Klartext zurück; eine leere Liste heißt: in Ordnung.
    Hinweis aus dem Handbuch: {hinweis}
    """
    maengel: list[str] = []
{"".join(rules)}    return maengel
'''


def _modul_fuss() -> str:
    eintraege = "".join(f'    "{g.kuerzel}": GRUPPE_{g.kuerzel},\n' for g in GRUPPEN)
    return f'''

WARENGRUPPEN: dict[str, Warengruppe] = {{
{eintraege}}}
"""Alle Warengruppen nach Kürzel."""


def warengruppe(kuerzel: str) -> Warengruppe:
    """Die Warengruppe mit ``kuerzel`` (Groß-/Kleinschreibung egal)."""
    try:
        return WARENGRUPPEN[kuerzel.upper()]
    except KeyError:
        raise KeyError(f"unbekannte Warengruppe: {{kuerzel}}") from None


def meldebestaende() -> dict[str, int]:
    """Meldebestand jeder Warengruppe beim Stammdaten-Tagesverbrauch."""
    return {{k: meldebestand(g.tagesverbrauch, g.lieferzeit_tage) for k, g in WARENGRUPPEN.items()}}


def gefahrstoffgruppen() -> list[str]:
    """Kürzel der Warengruppen, die im Gefahrstoffraum lagern."""
    return [k for k, g in WARENGRUPPEN.items() if g.gefahrstoff]
'''


def bestand_py() -> str:
    """The text of ``src/lager/bestand.py``."""
    parts = [_modul_kopf()]
    parts.extend(_gruppe_code(g, i) for i, g in enumerate(GRUPPEN))
    parts.append(_modul_fuss())
    return "".join(parts)


# --------------------------------------------------------------------------- handbook


def _gruppe_doku(g: Gruppe, nummer: int, index: int) -> str:
    zone_name, regal, ort = ZONEN[g.zone]
    mb = _meldebestand_doku(g)
    plaetze = ", ".join(_plaetze(g, index)[:4])
    zeilen = [
        f"### 5.{nummer} {g.name} ({g.kuerzel})",
        "",
        f"Die Artikel der Gruppe {g.name} lagern in Zone {g.zone} ({zone_name}, {ort}); "
        f"Lagertechnik: {regal}. Bestellt wird "
        f"beim Hauptlieferanten {g.lieferant} in Verpackungseinheiten zu {g.menge(g.ve, True)}; "
        f"die Lieferzeit beträgt {g.lieferzeit} Kalendertage. Der mittlere Verbrauch liegt "
        f"bei {g.menge(g.verbrauch, True)} pro Tag, aufgefüllt wird auf eine Reichweite von "
        f"{g.reichweite} Tagen.",
        "",
        f"Nach der Regel aus Abschnitt 6 liegt der Meldebestand damit bei {g.menge(mb, True)}. "
        f"Typische Lagerplätze sind {plaetze}; weitere Plätze vergibt die Lagerleitung.",
        "",
        f"Besonderheit: {g.hinweis}",
        "",
        f"Wareneingang: {PRUEFUNG[g.kuerzel]} " + KOMMISSIONIERUNG[index % len(KOMMISSIONIERUNG)],
        "",
    ]
    if g.gefahrstoff:
        zeilen += [
            "Die Gruppe ist Gefahrstoff. Jeder Artikel braucht ein aktuelles "
            "Sicherheitsdatenblatt, bevor er eingelagert wird; ohne Datenblatt bleibt die Ware "
            "im Wareneingang gesperrt. Mengen über der Zusammenlagerungsgrenze meldet die "
            "Schichtleitung der Fachkraft für Arbeitssicherheit.",
            "",
        ]
    if g.haltbar_monate is not None:
        zeilen += [
            f"Die Ware ist ab Herstellung etwa {g.haltbar_monate} Monate haltbar. Artikel, deren "
            "Mindesthaltbarkeitsdatum in weniger als 60 Tagen erreicht ist, werden bevorzugt "
            "ausgegeben; abgelaufene Ware wird gesperrt und nicht mehr kommissioniert.",
            "",
        ]
    if g.saisonal:
        monate = ", ".join(
            f"{m} {_de(f)}"
            for m, f in zip(
                (
                    "Jan",
                    "Feb",
                    "Mär",
                    "Apr",
                    "Mai",
                    "Jun",
                    "Jul",
                    "Aug",
                    "Sep",
                    "Okt",
                    "Nov",
                    "Dez",
                ),
                SAISON,
                strict=True,
            )
        )
        zeilen += [
            "Der Verbrauch schwankt mit der Saison. Der Bestellvorschlag rechnet mit "
            f"Monatsfaktoren auf den mittleren Verbrauch: {monate}.",
            "",
        ]
    zeilen += [
        "| Kennzahl | Wert |",
        "|---|---|",
        f"| Verpackungseinheit | {g.menge(g.ve)} |",
        f"| Lieferzeit | {g.lieferzeit} Tage |",
        f"| Verbrauch pro Tag | {g.menge(g.verbrauch)} |",
        f"| Zielreichweite | {g.reichweite} Tage |",
        f"| Höchstgewicht je Lagereinheit | {_de(g.max_gewicht)} kg |",
        "",
        f"Katalogartikel der Gruppe {g.kuerzel}:",
        "",
        "| Artikelnummer | Bezeichnung | Gewicht | Stammplatz |",
        "|---|---|---|---|",
    ]
    for nummer, name, kg, platz in _katalog(g, index):
        zeilen.append(f"| {nummer} | {name} | {_de(kg)} kg | {platz} |")
    zeilen.append("")
    return "\n".join(zeilen)


def _beispielzeile(g: Gruppe) -> str:
    """A row of the handbook's worked example (its own rule: factor 1.5, rounded up)."""
    ziel = math.ceil(g.verbrauch * g.reichweite)
    vorschlag = math.ceil(ziel / g.ve) * g.ve
    return (
        f"| {g.kuerzel} ({g.name}) | {g.menge(_meldebestand_doku(g))} | {g.menge(ziel)} | "
        f"{g.menge(vorschlag)} |"
    )


def _meldebestand_doku(g: Gruppe) -> int:
    """The reorder point the handbook states (its own factor, 1.5)."""
    return math.ceil(g.verbrauch * g.lieferzeit * 1.5)


def _de(value: float) -> str:
    """A number in German notation (decimal comma, no trailing ,0)."""
    text = f"{value:g}"
    return text.replace(".", ",")


_ROLLEN = (
    (
        "Lagerleitung",
        "verantwortet Bestände, Lagerplätze und die Inventur; gibt "
        "Korrekturbuchungen über 500 Euro Warenwert frei.",
    ),
    (
        "Schichtleitung",
        "teilt Kommissionierer ein, nimmt Störungsmeldungen an und entscheidet "
        "über Sperrungen im laufenden Betrieb.",
    ),
    (
        "Wareneingang",
        "prüft Lieferungen gegen Lieferschein und Bestellung, bucht Zugänge und "
        "vergibt Lagerplätze nach Abschnitt 4.",
    ),
    (
        "Kommissionierung",
        "stellt Aufträge nach Pickliste zusammen und meldet Fehlmengen sofort "
        "in der Buchungsmaske.",
    ),
    (
        "Einkauf",
        "pflegt die Stammdaten der Warengruppen und löst Bestellungen aus den "
        "Bestellvorschlägen aus.",
    ),
    (
        "Fachkraft für Arbeitssicherheit",
        "gibt Gefahrstofflagerung frei und prüft die Zusammenlagerung vierteljährlich.",
    ),
)

_GLOSSAR = (
    ("Meldebestand", "Bestand, bei dessen Unterschreiten ein Bestellvorschlag entsteht."),
    ("Verpackungseinheit (VE)", "Kleinste Menge, die beim Lieferanten bestellt werden kann."),
    ("Reichweite", "Zeit in Tagen, die ein Bestand beim mittleren Verbrauch reicht."),
    ("Zielreichweite", "Reichweite, auf die ein Bestellvorschlag auffüllt."),
    (
        "Wiederbeschaffungszeit",
        "Zeit von der Bestellung bis zur Einlagerung; hier gleich der Lieferzeit gesetzt.",
    ),
    ("Kommissionierung", "Zusammenstellen der Artikel eines Auftrags aus dem Lager."),
    ("Pickliste", "Liste der zu kommissionierenden Positionen, nach Lagerplatz sortiert."),
    ("Inventurdifferenz", "Abweichung zwischen gezähltem und gebuchtem Bestand."),
    ("Sperrbestand", "Bestand, der nicht kommissioniert werden darf (Qualität, MHD, Klärung)."),
    (
        "Sonderanfertigung",
        "Artikel, der nur auf Kundenauftrag gefertigt oder zugeschnitten "
        "wird und nicht im Katalog steht.",
    ),
    ("Kragarmregal", "Regal ohne Vorderstützen für Langgut wie Rohre, Kabeltrommeln, Platten."),
    ("Auffangwanne", "Wanne unter Gefahrstoffgebinden, die auslaufende Flüssigkeit aufnimmt."),
    ("ABC-Analyse", "Einteilung der Artikel nach Umsatzanteil in die Klassen A, B und C."),
    ("Charge", "Menge, die in einem Fertigungslauf hergestellt wurde und gleiche Merkmale hat."),
    ("Umlagerung", "Wechsel des Lagerplatzes ohne Änderung des Gesamtbestands."),
)

_FAQ = (
    (
        "Darf ich einen Artikel auf einen freien Platz einer anderen Zone legen?",
        "Nein. Jede Warengruppe hat ihre Zone; ein falscher Platz fällt erst bei der nächsten "
        "Inventur auf und kostet dann Suchzeit. Ist die Zone voll, entscheidet die Schichtleitung "
        "über einen Ausweichplatz und bucht ihn als Umlagerung.",
    ),
    (
        "Was passiert, wenn der Bestand in der Buchungsmaske negativ würde?",
        "Die Buchung wird abgelehnt. Meist fehlt ein Zugang. Kläre das mit dem Wareneingang, bevor "
        "du eine Korrekturbuchung anlegst.",
    ),
    (
        "Wie schnell muss eine Fehlmenge gemeldet werden?",
        "Sofort beim Kommissionieren, spätestens aber vor Schichtende, damit der Einkauf am "
        "nächsten Morgen nachbestellen kann.",
    ),
    (
        "Wer darf Korrekturbuchungen anlegen?",
        "Bis 500 Euro Warenwert die Schichtleitung, darüber nur die Lagerleitung.",
    ),
    (
        "Was tun mit beschädigter Ware aus einer Retoure?",
        "Als Sperrbestand einlagern, fotografieren und den Schaden im Retourenbeleg vermerken. "
        "Über Verschrottung entscheidet die Lagerleitung.",
    ),
    (
        "Warum weicht der Bestellvorschlag manchmal von meiner Rechnung ab?",
        "Er rundet auf volle Verpackungseinheiten und zählt offene Bestellungen mit. Bei "
        "Saisonware kommt der Monatsfaktor dazu.",
    ),
)


def handbuch_md() -> str:
    """The text of ``docs/handbuch.md``."""
    out = [
        "# Handbuch Zentrallager",
        "",
        "Stand: Version 3.4 der Lagersoftware. Dieses Handbuch beschreibt die Abläufe im "
        "Zentrallager vom Wareneingang bis zur Retoure. Es richtet sich an alle, die im Lager "
        "buchen, einlagern oder kommissionieren, und an den Einkauf, der die Stammdaten pflegt. "
        "Fragen und Korrekturen bitte an die Lagerleitung.",
        "",
        "## 1 Zweck und Geltungsbereich",
        "",
        "Das Handbuch gilt für die Hallen 1 bis 3, den Gefahrstoffraum und das Freilager auf dem "
        "Hof. Für das Außenlager in der Industriestraße gelten eigene Regeln, die hier nicht "
        "beschrieben sind. Wo eine Arbeitsanweisung einer Abteilung strenger ist als dieses "
        "Handbuch, gilt die strengere Regel.",
        "",
        "Die Lagersoftware bildet jeden Bestand als Buchung ab. Was nicht gebucht ist, gibt es für "
        "das System nicht: eine Lieferung, die im Gang steht, aber nicht gebucht wurde, fehlt im "
        "Bestellvorschlag und löst womöglich eine doppelte Bestellung aus.",
        "",
        "## 2 Rollen",
        "",
    ]
    for rolle, text in _ROLLEN:
        out.append(f"- **{rolle}** {text}")
    out += [
        "",
        "Vertretungen regelt der Schichtplan. Wer eine Rolle vertritt, hat für diese Zeit alle "
        "Rechte und Pflichten der Rolle.",
        "",
        "## 3 Wareneingang",
        "",
        "Jede Lieferung wird am Tor 2 angenommen. Der Ablauf ist immer gleich:",
        "",
        "1. Lieferschein mit der Bestellung vergleichen (Artikel, Menge, Verpackungseinheit).",
        "2. Sichtprüfung der Verpackung; Schäden auf dem Lieferschein vermerken und fotografieren.",
        "3. Stichprobe öffnen: bei Kleinteilen eine Verpackungseinheit je Artikel, bei "
        "Paletten die oberste Lage.",
        "4. Zugang buchen, erst dann einlagern. Die Buchung erzeugt das Etikett mit dem "
        "Lagerplatz.",
        "5. Bei Gefahrstoffen: Sicherheitsdatenblatt prüfen; fehlt es, Ware sperren und den "
        "Einkauf informieren.",
        "",
        "Mehr- und Mindermengen über 5 % der bestellten Menge meldet der Wareneingang noch am "
        "selben Tag dem Einkauf. Teillieferungen werden als eigener Zugang gebucht; die offene "
        "Restmenge bleibt als offene Bestellung stehen und zählt im Bestellvorschlag mit.",
        "",
        "## 4 Einlagerung und Lagerzonen",
        "",
        "Jede Warengruppe hat eine feste Zone. Innerhalb der Zone vergibt die Software freie "
        "Plätze nach Gang, Fach und Ebene; die Schreibweise ist Zone-Gang-Fach-Ebene, also "
        "zum Beispiel A-03-12-2.",
        "",
        "| Zone | Bereich | Regal | Ort |",
        "|---|---|---|---|",
    ]
    for zone, (name, regal, ort) in ZONEN.items():
        out.append(f"| {zone} | {name} | {regal} | {ort} |")
    out += [
        "",
        "Im Bodenlager dürfen Stapel höchstens 2,4 m hoch sein. Schwere Ware gehört in die "
        "unteren Ebenen, Ware über 25 kg je Lagereinheit nie über Schulterhöhe.",
        "",
        "## 5 Warengruppen",
        "",
        "Die folgenden Abschnitte beschreiben jede Warengruppe mit ihren Kennzahlen. Die "
        "Kennzahlen pflegt der Einkauf; weicht ein Wert hier vom System ab, gilt das System und "
        "das Handbuch wird beim nächsten Stand korrigiert.",
        "",
    ]
    for i, g in enumerate(GRUPPEN):
        out.append(_gruppe_doku(g, i + 1, i))
    out += [
        "## 6 Meldebestand und Bestellvorschlag",
        "",
        "Der Meldebestand ist der Verbrauch während der Lieferzeit mal einem "
        "Sicherheitsfaktor von 1,5, aufgerundet auf ganze Einheiten. Der Sicherheitsfaktor "
        "deckt Verbrauchsspitzen und verspätete Lieferungen ab. Fällt der verfügbare Bestand "
        "(Lagerbestand plus offene Bestellungen) unter den Meldebestand, erzeugt die Software "
        "einen Bestellvorschlag.",
        "",
        "Der Bestellvorschlag füllt auf die Zielreichweite der Warengruppe auf und rundet auf "
        "volle Verpackungseinheiten auf: wer 101 Stück braucht und nur in Einheiten zu 25 "
        "bestellen kann, bestellt 125 Stück. Der Einkauf prüft jeden Vorschlag, bevor er "
        "bestellt; er darf Mengen anpassen, muss eine Abweichung von mehr als einer "
        "Verpackungseinheit aber begründen.",
        "",
        "Beispiel: Bei 340 Stück Verbrauch pro Tag und 5 Tagen Lieferzeit liegt der "
        "Meldebestand bei 340 × 5 × 1,5 = 2550 Stück.",
        "",
        "Die folgende Tabelle rechnet die Regel für jede Warengruppe bei einem Bestand von "
        "null und ohne offene Bestellungen durch (Meldebestand und Vorschlag in der Einheit "
        "der Gruppe):",
        "",
        "| Gruppe | Meldebestand | Zielbestand | Vorschlag bei Bestand 0 |",
        "|---|---|---|---|",
        *(_beispielzeile(g) for g in GRUPPEN),
        "",
        "## 7 Kommissionierung",
        "",
        "Kommissioniert wird nach Pickliste, die nach Lagerplatz sortiert ist. Wer einen Platz "
        "leer vorfindet, bucht die Fehlmenge sofort und nimmt die nächste Position; gesucht "
        "wird erst nach dem Auftrag. Angebrochene Verpackungseinheiten werden zuerst "
        "aufgebraucht, bei Ware mit Mindesthaltbarkeit gilt: was zuerst abläuft, geht zuerst "
        "raus.",
        "",
        "Eilaufträge sind in der Pickliste rot markiert und gehen vor. Ein Auftrag gilt als "
        "fertig, wenn alle Positionen gepickt oder als Fehlmenge gebucht sind und der "
        "Packtisch den Auftrag quittiert hat.",
        "",
        "## 8 Inventur",
        "",
        "Die Stichtagsinventur findet am letzten Werktag des Jahres statt, zusätzlich wird "
        "jede Zone einmal im Quartal permanent gezählt. Gezählt wird zu zweit: eine Person "
        "zählt, die andere schreibt. Weicht die Zählung um mehr als 2 % vom Soll ab, wird die "
        "Position von einem anderen Team nachgezählt. Erst nach der Nachzählung bucht die "
        "Lagerleitung die Differenz als Korrektur.",
        "",
        "Während der Inventur ruhen Umlagerungen in der gezählten Zone. Zugänge werden "
        "gebucht, aber erst nach der Zählung eingelagert.",
        "",
        "## 9 Retouren",
        "",
        "Retouren von Kunden nimmt der Wareneingang am Tor 2 an. Katalogware nehmen wir "
        "innerhalb von 30 Tagen nach Zustellung zurück, wenn sie unbenutzt und in der "
        "Originalverpackung ist. Die Ware wird geprüft und entweder als Zugang (Buchungsart "
        "retoure) eingelagert oder als Sperrbestand gebucht.",
        "",
        "Retouren von Sonderanfertigungen nehmen wir nur nach Rücksprache mit dem Vertrieb und "
        "nur bis 10 Werktage nach Zustellung an; zugeschnittene Kabel, Rohre und Platten sind "
        "von der Rücknahme ausgeschlossen. Gefahrstoffe nehmen wir nur in ungeöffneten "
        "Gebinden zurück.",
        "",
        "Jede Retoure bekommt einen Retourenbeleg mit Grund, Zustand und Fotos. Gutschriften "
        "löst die Buchhaltung erst aus, wenn der Beleg vollständig ist.",
        "",
        "## 10 Schichtübergabe",
        "",
        "Jede Schicht endet mit einer Übergabe an der Tafel im Leitstand. Die Schichtleitung "
        "nennt offene Eilaufträge, gesperrte Gänge, Fehlmengen ohne Klärung und Lieferungen, "
        "die angekündigt, aber noch nicht eingetroffen sind. Was nicht an der Tafel steht, "
        "gilt als erledigt; wer etwas übernimmt, zeichnet es ab. Bei Schichtende offene "
        "Kommissionieraufträge bleiben dem Kommissionierer zugeordnet, bis die nächste "
        "Schicht sie neu verteilt.",
        "",
        "Einmal pro Woche prüft die Lagerleitung die Übergabezettel auf wiederkehrende "
        "Probleme und bringt sie in die Bestandsrunde ein, die über Stammdaten und Regeln "
        "entscheidet.",
        "",
        "## 11 Störungen und Eskalation",
        "",
        "Fällt die Lagersoftware aus, wird auf Papier-Picklisten weitergearbeitet; jede "
        "Entnahme wird auf der Liste abgehakt und nach der Störung nachgebucht. Fällt ein "
        "Stapler aus, sperrt die Schichtleitung die betroffenen Gänge in Zone E. Bei "
        "ausgelaufenem Gefahrstoff gilt der Alarmplan am Eingang des Gefahrstoffraums.",
        "",
        "## 12 Glossar",
        "",
    ]
    for wort, text in _GLOSSAR:
        out.append(f"**{wort}** — {text}")
        out.append("")
    out += ["## 13 Häufige Fragen", ""]
    for frage, antwort in _FAQ:
        out += [f"**{frage}**", "", antwort, ""]
    return "\n".join(out).rstrip("\n") + "\n"


# --------------------------------------------------------------------------- changelog

_AENDERUNGEN = (
    "Die Buchungsmaske zeigt die Reichweite des Artikels in Tagen neben dem Bestand",
    "Die Pickliste sortiert nach Gang und Fach statt nach Artikelnummer; Laufwege im Lager "
    "werden damit deutlich kürzer",
    "Etikettendruck für Lagerplätze mit QR-Code, lesbar mit den Handscannern der Kommissionierung",
    "Die Inventurliste ist als CSV exportierbar (Semikolon als Trennzeichen, UTF-8)",
    "Eine Nachzählung wird automatisch angeordnet, wenn die Inventurtoleranz überschritten ist",
    "Sperrbestand erscheint nicht mehr im Bestellvorschlag und nicht mehr in der Pickliste",
    "Warengruppen lassen sich in allen Listen nach Zone filtern",
    "Teillieferungen werden als eigener Zugang gebucht; die Restmenge bleibt offen",
    "Die Mindesthaltbarkeit wird beim Wareneingang abgefragt, wenn die Warengruppe sie führt",
    "Retourenbeleg mit Fotoupload direkt vom Handscanner",
    "Korrekturbuchungen über 500 Euro Warenwert brauchen eine Freigabe der Lagerleitung",
    "Der Bestellvorschlag berücksichtigt offene Bestellungen",
    "ABC-Klassen werden monatlich neu berechnet und in der Artikelliste angezeigt",
    "Umlagerungen erscheinen im Journal des Artikels mit altem und neuem Platz",
    "Gefahrstoffe zeigen in der Pickliste das Piktogramm der Gefahrenklasse",
    "Eilaufträge werden in der Pickliste rot hervorgehoben",
    "Neue Rolle Fachkraft für Arbeitssicherheit mit Lesezugriff auf den Gefahrstoffraum",
)

_FEHLER = (
    "Der Bestand wurde nach einer Korrekturbuchung bis zum Neuladen doppelt angezeigt",
    "Etiketten mit Umlauten wurden nach 24 Zeichen abgeschnitten",
    "Die Pickliste übersprang Positionen, deren Fehlmenge null war",
    "Der Export der Inventurliste brach bei einem Semikolon im Artikeltext ab",
    "Die Reichweite zeigte bei einem Verbrauch von null einen Fehler statt unendlich",
    "Der Saisonfaktor wurde im Dezember mit dem Januarwert gerechnet",
    "Die Lagerplatz-Suche fand keine Plätze der Ebene 4",
    "Die Zeitstempel im Buchungsjournal standen in UTC statt in Ortszeit",
    "Die Gefahrstoffsperre ließ sich ohne Sicherheitsdatenblatt aufheben",
    "Der Filter nach Warengruppe unterschied Groß- und Kleinschreibung",
    "Nach einer Umlagerung blieb der alte Lagerplatz im Etikett stehen",
    "Retouren wurden als Zugang ohne Retourenbeleg verbucht",
    "Der Bestellvorschlag zählte gesperrte Ware als verfügbar",
)


def _versionen() -> list[tuple[str, date]]:
    """Every released version with its date, oldest first (3.4.1 is the newest)."""
    out = []
    tag = date(2018, 3, 5)
    n = 0
    for major, minors in ((1, 8), (2, 8), (3, 5)):
        for minor in range(minors):
            patches = 1 + (minor + major) % 3
            if (major, minor) == (3, 4):
                patches = 2
            for patch in range(patches):
                n += 1
                tag += timedelta(days=19 + (n * 17) % 41)
                out.append((f"{major}.{minor}.{patch}", tag))
    return out


_BERICHTE = (
    "Ladenhüter",
    "Fehlmengen je Schicht",
    "Umschlaghäufigkeit",
    "Retourenquote",
    "Inventurdifferenzen je Zone",
)
_SCANFELDER = ("Lagerplatz", "Charge", "Seriennummer", "Lieferscheinnummer", "MHD")


def _round_robin(*pools: tuple[str, ...] | list[str]) -> list[str]:
    """The entries of ``pools`` interleaved (first of each, then second of each, ...)."""
    out = []
    for i in range(max(len(p) for p in pools)):
        out.extend(p[i] for p in pools if i < len(p))
    return out


def _neuerungen() -> list[str]:
    """Every feature line of the changelog, each used once."""
    return _round_robin(
        _AENDERUNGEN,
        [f"Neue Auswertung „{x}“ im Menü Berichte" for x in _BERICHTE],
        [f"Lieferantenpreise von {g.lieferant} werden nachts importiert" for g in GRUPPEN],
        [f"Buchungsmaske: {x} lässt sich mit dem Handscanner erfassen" for x in _SCANFELDER],
    )


def _fehlerbehebungen() -> list[str]:
    """Every fix line of the changelog, each used once."""
    return _round_robin(
        _FEHLER,
        [f"Etiketten der Gruppe {g.kuerzel} wurden mit falscher Zone gedruckt" for g in GRUPPEN],
        [f"Der Export „{x}“ brach bei mehr als 10.000 Zeilen ab" for x in _BERICHTE],
        [
            f"Der Bestellvorschlag {g.kuerzel} zählte offene Bestellungen doppelt"
            for g in GRUPPEN[7:] + GRUPPEN[:7]
        ],
    )


def changelog_md() -> str:
    """The text of ``docs/changelog.md`` (newest version first; no line repeats)."""
    neu, behoben = iter(_neuerungen()), iter(_fehlerbehebungen())
    abschnitte = []
    for version, tag in _versionen():
        zeilen = [f"## {version} ({tag.isoformat()})", ""]
        if version == "3.2.0":
            zeilen += [
                "### Geändert",
                "",
                "- Sicherheitsfaktor des Meldebestands im Code von 1,5 auf 1,25 gesenkt "
                "(Beschluss der Bestandsrunde vom Frühjahr; das Handbuch wird nachgezogen).",
                "- Bestellvorschlag je Warengruppe als eigene Funktion, damit Saisonware "
                "eigene Regeln bekommen kann.",
                "",
            ]
        elif version.endswith(".0.0"):
            zeilen += [
                "### Geändert",
                "",
                f"- Neue Hauptversion: {_HAUPTVERSIONEN[version]}",
                "",
            ]
        if version.endswith(".0") and version != "3.2.0":
            zeilen += ["### Neu", "", f"- {next(neu)}.", f"- {next(neu)}.", ""]
            if version.startswith("3."):
                gruppe = GRUPPEN[int(version.split(".")[1]) * 3 % len(GRUPPEN)]
                zeilen += [
                    "### Stammdaten",
                    "",
                    f"- {gruppe.name}: Lieferzeit {gruppe.lieferzeit} Tage, "
                    f"Verpackungseinheit {gruppe.menge(gruppe.ve)}, Hauptlieferant "
                    f"{gruppe.lieferant}.",
                    "",
                ]
        elif not version.endswith(".0"):
            zeilen += ["### Behoben", "", f"- {next(behoben)}.", f"- {next(behoben)}.", ""]
        abschnitte.append(zeilen)
    out = [
        "# Änderungen der Lagersoftware",
        "",
        "Alle nennenswerten Änderungen, neueste zuerst. Versionen folgen Semantic Versioning: "
        "eine neue Hauptversion ändert Buchungsregeln, eine Nebenversion bringt Funktionen, "
        "eine Patch-Version behebt Fehler. Daten sind Auslieferungstage im Zentrallager.",
        "",
    ]
    for zeilen in reversed(abschnitte):
        out += zeilen
    return "\n".join(out).rstrip("\n") + "\n"


_HAUPTVERSIONEN = {
    "1.0.0": "erste Version im Zentrallager; Bestände, Buchungen und Picklisten.",
    "2.0.0": "Korrekturbuchungen brauchen einen Grund; Umlagerungen werden eigene "
    "Buchungen statt Abgang und Zugang.",
    "3.0.0": "Retouren sind eine eigene Buchungsart mit Retourenbeleg; Sperrbestand wird "
    "getrennt geführt.",
}
"""What each major version changed in the booking rules."""


# --------------------------------------------------------------------------- the pack's tail


def long_files() -> dict[str, str]:
    """Path → text of every generated fixture file, in the order they stand in the pack."""
    return {
        "src/lager/bestand.py": bestand_py(),
        "docs/handbuch.md": handbuch_md(),
        "docs/changelog.md": changelog_md(),
    }


def yaml_tail() -> str:
    """The pack's text from the marker line to the end of the file."""
    lines = [MARKER]
    for path, text in long_files().items():
        lines.append(f"    {path}: |")
        for line in text.splitlines():
            lines.append(FILE_INDENT + line if line else "")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """Rewrite the pack's generated tail (``--check``: only compare; exit 1 on a difference)."""
    text = PACK.read_text(encoding="utf-8")
    head, sep, _ = text.partition(MARKER + "\n")
    if not sep:
        print(f"{PACK}: marker line not found", file=sys.stderr)
        return 2
    new = head + yaml_tail()
    if "--check" in argv:
        if new != text:
            print(f"{PACK}: generated fixture files differ; run {Path(__file__).name}")
            return 1
        return 0
    PACK.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
