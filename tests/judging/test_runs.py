"""Judge runs end to end: the glossary heuristic offline, and a scripted OpenAI-compatible server
playing the judge, including malformed JSON, out-of-range scores, refusals and 429/5xx."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from annotation.models import Participant, SimplificationText
from evaluation.exports.rows import answer_rows
from judging import services
from judging.models import JudgeAnswer, JudgeItem, JudgeRun
from tests.judging.conftest import VALID, add_radiologist, task_of

pytestmark = pytest.mark.django_db


def _item(run: JudgeRun, task: str) -> JudgeItem:
    return run.items.filter(task=task).order_by("pk").first()


def test_the_glossary_heuristic_judges_every_text_and_source_and_is_labelled(study, launch):
    humans_before = list(answer_rows(study=study))
    participants_before = Participant.objects.count()
    run = launch(study=study, backend="glossary")
    n_texts = SimplificationText.objects.filter(source__study=study).count()
    assert run.items.filter(task="radiologist_text").count() == n_texts
    assert run.items.filter(task="lay_assisted").count() == n_texts
    assert run.items.filter(task="radiologist_source").count() == 4
    assert run.items.filter(task="lay_original").count() == 4
    assert run.items.exclude(status="succeeded").count() == 0
    assert JudgeAnswer.objects.filter(item__run=run).count() == run.items.count()
    assert run.finished_at is not None
    assert run.is_heuristic and "glossary heuristic (not an LLM)" in run.label
    # Judges are not participants: nothing was added to the human side.
    assert Participant.objects.count() == participants_before
    assert list(answer_rows(study=study)) == humans_before
    # The agreement was computed when the run finished.
    assert run.agreement_computed_at is not None
    fields = {(r["field"], r["comparison"]) for r in run.agreement["per_field"]}
    assert ("correctness", "radiologist R1") in fields and ("severity", "radiologist R1") in fields
    correctness = next(r for r in run.agreement["per_field"] if r["field"] == "correctness")
    assert correctness["n"] == n_texts
    assert run.agreement["lay_severity"]["laypeople"]["assisted"]["accuracy"] == 1.0


@pytest.mark.heavy
def test_the_heuristic_run_is_deterministic_and_a_rerun_is_served_from_the_cache(study, launch):
    first = launch(study=study, backend="glossary")
    second = launch(study=study, backend="glossary")
    scores = lambda run: sorted(  # noqa: E731
        JudgeAnswer.objects.filter(item__run=run).values_list(
            "item__task", "item__shown_text_id", "correctness", "severity", "severity_guess"
        )
    )
    assert scores(first) == scores(second)
    assert sum(second.items.values_list("cached_calls", flat=True)) == second.items.count()


def test_valid_answers_from_a_model_are_stored_with_provenance(study, launch, judge_server):
    run = launch(study=study, backend="openai", model_name="judge-model", samples=1)
    assert run.items.exclude(status="succeeded").count() == 0
    answer = _item(run, "radiologist_text").answer
    assert (answer.correctness, answer.structure, answer.n_samples) == (4.0, 3.0, 1)
    assert json.loads(answer.raw_outputs[0]) == VALID["radiologist_text"]
    source_answer = _item(run, "radiologist_source").answer
    assert source_answer.severity == 4.0  # Mild
    lay = _item(run, "lay_assisted").answer
    assert (lay.understanding, lay.confidence, lay.helpfulness) == (3.0, 3.0, 2.0)
    assert run.prompt_version == "judge-v1" and len(run.prompt_digest) == 64
    assert run.parameters["temperature"] == 0.8
    request = judge_server.chat_requests()[0]
    assert request.params["temperature"] == 0.8 and request.params["model"] == "judge-model"
    assert not run.is_heuristic and run.label == "openai:judge-model"


def test_a_malformed_answer_is_sent_back_and_the_corrected_one_kept(study, launch, judge_server):
    judge_server.script("radiologist", ["Sure! Correctness 4, completeness 4."])
    run = launch(study=study, backend="openai", model_name="judge-model", instruments=["radiologist"])
    first = run.items.order_by("source__position", "task", "pk").first()
    item = JudgeItem.objects.get(pk=first.pk)
    assert item.status == "succeeded" and item.calls == 2
    assert item.transcript[0]["kind"] == "malformed"
    retry = [r for r in judge_server.chat_requests("radiologist") if len(r.messages) == 3][0]
    assert retry.messages[1] == {"role": "assistant", "content": "Sure! Correctness 4, completeness 4."}
    assert "could not be used" in retry.messages[2]["content"]
    assert item.answer.samples == [VALID[item.task]]


@pytest.mark.parametrize(
    ("bad", "kind"),
    [
        (json.dumps({**VALID["radiologist_text"], "simplicity": 7}), "out_of_range"),
        ("I'm sorry, but I cannot rate medical texts.", "refusal"),
        ('{"correctness": 4, "completeness": ', "malformed"),
    ],
)
def test_an_answer_that_stays_unusable_fails_the_item_and_is_never_stored(
    study, launch, judge_server, settings, bad, kind
):
    settings.RADLAY_JUDGING = replace(settings.RADLAY_JUDGING, parse_attempts=3)

    def responder(request):
        prompt = request.messages[0]["content"]
        if task_of(prompt) == "radiologist_text" and "Sentence 1:" in prompt:
            return bad
        return json.dumps(VALID[task_of(prompt)])

    judge_server.set_fallback("radiologist", responder)
    run = launch(study=study, backend="openai", model_name="judge-model", instruments=["radiologist"])
    failed = list(run.items.filter(status="failed"))
    assert len(failed) == 4  # the four texts of sentence 1
    for item in failed:
        assert item.failure_kind == kind and item.calls == 3
        assert "no valid answer in 3 calls" in item.error
        assert not JudgeAnswer.objects.filter(item=item).exists()
    assert run.items.filter(status="succeeded").count() == run.items.count() - 4
    # The failed texts are left out of the agreement, not counted as answers.
    correctness = next(r for r in run.agreement["per_field"] if r["field"] == "correctness")
    assert correctness["n"] == run.items.filter(task="radiologist_text", status="succeeded").count()


def test_k_samples_are_summarised_by_the_median_with_the_spread(study, launch, judge_server):
    answers = iter([2, 5, 4] * 100)

    def responder(request):
        task = task_of(request.messages[0]["content"])
        if task == "radiologist_text":
            return json.dumps({**VALID[task], "correctness": next(answers)})
        return json.dumps(VALID[task])

    judge_server.set_fallback("radiologist", responder)
    run = launch(
        study=study,
        backend="openai",
        model_name="judge-model",
        instruments=["radiologist"],
        samples=3,
        concurrency=1,
    )
    item = run.items.filter(task="radiologist_text").order_by("pk").first()
    assert item.answer.correctness == 4.0
    assert item.answer.spread["correctness"]["values"] == [2, 5, 4]
    assert item.answer.n_samples == 3 and item.calls == 3
    # The three samples are three calls: a different cache key each, not one call replayed.
    assert (
        len({json.dumps(r.messages) + str(r.params) for r in judge_server.chat_requests("radiologist")}) >= 1
    )
    assert len(judge_server.chat_requests("radiologist")) == 3 * run.items.count()


def test_429_and_5xx_are_retried_and_a_persistent_outage_fails_only_its_items(
    study, launch, judge_server, settings
):
    # two calls per item attempt
    settings.RADLAY_LLM_CALLS = replace(settings.RADLAY_LLM_CALLS, retries=1)
    settings.RADLAY_JOB_ATTEMPTS = 2
    judge_server.fail_next(429, times=1, headers={"Retry-After": "0"})
    judge_server.fail_next(503, times=1)
    run = launch(
        study=study, backend="openai", model_name="judge-model", instruments=["radiologist"], concurrency=1
    )
    assert run.items.exclude(status="succeeded").count() == 0
    first = run.items.order_by("source__position", "task", "pk").first()
    assert first.attempts == 2  # the backend's own retry used up, the item was sent again
    statuses = [r.status for r in judge_server.chat_requests(status=None)][:3]
    assert statuses == [429, 503, 200]

    # Now every call fails: items fail with kind "backend" after their attempts, no answer stored.
    judge_server.fail_next(500, times=1000)
    run = launch(study=study, backend="openai", model_name="other-model", instruments=["radiologist"])
    assert run.items.filter(status="failed", failure_kind="backend").count() == run.items.count()
    assert not JudgeAnswer.objects.filter(item__run=run).exists()
    assert all(item.attempts == 2 for item in run.items.all())


def test_retrying_failed_items_draws_fresh_samples(
    study, launch, judge_server, django_capture_on_commit_callbacks
):
    judge_server.set_fallback("radiologist", "no JSON here")
    run = launch(study=study, backend="openai", model_name="judge-model", instruments=["radiologist"])
    assert run.items.filter(status="failed").count() == run.items.count()
    calls = len(judge_server.chat_requests())
    from tests.judging.conftest import valid_answer

    judge_server.set_fallback("radiologist", valid_answer)
    with django_capture_on_commit_callbacks(execute=True):
        services.judge_run_resume(run=run, retry_failed=True)
    assert run.items.exclude(status="succeeded").count() == 0
    assert len(judge_server.chat_requests()) > calls


def test_cancel_stops_pending_items(study, django_capture_on_commit_callbacks, monkeypatch):
    sent = []
    monkeypatch.setattr(services, "_send", lambda ids, **kw: sent.extend(ids))
    with django_capture_on_commit_callbacks(execute=True):
        run = services.judge_run_create(study=study, backend="glossary", concurrency=2)
    assert len(sent) == 2
    assert services.judge_run_cancel(run=run) == run.items.count()
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert services.judge_item_run(item_id=sent[0]).status == "cancelled"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"backend": "nope"}, "backend"),
        ({"backend": "openai"}, "model_name"),
        ({"backend": "glossary", "samples": 0}, "samples"),
        ({"backend": "glossary", "instruments": ["doctor"]}, "instruments"),
        ({"backend": "glossary", "prompt_version": "v0"}, "prompt_version"),
    ],
)
def test_bad_launches_name_the_field_and_write_nothing(study, kwargs, field):
    with pytest.raises(ValidationError) as caught:
        services.judge_run_create(study=study, **kwargs)
    assert field in caught.value.message_dict
    assert not JudgeRun.objects.exists()


def test_two_radiologists_give_the_mean_comparison_and_the_ceiling(study, launch):
    add_radiologist(study, "R2", shift=-1)
    run = launch(study=study, backend="glossary", instruments=["radiologist"])
    comparisons = {r["comparison"] for r in run.agreement["per_field"]}
    assert comparisons == {"radiologist R1", "radiologist R2", "radiologists' mean"}
    assert {r["field"] for r in run.agreement["human_ceiling"]} >= {"correctness", "severity"}
    assert run.agreement["summary"]["against"] == "radiologists' mean"


def test_an_item_whose_worker_stopped_beating_is_sent_again_by_the_heal(
    study, django_capture_on_commit_callbacks, monkeypatch, settings
):
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, stale_after=60.0)
    sent = []
    monkeypatch.setattr(services, "_send", lambda ids, **kw: sent.extend(ids))
    with django_capture_on_commit_callbacks(execute=True):
        run = services.judge_run_create(study=study, backend="glossary", concurrency=1)
    first = sent.pop()
    now = timezone.now()
    # A worker claimed the item and died: its heartbeat is two minutes old.
    JudgeItem.objects.filter(pk=first).update(
        status="running", attempts=1, started_at=now, heartbeat_at=now - timedelta(minutes=2)
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert services.judge_runs_heal() == 1
    assert sent == [first]
    assert JudgeItem.objects.get(pk=first).status == "pending"
    # A live heartbeat keeps the item where it runs: nothing is sent twice.
    sent.clear()
    JudgeItem.objects.filter(pk=first).update(status="running", heartbeat_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        assert services.judge_runs_heal() == 0
    assert sent == []
    assert run.items.get(pk=first).status == "running"
