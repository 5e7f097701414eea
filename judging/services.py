"""Writes of the judging app: launch a judge run, run one item, cancel/resume a run, store its
agreement with the humans.

A run is a batch of work's scheduler (work.scheduler, through `QUEUE`): its
items are that scheduler's jobs, one item per task (no GPU chunks), with the same concurrency
window, atomic claim, heartbeats, retries with backoff and re-queueing of lost items. When a run
that was not cancelled finishes, its agreement with the humans is computed.

One item = one judge task on one source or simplification text, K samples. Each sample is one call
(plus retries): the answer must parse and validate (judging.instrument.parse_answer); an unusable
answer (malformed JSON, out-of-range score, an option not worded as in the survey, a refusal) is
sent back to the model with the reason, up to RADLAY_JUDGING.parse_attempts calls per sample. An item
whose every sample validated gets its JudgeAnswer (medians + spread); otherwise it fails with the
kind and message of the failure and no answer. A transient backend error (429/5xx after the
backend's own retries) or a lost database connection sends the item again after a backoff,
RADLAY_JOB_ATTEMPTS times; when even that cannot be recorded (the database is down), the task
itself is retried (work.runner's policy) and takes its item over once the database is back. Calls go
through generation's database call cache: a resumed or rerun item pays for nothing twice.

The agreement of a finished run is computed by a task that holds a lease on the run
(`agreement_sent_at` when sent, `agreement_heartbeat_at` while it runs); the healing check sends it
again when its worker died (heartbeat silent for the scheduler's stale_after) or its message was lost
(never started within the re-send deadline), as it does for items.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from annotation.activity_services import activity_record
from annotation.models import Simplification, SimplificationText, Source, Study, StudyInstrument
from generation.backends.base import BackendError, ChatBackend, GenerationParams
from generation.backends.cache import CachedBackend
from generation.backends.configured import cached_backend, openai_server_problem
from generation.backends.registry import GPU_BACKENDS, backend_missing, get_backend
from instruments.schema import AppliesTo, Instrument
from instruments.validation import instrument_from_data
from judging.heuristic import HEURISTIC_MODEL, GlossaryHeuristicJudge
from judging.instrument import (
    INSTRUMENT_TASKS,
    SOURCE_TASKS,
    AnswerError,
    aggregate_samples,
    parse_answer,
    retry_message,
)
from judging.instrument_items import (
    ITEM_TASK,
    aggregate_item_samples,
    item_prompt,
    judge_items,
    parse_item_answer,
)
from judging.models import JudgeAnswer, JudgeItem, JudgeRun, answer_bounds_errors
from judging.pair_orders import asks_both_orders, is_reversed_order, reference_texts, reversed_order_items
from judging.prompts.registry import available_versions, load_judge_prompts
from measures.metrics.sentences import split_sentences
from privacy.gate import external_call_problem
from privacy.selectors import source_text
from work import lease, limits, scheduler
from work.runner import DATABASE_ERRORS

logger = logging.getLogger(__name__)
MAX_SAMPLES = 20


def timing() -> scheduler.Timing:
    """The job layer's timing (read at call time: tests override it)."""
    return scheduler.timing_from_settings()


def _send(item_ids: list[int], *, backend: str, countdown: float | None = None) -> None:
    from judging import tasks  # tasks import this module

    tasks.judge_items_send(item_ids, gpu=backend in GPU_BACKENDS, countdown=countdown)


def _on_finish(run: JudgeRun) -> None:
    if run.cancelled_at is None:
        judge_run_agreement_request(run=run)


QUEUE = scheduler.JobQueue(
    job_model=JudgeItem,
    batch_model=JudgeRun,
    # Looked up at call time, so that a test may replace `_send`.
    send=lambda run, ids, countdown: _send(ids, backend=run.backend, countdown=countdown),
    timing=timing,
    order=lambda run: ("source__position", "task", "pk"),
    batch_field="run",
    related=("run", "source", "shown_text"),
    on_finish=_on_finish,
    noun="judge run",
)


# --- launching -------------------------------------------------------------------------------------


def judge_run_create(
    *,
    study: Study,
    backend: str,
    model_name: str = "",
    samples: int = 1,
    instruments: Sequence[str] = ("radiologist", "lay"),
    temperature: float | None = None,
    max_tokens: int | None = 256,
    seed: int | None = None,
    prompt_version: str = "judge-v1",
    concurrency: int | None = None,
    created_by: Any = None,
    check_server: bool = False,
) -> JudgeRun:
    """Create a run with one item per (task, source or distinct simplification text) and send its
    first items once committed. `temperature` defaults to the prompt set's. `check_server`: with
    the openai backend, refuse the launch (naming `backend`) when the configured server is
    unreachable or refuses the key (generation.backends.configured.openai_server_problem).
    ValidationError names the field of a bad request."""
    errors: dict[str, str] = {}
    instruments = list(dict.fromkeys(instruments))
    # Besides the protocol's two judges, any instrument the study asks, by key (its current
    # version): its items are the judge's questions (judging/instrument_items.py).
    asked = {
        row.key: row
        for row in StudyInstrument.objects.filter(
            study=study, is_current=True, key__in=[n for n in instruments if n not in INSTRUMENT_TASKS]
        )
    }
    if not instruments or any(name not in INSTRUMENT_TASKS and name not in asked for name in instruments):
        errors["instruments"] = _instruments_offered(study)
    if backend not in JudgeRun.Backend.values:
        errors["backend"] = f"Unknown backend {backend!r}; use one of {', '.join(JudgeRun.Backend.values)}."
    elif missing := backend_missing(backend):
        errors["backend"] = missing
    model_name = (model_name or "").strip()
    if backend == JudgeRun.Backend.GLOSSARY:
        model_name = model_name or HEURISTIC_MODEL
    elif not model_name:
        errors["model_name"] = f"The {backend} backend needs a model name (API model or local directory)."
    if not 1 <= int(samples) <= MAX_SAMPLES:
        errors["samples"] = f"samples must be between 1 and {MAX_SAMPLES}."
    if prompt_version not in available_versions():
        errors["prompt_version"] = (
            f"Unknown judge prompt version {prompt_version!r} ({', '.join(available_versions())})."
        )
    if temperature is not None and temperature < 0:
        errors["temperature"] = "The temperature cannot be negative."
    if max_tokens is not None and max_tokens < 1:
        errors["max_tokens"] = "max tokens must be at least 1."
    concurrency = int(settings.RADLAY_JOB_CONCURRENCY if concurrency is None else concurrency)
    errors.update(limits.concurrency_errors(concurrency))
    sources = list(Source.objects.filter(study=study).order_by("position"))
    if not sources:
        errors["study"] = f"Study {study.slug!r} has no sources to judge."
    if not errors and (problem := external_call_problem(study=study, backend=backend)):
        errors["backend"] = problem
    if (
        not errors
        and check_server
        and backend == JudgeRun.Backend.OPENAI
        and (problem := openai_server_problem())
    ):
        errors["backend"] = problem
    if errors:
        raise ValidationError(errors)

    prompts = load_judge_prompts(prompt_version)
    parameters = {
        "temperature": float(prompts.temperature if temperature is None else temperature),
        "max_tokens": max_tokens,
        "seed": seed,
        "samples": int(samples),
    }
    texts = list(SimplificationText.objects.filter(source__study=study).order_by("source__position", "pk"))
    tasks = [task for name in instruments if name in INSTRUMENT_TASKS for task in INSTRUMENT_TASKS[name]]
    targets = [target for row in asked.values() for target in _instrument_targets(study, row, sources, texts)]
    n_items = sum(len(sources) if task in SOURCE_TASKS else len(texts) for task in tasks) + len(targets)
    with transaction.atomic():
        limits.check_launch(QUEUE, study=study, user=created_by, size=n_items * int(samples), unit="calls")
        run = JudgeRun.objects.create(
            study=study,
            backend=backend,
            model_name=model_name,
            prompt_version=prompt_version,
            prompt_digest=prompts.digest,
            instruments=instruments,
            parameters=parameters,
            concurrency=concurrency,
            created_by=created_by,
        )
        activity_record(
            study=study,
            actor=created_by,
            verb="judges.launched",
            obj=run,
            details={"backend": backend, "model": model_name, "instruments": list(instruments)},
        )
        JudgeItem.objects.bulk_create(_run_items(run, tasks, sources, texts, targets))
        dispatch = scheduler.dispatch_locked(QUEUE, run)
    scheduler.raise_if_unsent(QUEUE, dispatch, batch=run, action="created")
    return run


def _instruments_offered(study: Study) -> str:
    """The refusal of unknown instruments, naming those a run can ask."""
    offered = [
        *INSTRUMENT_TASKS,
        *StudyInstrument.objects.filter(study=study, is_current=True).values_list("key", flat=True),
    ]
    return f"Choose instruments among {', '.join(offered)}."


def _run_items(
    run: JudgeRun,
    tasks: Sequence[str],
    sources: Sequence[Source],
    texts: Sequence[SimplificationText],
    targets: Sequence[dict[str, Any]],
) -> list[JudgeItem]:
    """A run's items: one per task and source (or per distinct simplification text), then one per
    instrument target."""
    items: list[JudgeItem] = []
    for task in tasks:
        if task in SOURCE_TASKS:
            items.extend(JudgeItem(run=run, task=task, source=source) for source in sources)
        else:
            items.extend(JudgeItem(run=run, task=task, source_id=t.source_id, shown_text=t) for t in texts)
    items.extend(JudgeItem(run=run, task=ITEM_TASK, **target) for target in targets)
    return items


def _instrument_targets(
    study: Study, row: StudyInstrument, sources: Sequence[Source], texts: Sequence[SimplificationText]
) -> list[dict[str, Any]]:
    """The targets a judge asks `row`'s items about, one per kind of target its items apply to:
    each source, each simplification text, and each (text, its source's reference text) pair.
    Reference texts are those of the study's reference systems; they are not judged against
    themselves."""
    instrument = instrument_from_data(row.definition)
    kinds = {kind for kind in AppliesTo if judge_items(instrument, kind)}
    references: dict[int, int] = {}
    reference_only: set[int] = set()
    produced: dict[int, set[bool]] = {}
    for source_id, text_id, is_reference in Simplification.objects.filter(source__study=study).values_list(
        "source_id", "shown_text_id", "system__is_reference"
    ):
        produced.setdefault(text_id, set()).add(is_reference)
        if is_reference:
            references.setdefault(source_id, text_id)
    reference_only = {text_id for text_id, flags in produced.items() if flags == {True}}
    targets: list[dict[str, Any]] = []
    if AppliesTo.SOURCE in kinds:
        targets += [{"instrument": row, "source": source} for source in sources]
    if AppliesTo.SIMPLIFICATION in kinds:
        targets += [
            {"instrument": row, "source_id": t.source_id, "shown_text": t}
            for t in texts
            if t.pk not in reference_only
        ]
    if AppliesTo.PAIR in kinds and row.flow == StudyInstrument.Flow.PAIRWISE:
        # The compare-two flow compares two systems' texts of a source: the judge is asked every pair
        # in both orders (A, B) and (B, A), so that its position bias can be measured and cancels
        # out of the ranking (judging.position_bias).
        targets += [
            {"instrument": row, "source_id": a.source_id, "shown_text": a, "reference_text_id": b.pk}
            for a, b in pairwise_orders(texts, reference_only)
        ]
    elif AppliesTo.PAIR in kinds:
        paired = [t for t in texts if t.pk not in reference_only and t.source_id in references]
        targets += [
            {
                "instrument": row,
                "source_id": t.source_id,
                "shown_text": t,
                "reference_text_id": references[t.source_id],
            }
            for t in paired
        ]
        if asks_both_orders(instrument):
            # A preference between the text and its reference is asked once more reversed, the
            # reference as A (judging.pair_orders): position bias is measured for every comparison.
            targets += [
                {
                    "instrument": row,
                    "source_id": t.source_id,
                    "shown_text_id": references[t.source_id],
                    "reference_text_id": t.pk,
                }
                for t in paired
                if True not in produced.get(t.pk, set())
            ]
    return targets


def pairwise_orders(
    texts: Sequence[SimplificationText], reference_only: set[int]
) -> list[tuple[SimplificationText, SimplificationText]]:
    """Every ordered pair of two different texts of the same source (a text only a reference
    system produced is left out): each unordered pair once as (A, B) and once as (B, A)."""
    by_source: dict[int, list[SimplificationText]] = {}
    for text in texts:
        if text.pk not in reference_only:
            by_source.setdefault(text.source_id, []).append(text)
    return [
        order
        for group in by_source.values()
        for i, a in enumerate(group)
        for b in group[i + 1 :]
        for order in ((a, b), (b, a))
    ]


def judge_run_cancel(*, run: JudgeRun) -> int:
    """Cancel the run's pending items (running ones finish and are recorded). Returns how many."""
    return scheduler.cancel(QUEUE, batch=run)


def judge_run_resume(*, run: JudgeRun, retry_failed: bool = False, force: bool = False) -> list[int]:
    """Start a stopped run again (scheduler.resume): cancelled items become pending, failed ones
    too when `retry_failed` (their calls are then new samples: `retry_round` enters the cache key),
    and items not running live are sent again now; with `force` (workers were restarted) running
    items are sent again too. Succeeded items never run again. Raises TaskQueueUnreachable when
    the broker refused the items (the run is resumed all the same)."""
    with transaction.atomic():
        if force:
            JudgeRun.objects.select_for_update().get(pk=run.pk)
            JudgeItem.objects.filter(run=run, status=JudgeItem.Status.RUNNING).update(
                status=JudgeItem.Status.PENDING, dispatched_at=None, not_before=None
            )
        dispatch = scheduler.resume(
            QUEUE, batch=run, retry_failed=retry_failed, retry_updates={"retry_round": F("retry_round") + 1}
        )
    scheduler.raise_if_unsent(QUEUE, dispatch, batch=run, action="resumed")
    return dispatch.job_ids


def judge_runs_heal(*, run: JudgeRun | None = None) -> int:
    """The self-healing check: re-send the lost items of every unfinished run (or of `run`) and
    fill their free slots, and re-send the lost agreement computations of finished runs. Returns
    how many items and agreements were sent."""
    sent = sum(len(result.job_ids) for result in scheduler.requeue_lost(QUEUE, batch=run))
    return sent + judge_run_agreements_heal(run=run)


# --- running one item --------------------------------------------------------------------------------


def judge_item_run(*, item_id: int, task_id: str = "") -> JudgeItem:
    """Run one item if it may run, record its answer or its failure, send the run's next items.
    Safe to call any number of times for the same item."""
    item = scheduler.claim(QUEUE, job_id=item_id, task_id=task_id)
    if item is None:
        logger.info("judge item %s: not claimable (done, cancelled or running elsewhere); skipped", item_id)
        return JudgeItem.objects.get(pk=item_id)
    with scheduler.heartbeat(QUEUE, job_ids=[item_id], task_id=task_id):
        try:
            outcome = _item_judge(item)
        except BackendError as exc:
            return _item_fail(
                item, error=str(exc), kind="backend", transient=exc.transient, retry_after=exc.retry_after
            )
        except DATABASE_ERRORS as exc:
            # The call cache and the prompts' inputs live in the database: a lost connection (a
            # PostgreSQL restart) is worth another attempt, never a permanent failure.
            return _item_fail(
                item, error=f"the database failed during the item: {exc}", kind="database", transient=True
            )
        except Exception as exc:  # noqa: BLE001 - one bad item must not stall the run; the error is recorded
            logger.exception("judge item %s failed", item.pk)
            return _item_fail(item, error=f"{type(exc).__name__}: {exc}", kind="backend", transient=False)
        return _item_record(item, outcome)


def _build(name: str, *, model: str, **options: Any) -> ChatBackend:
    if name == JudgeRun.Backend.GLOSSARY:
        return GlossaryHeuristicJudge(model=model)
    return get_backend(name, model=model, **options)


def run_backend(run: JudgeRun) -> CachedBackend:
    """The run's backend (the glossary heuristic for "glossary"), its calls cached in the database."""
    return cached_backend(run.backend, run.model_name, study=run.study, purpose="judging", build=_build)


class _Outcome:
    def __init__(self) -> None:
        self.samples: list[dict[str, Any]] = []
        self.raw_outputs: list[str] = []
        self.transcript: list[dict[str, Any]] = []
        self.failure: AnswerError | None = None
        self.calls = self.cached_calls = self.prompt_tokens = self.completion_tokens = 0
        self.cost_usd = 0.0


class _Question:
    """What one item asks: the prompt, the backend's agent and context, and the answer's parser."""

    def __init__(self, item: JudgeItem) -> None:
        self.sentence = source_text(source=item.source, audience="model")
        self.simplification = item.shown_text.text if item.shown_text_id else None
        if item.task == ITEM_TASK:
            self._items(item)
            return
        prompts = load_judge_prompts(item.run.prompt_version)
        values = (
            {"sentence": self.sentence}
            if self.simplification is None
            else {"sentence": self.sentence, "simplification": self.simplification}
        )
        self.prompt = prompts.render(item.task, **values)
        self.agent = prompts.templates[item.task].agent
        self.context: dict[str, Any] = {
            "task": item.task,
            "sentence": self.sentence,
            "simplification": self.simplification,
        }
        self.parse = lambda text: parse_answer(item.task, text)

    def _items(self, item: JudgeItem) -> None:
        assert item.instrument is not None
        instrument: Instrument = instrument_from_data(item.instrument.definition)
        kind = (
            AppliesTo.SOURCE
            if not item.shown_text_id
            else AppliesTo.PAIR
            if item.reference_text_id
            else AppliesTo.SIMPLIFICATION
        )
        self.items = judge_items(instrument, kind)
        if (
            kind is AppliesTo.PAIR
            and item.instrument.flow != StudyInstrument.Flow.PAIRWISE
            and is_reversed_order(
                flow=item.instrument.flow,
                source_id=item.source_id,
                text_id=item.shown_text_id,
                reference_id=item.reference_text_id,
                references=reference_texts(study_id=item.instrument.study_id, source_id=item.source_id),
            )
        ):
            self.items = reversed_order_items(self.items)
        reference = item.reference_text.text if item.reference_text is not None else None
        generated = split_sentences(self.simplification or "")
        referenced = split_sentences(reference or "")
        role = next((r for i in self.items for r in i.roles), "rater")
        self.prompt = item_prompt(
            instrument,
            self.items,
            role=role,
            sentence=self.sentence,
            text=self.simplification,
            reference=reference,
            generated_sentences=generated,
            reference_sentences=referenced,
        )
        self.agent = "radiologist"  # LLM backends ignore it; the cache key keeps it stable
        self.context = {
            "task": ITEM_TASK,
            "sentence": self.sentence,
            "simplification": self.simplification,
            "reference": reference,
            "generated_sentences": generated,
            "reference_sentences": referenced,
            "items": [_item_context(i) for i in self.items],
        }
        self.parse = lambda text: parse_item_answer(
            self.items, text, generated=len(generated), references=len(referenced), shown=self.simplification
        )


def _item_context(item) -> dict[str, Any]:
    """What the offline heuristic judge reads of an item (judging/heuristic.py)."""
    return {
        "key": item.key,
        "kind": item.kind.value,
        "title": " ".join(item.title.values()),
        "codes": list(item.scale.codes) if item.scale is not None else [],
        "options": [option.key for option in item.options],
        "severities": [option.key for option in item.severities],
        "max_count": item.max_count,
        "required": item.required,
    }


def _item_judge(item: JudgeItem) -> _Outcome:
    run = item.run
    prompts = load_judge_prompts(run.prompt_version)
    question = _Question(item)
    prompt, agent, context = question.prompt, question.agent, question.context
    backend = run_backend(run)
    p = run.parameters
    max_calls = max(1, int(settings.RADLAY_JUDGING.parse_attempts))
    outcome = _Outcome()
    for sample in range(run.samples):
        params = GenerationParams(
            temperature=float(p.get("temperature", prompts.temperature)),
            max_tokens=p.get("max_tokens"),
            seed=None if p.get("seed") is None else int(p["seed"]) + sample,
            sample_index=sample + MAX_SAMPLES * item.retry_round,
        )
        messages = [{"role": "user", "content": prompt}]
        for call in range(1, max_calls + 1):
            completion = backend.complete(messages, agent=agent, params=params, context=context)
            outcome.calls += 1
            outcome.cached_calls += int(completion.cached)
            outcome.prompt_tokens += completion.prompt_tokens
            outcome.completion_tokens += completion.completion_tokens
            outcome.cost_usd += completion.cost_usd
            entry = {"sample": sample, "call": call, "output": completion.text, "cached": completion.cached}
            try:
                answer = question.parse(completion.text)
            except AnswerError as exc:
                entry.update(error=str(exc), kind=exc.kind)
                outcome.transcript.append(entry)
                outcome.failure = exc
                messages = [
                    *messages,
                    {"role": "assistant", "content": completion.text},
                    {"role": "user", "content": retry_message(exc)},
                ]
                continue
            outcome.transcript.append(entry)
            outcome.samples.append(answer)
            outcome.raw_outputs.append(completion.text)
            outcome.failure = None
            break
        if outcome.failure is not None:
            # A sample that never validated fails the item: a median over fewer than K samples
            # would not be the K-sample judgement the run promises.
            outcome.failure = AnswerError(
                outcome.failure.kind,
                f"sample {sample + 1}: no valid answer in {max_calls} calls ({outcome.failure})",
            )
            break
    return outcome


def _usage_fields(item: JudgeItem, outcome: _Outcome) -> list[str]:
    item.calls, item.cached_calls = outcome.calls, outcome.cached_calls
    item.prompt_tokens, item.completion_tokens = outcome.prompt_tokens, outcome.completion_tokens
    item.cost_usd = outcome.cost_usd
    item.transcript = outcome.transcript
    return ["calls", "cached_calls", "prompt_tokens", "completion_tokens", "cost_usd", "transcript"]


def _item_record(item: JudgeItem, outcome: _Outcome) -> JudgeItem:
    if outcome.failure is not None:
        return _item_fail(
            item, error=str(outcome.failure), kind=outcome.failure.kind, transient=False, outcome=outcome
        )
    extra: dict[str, Any]
    if item.task == ITEM_TASK:
        values, scores, spread = aggregate_item_samples(_Question(item).items, outcome.samples)
        extra = {"item_values": values, "item_scores": scores}
    else:
        extra, spread = aggregate_samples(item.task, outcome.samples)

    def record(run: JudgeRun) -> None:
        JudgeAnswer.objects.filter(item=item).delete()
        answer = JudgeAnswer(
            item=item,
            n_samples=len(outcome.samples),
            spread=spread,
            samples=outcome.samples,
            raw_outputs=outcome.raw_outputs,
            **extra,
        )
        # The bounds constraints are checked in Python (answer_bounds_errors), not by a query each;
        # the database enforces them on save as well.
        answer.full_clean(validate_constraints=False)
        if errors := answer_bounds_errors(answer):
            raise ValidationError({NON_FIELD_ERRORS: errors})
        answer.save()

    item.failure_kind = ""
    try:
        return scheduler.succeed(
            QUEUE, item, record=record, fields=["failure_kind", *_usage_fields(item, outcome)]
        )
    except DATABASE_ERRORS as exc:
        return _item_fail(
            item,
            error=f"the database failed while storing the answer: {exc}",
            kind="database",
            transient=True,
        )


def _item_fail(
    item: JudgeItem,
    *,
    error: str,
    kind: str,
    transient: bool,
    retry_after: float | None = None,
    outcome: _Outcome | None = None,
) -> JudgeItem:
    fields = ["failure_kind"]
    if outcome is not None:
        fields += _usage_fields(item, outcome)
    item.failure_kind = kind
    # When even the failure cannot be recorded (the database is down), the error propagates: the
    # task is retried (work.runner.DATABASE_RETRY) and takes its item over (same task id).
    return scheduler.fail(
        QUEUE, item, error=error, transient=transient, retry_after=retry_after, fields=fields
    )


# --- agreement -----------------------------------------------------------------------------------------


def judge_run_agreement_compute(*, run: JudgeRun, n_resamples: int | None = None) -> dict[str, Any]:
    """Compute and store the run's agreement with the study's humans (judging.agreement)."""
    result = judge_run_agreement_result(run=run, n_resamples=n_resamples)
    JudgeRun.objects.filter(pk=run.pk).update(**_agreement_fields(result))
    run.refresh_from_db(fields=["agreement", "agreement_computed_at", "agreement_error"])
    return result


def _agreement_fields(result: dict[str, Any]) -> dict[str, Any]:
    return {"agreement": result, "agreement_computed_at": timezone.now(), "agreement_error": ""}


def judge_run_agreement_result(*, run: JudgeRun, n_resamples: int | None = None) -> dict[str, Any]:
    """The run's agreement with the study's humans (judging.agreement), not stored."""
    # pandas, scipy and scikit-learn load here, in the task or command that computes, not in a web worker.
    from judging.agreement import judge_agreement
    from judging.agreement_inputs import agreement_inputs
    from judging.calibration import calibration_summary, run_calibration

    n_resamples = int(n_resamples or settings.RADLAY_JUDGING.bootstrap_resamples)
    data = agreement_inputs(run=run)
    result = judge_agreement(data, n_resamples=n_resamples)
    result["n_resamples"] = n_resamples
    result["calibration"] = run_calibration(run=run, n_resamples=n_resamples)
    result["summary"] = {**result.get("summary", {}), **calibration_summary(result["calibration"])}
    if run.items.filter(task=ITEM_TASK).exists():
        from judging.position_bias import run_position_bias

        result["position_bias"] = run_position_bias(run=run)
        result["instrument_items"] = _instrument_items_agreement(run)
        result["error_spans"] = _error_spans_agreement(run)
    return result


def _instrument_items_agreement(run: JudgeRun) -> list[dict[str, Any]]:
    """The run's instrument-items answers against the humans', per item (evaluation/instrument_items)."""
    import pandas as pd

    from evaluation.analysis.instrument_frames import instrument_answers_frame
    from evaluation.analysis.instrument_items import judge_items_agreement
    from evaluation.analysis.instrument_selectors import study_instruments
    from judging.instrument_answers import judge_answers_frame

    humans = instrument_answers_frame(study=run.study)
    judged = judge_answers_frame(study=run.study, run_id=run.pk)
    frame = pd.concat([humans, judged], ignore_index=True) if len(humans) else judged
    return judge_items_agreement(frame, study_instruments(study=run.study))


def _error_spans_agreement(run: JudgeRun) -> list[dict[str, Any]]:
    """Per error-span item the run answered: the judge against each human rater and against the
    raters pooled (evaluation/analysis/error_spans.judge_span_agreement), with a table the run page shows:
    overlap F1 by category and α on per-text counts, one row per rater and one for the pool."""
    from evaluation.analysis.error_span_selectors import shown_texts, span_items
    from evaluation.analysis.error_spans import ALL, judge_span_agreement, span_annotations, span_frame
    from evaluation.analysis.instrument_frames import instrument_answers_frame
    from judging.instrument_answers import judge_answers_frame

    items = span_items(study=run.study)
    judged = judge_answers_frame(study=run.study, run_id=run.pk)
    if not items or not len(judged):
        return []
    humans = instrument_answers_frame(study=run.study)
    ids = {*judged["text_id"].dropna(), *(humans["text_id"].dropna() if len(humans) else [])}
    texts = shown_texts(ids=ids)
    records = []
    for key, item in items:
        mine = span_frame(judged, texts, instrument=key, item=item.key)
        if not len(mine):
            continue
        theirs = span_frame(humans, texts, instrument=key, item=item.key)
        categories = [option.key for option in item.options]
        judge = next(iter(span_annotations(mine).values()))
        raters = {str(name): spans for name, spans in span_annotations(theirs).items()}
        result = judge_span_agreement(judge, raters, categories=categories)
        columns = [*categories, ALL]

        def row(name: str, record: dict[str, Any], columns: list[str] = columns) -> dict[str, Any]:
            return {
                "rater": name,
                "texts": record["texts"],
                "f1": [record["f1"][c] for c in columns],
                "alpha": [record["count_alpha"][c] for c in columns],
            }

        records.append(
            {
                "instrument": key,
                "item": item.key,
                "columns": columns,
                "judge_texts": len(judge),
                "judge_spans": sum(len(spans) for spans in judge.values()),
                "rows": [row(r["rater"], r) for r in result["raters"]]
                + ([row("pooled raters", result["pooled"])] if result["pooled"]["texts"] else []),
                "detail": result,
            }
        )
    return records


def judge_run_agreement_request(*, run: JudgeRun) -> None:
    """Ask for the run's agreement: take the lease and send the task once the transaction commits.
    Sending it twice is harmless (the computation is a pure function of the stored answers)."""
    from judging import tasks  # tasks import this module

    JudgeRun.objects.filter(pk=run.pk).update(agreement_sent_at=timezone.now(), agreement_heartbeat_at=None)
    run_id = run.pk
    transaction.on_commit(lambda: _agreement_send(run_id, tasks.judge_run_agreement_send))


def judge_run_agreement_recompute(*, run: JudgeRun) -> None:
    """Compute the run's agreement again (the page's and the admin's button), on a worker."""
    with transaction.atomic():
        judge_run_agreement_request(run=run)


def _agreement_send(run_id: int, send) -> None:
    try:
        send(run_id)
    except (BrokerError, OSError):
        # The lease stays: the healing check sends it again once the broker is back.
        logger.warning("judge run %s: the agreement task could not be sent", run_id, exc_info=True)


def judge_run_agreement_run(*, run_id: int) -> None:
    """The agreement task's body: compute under a lease (heartbeat), then release it. A database
    error propagates (the task is retried); any other error is recorded on the run and ends the
    lease, so that a computation that cannot succeed is not sent again and again."""
    run = JudgeRun.objects.filter(pk=run_id).select_related("study").first()
    if run is None:
        return
    started = timezone.now()
    with lease.heartbeat(JudgeRun, pk=run_id, field="agreement_heartbeat_at", interval=timing().heartbeat):
        try:
            outcome = _agreement_fields(judge_run_agreement_result(run=run))
        except DATABASE_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - recorded on the run, shown on its page
            logger.exception("judge run %s: the agreement failed", run_id)
            outcome = {"agreement_error": f"{type(exc).__name__}: {exc}"}
    # The heartbeat has stopped. The outcome and the end of the lease are written together: nobody
    # sees an agreement computed while its lease still looks held. A request made while this one
    # ran stays pending (its own message computes again), as not started yet.
    with transaction.atomic():
        JudgeRun.objects.filter(pk=run_id).update(**outcome, agreement_heartbeat_at=None)
        JudgeRun.objects.filter(pk=run_id, agreement_sent_at__lte=started).update(agreement_sent_at=None)


def judge_run_agreements_heal(*, run: JudgeRun | None = None) -> int:
    """Send again the agreement computations that were lost: running with a heartbeat older than
    stale_after (the worker died), sent longer than the re-send deadline ago and never started (the
    message is gone), and finished runs that never got one. Returns how many were sent."""
    t = timing()
    now = timezone.now()
    stale = now - timedelta(seconds=t.stale_after)
    overdue = now - timedelta(seconds=t.dispatch_deadline)
    runs = JudgeRun.objects.filter(finished_at__isnull=False, cancelled_at__isnull=True).filter(
        Q(agreement_heartbeat_at__lt=stale)
        | Q(agreement_sent_at__lt=overdue, agreement_heartbeat_at__isnull=True)
        | Q(agreement_sent_at__isnull=True, agreement_computed_at__isnull=True, agreement_error="")
    )
    if run is not None:
        runs = runs.filter(pk=run.pk)
    sent = 0
    for lost in runs.only("pk"):
        with transaction.atomic():
            judge_run_agreement_request(run=lost)
        logger.warning("judge run %s: its agreement computation was lost; sent again", lost.pk)
        sent += 1
    return sent
