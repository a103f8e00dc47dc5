"""A judge run's live page (issue 31 item 6): per judge the answers done of planned, its
calibration, the histogram of its scores, the red flags it raised so far and an ETA, pushed by
server-sent events whenever its files change. Routes (:class:`JudgesLive`):
``/judge-live/<bundle>`` and its stream ``/judge-events/<bundle>``.

Read from the bundle, never from the judge run: planned answers are the bundle's de-duplicated
responses of its pack (:meth:`~touchstone_ray.bundle.Bundle.pack_responses`), done those with
a verdict in ``judgements/<judge>/verdicts.jsonl`` (the last record per key); calibration is
the pack's ``calibration`` items and the judge's ``calibration.jsonl``, with
:func:`~touchstone_ray.judging.checks.judge_check`'s band accuracy, red-flag recall and
verdict once every item is in. The histogram counts the scored verdicts per score 1..5.

The files carry no times, so the ETA (s) is the rate this page's stream has seen: answers
done since the stream opened ÷ seconds since then, :func:`~touchstone_ray.ui._live_state.run_eta_s`;
``—`` until a verdict arrived while watching. The stream ends once every judge has all its
answers and calibration items.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from aiohttp import web

from touchstone_ray.bundle import Bundle, JudgeFiles, judge_ids
from touchstone_ray.errors import TouchstoneError
from touchstone_ray.judging.checks import judge_check
from touchstone_ray.ui._live_state import eta_text, run_eta_s
from touchstone_ray.ui._page import HEADERS, e, page
from touchstone_ray.ui.security import confined_bundle

__all__ = ["POLL_S", "JudgeProgress", "JudgesLive", "judge_live_link", "judges_live"]

POLL_S = 1.0
"""How often the stream looks at the judges' files (s)."""
SCORES = (1, 2, 3, 4, 5)
BAR = "display:inline-block;height:10px;background:#2f5fb3;vertical-align:middle;"
"""A histogram bar's style (its width is the count's share of the largest)."""


@dataclass
class JudgeProgress:
    """One judge's progress on a bundle (counts of answers, i.e. response records)."""

    judge: str
    planned: int
    done: int = 0
    calibration_planned: int = 0
    calibration_done: int = 0
    band_accuracy: float | None = None
    """Share (0..1) of calibration items scored in their band; None until all are in."""
    red_flag_recall: float | None = None
    """Share (0..1) of expected calibration red flags raised; None until all are in or
    when the pack expects none."""
    qualified: bool | None = None
    """The calibration verdict (SPEC §10); None until every item is in."""
    histogram: dict[int, int] = field(default_factory=dict)
    """Score (1..5) → scored verdicts."""
    unscored: int = 0
    """Verdicts without a score (unscored or judge errors)."""
    red_flags: list[str] = field(default_factory=list)
    """``model / variant / prompt id`` of each verdict that raised a red flag, in file order."""
    eta_s: float | None = None

    @property
    def complete(self) -> bool:
        """Every answer and calibration item has its verdict."""
        return self.done >= self.planned and self.calibration_done >= self.calibration_planned


def judges_live(root: Path) -> list[JudgeProgress]:
    """Each judge's progress on the bundle at ``root`` (judges with a folder under
    ``judgements/``, sorted). Raises :class:`~touchstone_ray.errors.BundleError` for an
    unreadable bundle or pack."""
    bundle = Bundle.open(root)
    pack = bundle.pack()
    responses, _ = bundle.pack_responses(pack)
    keys = {r.key for r in responses}
    out = []
    for judge in judge_ids(bundle.layout):
        files = JudgeFiles(bundle.layout, judge)
        verdicts = [v for k, v in files.verdicts().items() if k in keys]
        calibration = files.calibration()
        progress = JudgeProgress(
            judge,
            planned=len(keys),
            done=len(verdicts),
            calibration_planned=len(pack.calibration),
            calibration_done=len(calibration),
        )
        scores = Counter(v.score for v in verdicts if v.score is not None)
        progress.histogram = {s: scores.get(s, 0) for s in SCORES}
        progress.unscored = sum(1 for v in verdicts if v.score is None)
        progress.red_flags = [
            f"{v.model} / {v.variant} / {v.prompt_id}" for v in verdicts if v.red_flag
        ]
        if pack.calibration and progress.calibration_done >= progress.calibration_planned:
            check = judge_check(
                pack,
                {k: v.to_record() for k, v in calibration.items()},
                [v.to_record() for v in verdicts],
                [r.to_record() for r in files.reports().values()],
            )
            progress.band_accuracy = check["band_accuracy"]
            progress.red_flag_recall = check["red_flag_recall"]
            progress.qualified = bool(check["qualified"])
        out.append(progress)
    return out


class Rates:
    """What one stream has seen: per judge the time and answers done when it first looked,
    for :attr:`JudgeProgress.eta_s`."""

    def __init__(self) -> None:
        self.first: dict[str, tuple[float, int]] = {}

    def eta(self, judges: list[JudgeProgress], now: float) -> None:
        """Set each judge's ``eta_s`` from the answers done since this stream first saw it."""
        for j in judges:
            t0, done0 = self.first.setdefault(j.judge, (now, j.done))
            j.eta_s = run_eta_s(max(j.planned - j.done, 0), j.done - done0, t0, now)


def _share(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f} %"


def _calibration(j: JudgeProgress) -> str:
    if not j.calibration_planned:
        return "calibration: none in the pack"
    verdict = {None: "pending", True: "qualified", False: "not qualified"}[j.qualified]
    return (
        f"calibration {j.calibration_done}/{j.calibration_planned} · band accuracy "
        f"{_share(j.band_accuracy)} · red-flag recall {_share(j.red_flag_recall)} · "
        f'<span class="qualified">{verdict}</span>'
    )


def _card(j: JudgeProgress) -> str:
    pct = 100.0 * j.done / j.planned if j.planned else 0.0
    top = max(j.histogram.values(), default=0) or 1
    bars = "".join(
        f'<div class="hist-row" data-score="{s}">{s}: <span class="hist-bar" style="{BAR}'
        f'width:{120 * n / top:.0f}px"></span> <span class="n">{n}</span></div>'
        for s, n in j.histogram.items()
    )
    flags = "".join(f"<li>{e(f)}</li>" for f in j.red_flags) or "<li>none</li>"
    return (
        f'<div class="card judge-card" data-judge="{e(j.judge)}"><h3>{e(j.judge)}</h3>'
        f'<div class="bar"><span style="width:{pct:.1f}%"></span></div>'
        f'<div class="progress">{j.done}/{j.planned} answers</div>'
        f'<div class="calibration">{_calibration(j)}</div>'
        f'<div class="histogram">{bars}<div>unscored: <span class="unscored">{j.unscored}'
        f"</span></div></div>"
        f'<div>red flags so far: <span class="n-red">{len(j.red_flags)}</span></div>'
        f'<ul class="red-flags">{flags}</ul>'
        f'<div>ETA <span class="eta">{eta_text(j.eta_s)}</span></div></div>'
    )


def judges_body(judges: list[JudgeProgress], now: float) -> str:
    """The HTML of the cards (what each server-sent event replaces)."""
    cards = "".join(_card(j) for j in judges) or '<p class="muted">No judge has started.</p>'
    stamp = time.strftime("%H:%M:%S", time.localtime(now))
    done = bool(judges) and all(j.complete for j in judges)
    state = "done" if done else "judging"
    return (
        f'<p>status <span class="badge s-{state}" id="judge-state">{state}</span>'
        f' <span class="muted">updated {stamp}</span></p><div class="cards">{cards}</div>'
    )


def judge_live_link(rel: str) -> str:
    """The page's address for the bundle at ``rel`` (relative to ``--runs``)."""
    return f"/judge-live/{quote(rel)}"


def _sse(name: str, html: str) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'html': html})}\n\n".encode()


class JudgesLive:
    """The page and its stream over the bundles under ``runs``."""

    def __init__(self, runs: Path) -> None:
        self.runs = runs

    def routes(self) -> list[web.RouteDef]:
        """``GET /judge-live/<bundle>`` and ``GET /judge-events/<bundle>``."""
        return [
            web.get("/judge-live/{rel:.+}", self.page),
            web.get("/judge-events/{rel:.+}", self.events),
        ]

    def _root(self, request: web.Request) -> Path:
        root = confined_bundle(self.runs, request.match_info["rel"])
        if root is None:
            raise web.HTTPNotFound(text="no such bundle under --runs")
        return root

    async def page(self, request: web.Request) -> web.Response:
        """The judges' cards as they are now."""
        root = self._root(request)
        rel = root.relative_to(self.runs.resolve()).as_posix()
        try:
            judges = await asyncio.to_thread(judges_live, root)
            inner = judges_body(judges, time.time())
        except TouchstoneError as exc:
            inner = f'<p class="err">{e(exc)}</p>'
        body = (
            f"<h1>Judges live · {e(root.name)}</h1>"
            f'<p><a href="/run/{quote(rel)}">result page</a> · '
            f'<a href="/live/{quote(rel)}">answers live</a></p>'
            f'<div id="live" data-events="/judge-events/{quote(rel)}">{inner}</div>'
        )
        return page(f"Judges {root.name}", body, scripts=("live.js",))

    async def events(self, request: web.Request) -> web.StreamResponse:
        """``update`` events while a judge has answers left, then one ``end``."""
        root = self._root(request)
        response = web.StreamResponse(
            headers={**HEADERS, "Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}
        )
        await response.prepare(request)
        rates = Rates()
        seen = None
        while True:
            now = time.time()
            try:
                judges = await asyncio.to_thread(judges_live, root)
            except TouchstoneError as exc:
                await response.write(_sse("end", f'<p class="err">{e(exc)}</p>'))
                return response
            rates.eta(judges, now)
            done = bool(judges) and all(j.complete for j in judges)
            if judges != seen or done:
                seen = judges
                await response.write(_sse("end" if done else "update", judges_body(judges, now)))
                if done:
                    return response
            await asyncio.sleep(POLL_S)
