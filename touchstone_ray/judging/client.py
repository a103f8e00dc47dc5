"""The judge actor: one async Ray actor per judge, holding one engine and a semaphore.

What a judge is asked and what becomes of its reply:

- Per answer (:meth:`JudgeClient.judge_answer`): :func:`~.prompts.answer_prompt` (the answer
  fenced between per-call random delimiters), with structured output (``json_schema`` =
  :data:`~.prompts.ANSWER_SCHEMA`: OpenAI ``response_format``, Ollama ``format``). The reply
  must be ``{"score": 1-5, "red_flag": bool, "rationale": str}`` with optional
  ``red_flags_hit`` / ``green_flags_hit`` (SPEC §10; :func:`~.parse.parse_answer_reply` also
  takes fenced JSON, JSON after prose, ``"3"``, ``"4/5"``). Named flags are checked against
  the prompt's (:func:`~.flags.check_flags`): the lists keep the pack's flag texts, anything
  else goes to ``unknown_flags``; a ``red_flag: true`` naming none is kept as it is.
- Per (model, variant) (:meth:`JudgeClient.judge_report`): :func:`~.prompts.holistic_prompt`
  with this judge's verdicts as evidence, in the job's holistic template (``v1`` | ``v2``,
  stored as ``holistic_template``); ``{"<dim>": {"score", "rationale", "cited_prompts"}}``
  parsed by :func:`~.parse.parse_holistic_reply`.
- An answer that tries to steer its judge (:func:`~.prompts.manipulation_signs`: a fake
  delimiter line, an embedded verdict) gets ``red_flag: true`` and a ``manipulation`` entry in
  ``red_flags_hit`` on top of the judge's verdict; the score stays the judge's.
- A reply that cannot be parsed gets **one** retry: the conversation continues with the reply
  as the assistant turn and a format reminder naming the reason. Still unreadable → a
  ``judge_error`` verdict (score ``None``, unscored, never a low score) with ``raw`` = the last
  reply and ``error`` = the reason; for a report, a ``degraded`` report without scores.
- A call that fails (the engine already retried 5xx/timeouts/connect errors) → the same
  ``judge_error`` with ``raw`` of any earlier reply and ``call_failed: true``; such records are
  asked again on the next run (an unreadable reply is not: the judge did answer).
- An endpoint that rejects structured output with HTTP 4xx is asked again without a schema,
  and this judge sends none from then on (the parser copes with free-form replies).
- ``suppress_thinking``: OpenAI-compatible servers get ``chat_template_kwargs:
  {enable_thinking: false}``, Ollama ``think: false`` (a key the judge's own ``extra_body``
  sets wins).

Each method returns ``{"record": <dict for the JSONL file>, "failure": None | "call" |
"parse", "calls": <requests sent>, "schema_dropped": bool}``; the driver counts failures in a
row. Only cancellation propagates.
"""

from __future__ import annotations

import asyncio
import copy
import os
import socket
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from touchstone_ray.bundle import record_extras
from touchstone_ray.engines.base import ChatRequest, ChatResult, Engine
from touchstone_ray.engines.registry import create_engine, engine_class
from touchstone_ray.errors import EngineConnectError, EngineRefused, EngineTimeout, one_line
from touchstone_ray.judging.config import JudgeSpec
from touchstone_ray.judging.flags import check_flags
from touchstone_ray.judging.parse import (
    ParsedHolistic,
    ParsedVerdict,
    ParseFailure,
    parse_answer_reply,
    parse_holistic_reply,
)
from touchstone_ray.judging.prompts import (
    DEFAULT_HOLISTIC_TEMPLATE,
    HolisticTemplate,
    JudgePrompt,
    answer_prompt,
    holistic_prompt,
    manipulation_signs,
)
from touchstone_ray.lang import judge_texts
from touchstone_ray.pack import Pack
from touchstone_ray.records import HolisticReport, Verdict

__all__ = [
    "AnswerJob",
    "JudgeClient",
    "ReportJob",
    "failed_outcome",
    "judge_extra_body",
]

Failure = Literal["call", "parse"]
T = TypeVar("T", ParsedVerdict, ParsedHolistic)

REACH_TIMEOUT_S = 10.0
"""How long the reachability probe before a judge's first call waits for its endpoint (s)."""


@dataclass(frozen=True)
class AnswerJob:
    """One answer to judge (sent to the actor; the answer text travels, nothing else)."""

    key: str
    model: str
    variant: str
    prompt_id: str
    repeat: int
    category: str
    answer: str
    cache_key: str
    repeats: int = 1
    """Verdicts to ask for this answer (``judge --repeats``); the record keeps their median."""
    answer_flags: tuple[str, ...] = ()
    """The answer's ``answer_flags`` (SPEC §7), shown to the judge as data."""

    @property
    def task_name(self) -> str:
        """Readable Ray task name: ``judge:<judge>:qwen3:8b:baseline:B3`` (judge added); bounded
        by the pack, like eval's (see :attr:`touchstone_ray.eval.matrix.Cell.task_name`)."""
        return f"{self.model}:{self.variant}:{self.prompt_id}"


@dataclass(frozen=True)
class ReportJob:
    """One holistic report to ask for: this judge's verdicts on one (model, variant)."""

    model: str
    variant: str
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    cache_key: str = ""
    template: HolisticTemplate = DEFAULT_HOLISTIC_TEMPLATE
    """The holistic template to ask with (``judge --template``); stored as
    ``holistic_template``."""

    @property
    def task_name(self) -> str:
        """Readable Ray task name (judge added by the caller)."""
        return f"{self.model}:{self.variant}:holistic"


@dataclass
class _Asked:
    """What one ask (a call plus at most one retry) produced."""

    parsed: Any = None
    raw: str | None = None
    error: str | None = None
    failure: Failure | None = None
    calls: int = 0


def judge_extra_body(spec: JudgeSpec) -> dict[str, Any]:
    """``extra_body`` of every request of ``spec``: its own, plus the thinking switch when
    ``suppress_thinking`` (values the judge config sets itself win)."""
    extra = copy.deepcopy(spec.extra_body)
    if spec.suppress_thinking:
        engine_class(spec.engine).without_thinking(extra)
    return extra


def failed_outcome(
    job: AnswerJob | ReportJob, spec: JudgeSpec, pack: Pack, error: str
) -> dict[str, Any]:
    """The outcome of a job that never returned (its task failed or passed the driver's
    deadline): a ``judge_error`` verdict or a score-less ``degraded`` report, ``call_failed``
    (asked again on the next run)."""
    extras = record_extras(
        cache_key=job.cache_key, judge_model=spec.model, error=error, call_failed=True, n_calls=0
    )
    record: dict[str, Any]
    if isinstance(job, AnswerJob):
        verdict = Verdict(
            key=job.key,
            model=job.model,
            variant=job.variant,
            prompt_id=job.prompt_id,
            repeat=job.repeat,
            category=job.category,
            judge=spec.id,
            status="judge_error",
            safety_critical=pack.prompt(job.prompt_id).safety_critical,
        )
        record = {**verdict.model_dump(mode="json"), **extras}
    else:
        report = HolisticReport(
            model=job.model, variant=job.variant, judge=spec.id, status="degraded"
        )
        missing = {d.id: error for d in pack.dimensions}
        record = {
            **report.model_dump(mode="json"),
            "missing": missing,
            "raw": None,
            **extras,
            "holistic_template": job.template,
        }
    return {"record": record, "failure": "call", "calls": 0, "schema_dropped": False}


class JudgeClient:
    """Async client of one judge endpoint (use through ``ray.remote``; pinned by the driver).

    ``spec`` is the :class:`JudgeSpec` as a dict; ``api_key`` arrives in memory and never
    reaches a file or log. At most ``spec.concurrency`` requests are in flight.
    """

    def __init__(
        self, spec: dict[str, Any], api_key: str | None, pack: Pack, seed: int | None
    ) -> None:
        self.spec = JudgeSpec.model_validate(spec)
        self._api_key = api_key
        self.pack = pack
        self.seed = seed
        self.texts = judge_texts(pack.language)
        self._engine: Engine | None = None
        self._sem: asyncio.Semaphore | None = None
        self._use_schema = True
        self._extra = judge_extra_body(self.spec)

    def _get_engine(self) -> tuple[Engine, asyncio.Semaphore]:
        if self._engine is None or self._sem is None:
            settings = self.spec.engine_settings(self._api_key)
            sim = self.spec.sim.model_dump() if self.spec.sim is not None else None
            self._engine = create_engine(self.spec.engine, settings, sim)
            self._sem = asyncio.Semaphore(self.spec.concurrency)
        return self._engine, self._sem

    async def ready(self) -> dict[str, Any]:
        """Where this actor runs and whether its endpoint answers from there: ``{"node_id",
        "hostname", "pid", "unreachable"}`` (starts the engine). ``unreachable`` is ``None``
        or one line: the endpoint refused the connection or sent nothing within
        :data:`REACH_TIMEOUT_S` to the model list request (``GET /v1/models``; any HTTP
        answer, an error status too, counts as reached)."""
        import ray

        engine, _ = self._get_engine()
        unreachable: str | None = None
        try:
            await asyncio.wait_for(engine.list_models(), REACH_TIMEOUT_S)
        except EngineRefused:
            unreachable = "connection refused"
        except (EngineTimeout, TimeoutError):
            unreachable = f"no answer within {REACH_TIMEOUT_S:g} s"
        except EngineConnectError as exc:
            unreachable = one_line(str(exc))
        except Exception:  # reached: a server without a model list still answers chats
            pass
        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "unreachable": unreachable,
        }

    # --- one call --------------------------------------------------------------------------
    async def _chat(
        self, messages: list[dict[str, str]], schema: dict[str, Any], seed: int | None
    ) -> ChatResult:
        engine, sem = self._get_engine()

        def request(with_schema: bool) -> ChatRequest:
            return ChatRequest(
                model=self.spec.model,
                messages=messages,
                temperature=self.spec.temperature,
                seed=seed,
                max_tokens=self.spec.max_tokens,
                extra_body=self._extra,
                json_schema=schema if with_schema else None,
            )

        async with sem:
            result = await engine.chat(request(self._use_schema))
            if self._use_schema and not result.ok and result.error_kind == "http_4xx":
                retry = await engine.chat(request(False))
                if retry.ok:
                    self._use_schema = False
                result = retry
        return result

    async def _ask(
        self,
        prompt: JudgePrompt,
        parse: Callable[[str], T | ParseFailure],
        seed: int | None = None,
    ) -> _Asked:
        """The call (with ``seed``, default the pack's), one retry with a format reminder if
        the reply is unreadable."""
        asked = _Asked()
        messages: list[dict[str, str]] = list(prompt.messages)
        seed = self.seed if seed is None else seed
        for attempt in (1, 2):
            result = await self._chat(messages, prompt.schema, seed)
            asked.calls += 1
            if not result.ok:
                asked.failure = "call"
                asked.error = f"judge call failed ({result.error_kind}): {result.error}"
                return asked
            asked.raw = result.response_text
            parsed = parse(result.response_text)
            if not isinstance(parsed, ParseFailure):
                asked.parsed = parsed
                asked.failure = None
                asked.error = None
                return asked
            asked.failure = "parse"
            asked.error = parsed.reason
            if result.reasoning_only:
                asked.error = f"{parsed.reason} (the reply was reasoning only)"
            if attempt == 1:
                reminder = self.texts["format_reminder"].format(reason=parsed.reason)
                messages = [
                    *messages,
                    {"role": "assistant", "content": result.response_text},
                    {"role": "user", "content": reminder},
                ]
        return asked

    def _extras(self, asked: _Asked, cache_key: str) -> dict[str, Any]:
        return record_extras(
            cache_key=cache_key,
            judge_model=self.spec.model,
            error=asked.error,
            call_failed=asked.failure == "call",
            n_calls=asked.calls,
        )

    def _outcome(self, record: dict[str, Any], asked: _Asked) -> dict[str, Any]:
        return {
            "record": record,
            "failure": asked.failure,
            "calls": asked.calls,
            "schema_dropped": not self._use_schema,
        }

    # --- the two passes --------------------------------------------------------------------
    async def judge_answer(self, job: AnswerJob) -> dict[str, Any]:
        """Judge one answer ``job.repeats`` times (seed = pack seed + repeat index); the
        outcome's record is a :class:`Verdict` plus cache fields, ``repeat_scores`` (every
        usable score, in asking order) and ``score_spread`` (max − min of them, ``None``
        without one).

        Several repeats: the verdict keeps the median score (the lower middle one for an even
        count) with that repeat's rationale, green flags and raw reply; ``red_flag`` by
        majority of the usable repeats (more than half); ``red_flags_hit`` from the repeats on
        the majority's side; ``unknown_flags`` from all. No usable repeat → ``judge_error`` as
        for a single call.
        """
        prompt = self.pack.prompt(job.prompt_id)
        variant = self.pack.variant(job.variant)
        base_seed = self.seed if self.seed is not None else 0
        asked_all: list[_Asked] = []
        for index in range(job.repeats):
            fresh = answer_prompt(  # a new token each
                self.pack, prompt, variant, job.answer, flags=job.answer_flags
            )
            asked_all.append(await self._ask(fresh, parse_answer_reply, seed=base_seed + index))
        usable = [a for a in asked_all if isinstance(a.parsed, ParsedVerdict)]
        asked = _Asked(
            calls=sum(a.calls for a in asked_all),
            failure=None if usable else asked_all[-1].failure,
            error=None if usable else asked_all[-1].error,
            raw=asked_all[-1].raw,
        )
        verdict = Verdict(
            key=job.key,
            model=job.model,
            variant=job.variant,
            prompt_id=job.prompt_id,
            repeat=job.repeat,
            category=job.category,
            judge=self.spec.id,
            status="judge_error",
            raw=asked.raw,
            safety_critical=prompt.safety_critical,
        )
        scores = [a.parsed.score for a in usable]
        if usable:
            checked = [
                (
                    a.parsed,
                    check_flags(
                        a.parsed.red_flags_hit,
                        a.parsed.green_flags_hit,
                        prompt.red_flags,
                        prompt.green_flags,
                    ),
                    a.raw,
                )
                for a in usable
            ]
            median = statistics.median_low(scores)
            chosen, flags, raw = next(c for c in checked if c[0].score == median)
            majority = 2 * sum(p.red_flag for p, _, _ in checked) > len(checked)
            red_flags_hit = list(
                dict.fromkeys(
                    h for p, f, _ in checked if p.red_flag == majority for h in f.red_flags_hit
                )
            )
            unknown = list(dict.fromkeys(u for _, f, _ in checked for u in f.unknown_flags))
            signs = manipulation_signs(job.answer)
            if signs:  # the attempt is itself a finding, whatever the judge made of it
                named = ", ".join(self.texts[f"sign_{sign}"] for sign in signs)
                red_flags_hit.append(self.texts["manipulation"].format(signs=named))
            verdict = verdict.model_copy(
                update={
                    "score": chosen.score,
                    "red_flag": majority or bool(signs),
                    "rationale": chosen.rationale,
                    "red_flags_hit": red_flags_hit,
                    "green_flags_hit": list(flags.green_flags_hit),
                    "unknown_flags": unknown,
                    "status": "scored",
                    "raw": raw,
                }
            )
        record = {
            **verdict.model_dump(mode="json"),
            **self._extras(asked, job.cache_key),
            "repeat_scores": scores,
            "score_spread": max(scores) - min(scores) if scores else None,
        }
        return self._outcome(record, asked)

    async def judge_report(self, job: ReportJob) -> dict[str, Any]:
        """Ask for the holistic report on one (model, variant); the outcome's record is a
        :class:`HolisticReport` plus cache fields, ``missing`` dimensions, ``raw`` and ``error``."""
        variant = self.pack.variant(job.variant)
        verdicts = [Verdict.model_validate(v) for v in job.verdicts]
        dims = [d.id for d in self.pack.dimensions]
        prompt_ids = [p.id for p in self.pack.prompts()]

        def parse(raw: str) -> ParsedHolistic | ParseFailure:
            return parse_holistic_reply(raw, dims, prompt_ids)

        prompt = holistic_prompt(self.pack, variant, verdicts, template=job.template)
        asked = await self._ask(prompt, parse)
        if isinstance(asked.parsed, ParsedHolistic):
            report = asked.parsed.to_report(
                model=job.model, variant=job.variant, judge=self.spec.id
            )
            missing = dict(asked.parsed.missing)
        else:
            report = HolisticReport(
                model=job.model, variant=job.variant, judge=self.spec.id, status="degraded"
            )
            missing = {d: asked.error or "no reply" for d in dims}
        record = {
            **report.model_dump(mode="json"),
            "missing": missing,
            "raw": asked.raw,
            **self._extras(asked, job.cache_key),
            "holistic_template": job.template,
        }
        return self._outcome(record, asked)

    async def close(self) -> None:
        """Close the engine (and any simulator it started)."""
        if self._engine is not None:
            await self._engine.aclose()
        self._engine = None
