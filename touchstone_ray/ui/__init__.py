"""``touchstone-ray ui`` (SPEC §6): a local web control centre over the bundles under ``--runs``.

An aiohttp app: the overview of every bundle grouped by pack, a live page per running bundle
(server-sent events from the bundle's files), the result page (the report's own sections),
and the packs viewer and validator. It binds 127.0.0.1 by default; see :mod:`.security`.
Everything it serves is local: no external asset, a Content-Security-Policy like
``report.html``'s.
"""

from __future__ import annotations

from touchstone_ray.ui.app import UiSettings, make_app, serve

__all__ = ["UiSettings", "make_app", "serve"]
