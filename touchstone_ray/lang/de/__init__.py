"""German: the table of every text touchstone shows or sends in this language (SPEC §10:
reports speak the pack's language). :mod:`touchstone_ray.lang` reads it; every language has the
same names and keys (a test pins it): labels in :mod:`.labels`, the glossary in :mod:`.glossary`,
the judge's wording in :mod:`.judge`, the web UI's labels in :mod:`.ui`, the CLI's
end-of-run lines and the judge checks' warnings in :mod:`.lines`, the tools bench's report,
comparison and UI labels in :mod:`.tools`."""

from __future__ import annotations

from touchstone_ray.lang.de.glossary import GLOSSARY
from touchstone_ray.lang.de.judge import JUDGE
from touchstone_ray.lang.de.labels import LEVELS, REPORT, SCORECARD
from touchstone_ray.lang.de.lines import LINES
from touchstone_ray.lang.de.tools import TOOLS
from touchstone_ray.lang.de.ui import PLURALS, UI

__all__ = ["GLOSSARY", "JUDGE", "LEVELS", "LINES", "PLURALS", "REPORT", "SCORECARD", "TOOLS", "UI"]
