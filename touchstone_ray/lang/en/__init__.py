"""English: the table of every text touchstone shows or sends in this language (SPEC §10:
reports speak the pack's language). :mod:`touchstone_ray.lang` reads it; every language has the
same names and keys (a test pins it): labels in :mod:`.labels`, the glossary in :mod:`.glossary`,
the judge's wording in :mod:`.judge`, the web UI's labels in :mod:`.ui`, the CLI's
end-of-run lines and the judge checks' warnings in :mod:`.lines`, the tools bench's report,
comparison and UI labels in :mod:`.tools`."""

from __future__ import annotations

from touchstone_ray.lang.en.glossary import GLOSSARY
from touchstone_ray.lang.en.judge import JUDGE
from touchstone_ray.lang.en.labels import LEVELS, REPORT, SCORECARD
from touchstone_ray.lang.en.lines import LINES
from touchstone_ray.lang.en.tools import TOOLS
from touchstone_ray.lang.en.ui import PLURALS, UI

__all__ = ["GLOSSARY", "JUDGE", "LEVELS", "LINES", "PLURALS", "REPORT", "SCORECARD", "TOOLS", "UI"]
