"""Generation batches end to end through the services: jobs per (source, family), the concurrency
window, provenance, retries and failures, the call cache, idempotency, crash recovery, cancel and
resume. LLM calls go over HTTP to the scripted OpenAI-compatible server (tests/generation/
scripted_llm_server.py); the glossary and a tiny transformers model run offline."""

from __future__ import annotations

import io
import time
import zlib
from dataclasses import replace
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.utils import timezone

from annotation.models import Simplification, Study, System
from generation.backends.base import BackendError
from generation.models import GenerationBatch, GenerationJob, LLMCallCache
from generation.pipeline.scgr import SCGR_PROMPT_VERSION
from generation.prompts.registry import DEFAULT_VERSION
from generation.services import batches, jobs, outcomes
from tests.generation.factories import study_with_sources
from tests.generation.scripted_llm_server import count_tokens

pytestmark = pytest.mark.django_db

SENTENCES = [
    "There are 2 hyperenhancing liver lesions.",
    "Small right pleural effusion.",
    "No acute intracranial hemorrhage.",
]
FOUR = ["plain_bs", "plain_sc", "cot_bs", "cot_sc"]
COT_ANSWER = "1. effusion: fluid.\n\nSimplification: There is a little fluid around the right lung."


def make_study(slug: str = "gen", sentences=SENTENCES) -> Study:
    return study_with_sources(slug, sentences)


@pytest.fixture
def llm(settings, scripted_llm, external_calls_approved):
    """Point the openai backend at the scripted server; backoff of a few ms."""
    settings.OPENAI_BASE_URL = scripted_llm.base_url
    settings.OPENAI_API_KEY = "test-key"
    settings.RADLAY_LLM_CALLS = replace(settings.RADLAY_LLM_CALLS, timeout=5.0, retries=2, retry_delay=0.01)
    return scripted_llm


@pytest.fixture
def launch(django_capture_on_commit_callbacks):
    """Create a batch and run what its commit sends (tasks run eagerly under the test settings)."""

    def run(**kwargs):
        kwargs.setdefault("backend", "openai")
        if kwargs["backend"] == "openai":
            kwargs.setdefault("model_name", "gpt-3.5-turbo")
        with django_capture_on_commit_callbacks(execute=True):
            batch = batches.generation_batch_create(**kwargs)
        batch.refresh_from_db()
        return batch

    return run


def simplification(study, key, system):
    return Simplification.objects.get(source__study=study, source__key=key, system__key=system)


# --- launching ------------------------------------------------------------------------------------


def test_one_job_per_source_and_family_and_missing_systems_are_created(
    sent, django_capture_on_commit_callbacks
):
    study = make_study()
    System.objects.create(study=study, key="plain_bs", label="Existing label", position=0)
    with django_capture_on_commit_callbacks(execute=True):
        batch = batches.generation_batch_create(
            study=study,
            systems=["plain_bs", "plain_sc", "cot_bs", "scgr"],
            backend="glossary",
            concurrency=100,
        )
    jobs = list(batch.jobs.order_by("source__position", "family"))
    assert [(j.source.key, j.family, j.systems) for j in jobs] == [
        (f"s{i}", family, systems)
        for i in (1, 2, 3)
        for family, systems in (("cot", ["cot_bs"]), ("plain", ["plain_bs", "plain_sc"]), ("scgr", ["scgr"]))
    ]
    assert set(study.systems.values_list("key", flat=True)) == {"plain_bs", "plain_sc", "cot_bs", "scgr"}
    assert study.systems.get(key="plain_bs").label == "Existing label"  # an existing system is left alone
    assert study.systems.get(key="cot_bs").label == "CoT_BS"
    assert batch.model_name == "radlay-glossary-v1"
    assert batch.prompt_version == DEFAULT_VERSION
    assert batch.parameters == {
        "temperature": 0.8,
        "max_tokens": 512,
        "seed": None,
        "top_p": None,
        "sample_index": 0,
        "max_rounds": 5,
        "scgr_max_attempts": 3,
    }
    # All nine fit in the window: sent once, after the commit.
    assert len(sent) == 1 and sorted(sent[0][0]) == sorted(j.pk for j in jobs) and sent[0][1] == "glossary"


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"systems": ["plain_bs", "human"], "backend": "glossary"}, "systems"),
        ({"systems": [], "backend": "glossary"}, "systems"),
        ({"systems": ["plain_bs"], "backend": "openai"}, "model_name"),
        ({"systems": ["plain_bs"], "backend": "transformers"}, "model_name"),
        ({"systems": ["plain_bs"], "backend": "ollama"}, "backend"),
        ({"systems": ["plain_bs"], "backend": "glossary", "temperature": -0.1}, "temperature"),
        ({"systems": ["plain_bs"], "backend": "glossary", "max_rounds": -1}, "max_rounds"),
        ({"systems": ["plain_bs"], "backend": "glossary", "concurrency": 0}, "concurrency"),
        ({"systems": ["plain_bs"], "backend": "glossary", "prompt_version": "v999"}, "prompt_version"),
    ],
)
def test_bad_requests_are_refused_before_anything_is_written(kwargs, field):
    study = make_study()
    with pytest.raises(ValidationError) as caught:
        batches.generation_batch_create(study=study, **kwargs)
    assert field in caught.value.message_dict
    assert not GenerationBatch.objects.exists() and not System.objects.exists()


def test_a_study_without_sources_is_refused():
    study = Study.objects.create(slug="empty", title="empty")
    with pytest.raises(ValidationError) as caught:
        batches.generation_batch_create(study=study, systems=["plain_bs"], backend="glossary")
    assert "study" in caught.value.message_dict


# --- the concurrency window -----------------------------------------------------------------------


def test_at_most_concurrency_jobs_are_in_flight_and_each_finished_job_sends_the_next(
    sent, django_capture_on_commit_callbacks
):
    study = make_study(sentences=[f"Mild cardiomegaly number {i}." for i in range(5)])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        batch = batches.generation_batch_create(
            study=study, systems=["plain_bs"], backend="glossary", concurrency=2
        )
        assert sent == []  # nothing is sent inside the transaction
    assert len(callbacks) == 1
    callbacks[0]()
    order = list(batch.jobs.order_by("source__position").values_list("pk", flat=True))
    assert sent == [(order[:2], "glossary", None)]
    assert batch.jobs.filter(dispatched_at__isnull=False).count() == 2

    finished = []
    while sent:
        job_ids, _, _ = sent.pop(0)
        for job_id in job_ids:
            in_flight = batch.jobs.filter(
                status__in=["pending", "running"], dispatched_at__isnull=False
            ).count()
            assert in_flight <= 2
            with django_capture_on_commit_callbacks(execute=True):
                jobs.generation_job_run(job_id=job_id)
            finished.append(job_id)
    assert finished == order  # in source order, each finish sent exactly one more
    batch.refresh_from_db()
    assert batch.finished_at is not None
    assert set(batch.jobs.values_list("status", flat=True)) == {"succeeded"}


# --- the glossary backend, offline, on the demo study -------------------------------------------


def test_glossary_batch_on_the_demo_study_really_self_corrects(launch):
    call_command("demo", stdout=io.StringIO())
    study = Study.objects.get(slug="demo")
    # The demo ships texts for these systems: this batch replaces them on purpose.
    batch = launch(
        study=study, systems=[*FOUR, "scgr"], backend="glossary", concurrency=4, replace_uploaded=True
    )

    assert batch.finished_at is not None
    assert set(batch.jobs.values_list("status", flat=True)) == {"succeeded"}
    n_sources = study.sources.count()
    generated = Simplification.objects.filter(source__study=study, origin="generation")
    assert generated.count() == n_sources * 5
    changed = 0
    for source in study.sources.all():
        bs = simplification(study, source.key, "plain_bs")
        sc = simplification(study, source.key, "plain_sc")
        assert bs.backend == sc.backend == "glossary" and bs.model_name == "radlay-glossary-v1"
        assert bs.rounds == 0 and bs.transcript[-1]["agent"] == "generator"
        assert sc.transcript[0]["content"].startswith("Simplify the sentence:")
        if sc.text != bs.text:
            changed += 1
            decisions = [
                t["content"] for t in sc.transcript if t["agent"] == "processor" and t["role"] == "assistant"
            ]
            assert decisions[0].startswith("Yes") or decisions[1].startswith("Yes")
            assert decisions[-1].startswith("No") and decisions[-2].startswith("No")
            assert sc.rounds >= 2
        scgr = simplification(study, source.key, "scgr")
        assert scgr.prompt_version == SCGR_PROMPT_VERSION and scgr.transcript[0]["role"] == "system"
        assert scgr.parameters["concepts"] is not None
    assert changed >= 3  # the loop really changes text


# --- through the scripted OpenAI-compatible server ------------------------------------------------


def test_provenance_tokens_and_links_of_a_self_corrected_job(llm, launch):
    study = make_study(sentences=SENTENCES[:1])
    llm.script(
        "generator", ["There are two bright liver spots.", "There are two abnormal areas in the liver."]
    )
    llm.script("radiologist", ["Say what hyperenhancing means.", "Good."])
    llm.script("patient", ["What is a spot?", "Clear."])
    llm.script("processor", ["Yes, explain hyperenhancing.", "Yes, explain spot.", "No.", "No"])
    batch = launch(study=study, systems=["plain_bs", "plain_sc"], seed=7, temperature=0.3, max_rounds=4)

    job = batch.jobs.get()
    bs, sc = simplification(study, "s1", "plain_bs"), simplification(study, "s1", "plain_sc")
    assert bs.text == "There are two bright liver spots."
    assert sc.text == "There are two abnormal areas in the liver."
    assert set(job.simplifications.all()) == {bs, sc}
    for s in (bs, sc):
        assert s.origin == "generation" and s.backend == "openai" and s.model_name == "gpt-3.5-turbo"
        assert s.prompt_version == DEFAULT_VERSION and s.seed == 7
        assert s.parameters["temperature"] == 0.3 and s.parameters["generation_job"] == job.pk
        assert not s.flagged
    assert (bs.rounds, bs.reached_round_cap, bs.raw_output) == (0, False, "There are two bright liver spots.")
    assert (sc.rounds, sc.reached_round_cap) == (2, False)
    assert sc.parameters["stopped_by"] == "processor_no" and sc.parameters["max_rounds"] == 4
    processor = [
        t["content"] for t in sc.transcript if t["agent"] == "processor" and t["role"] == "assistant"
    ]
    assert processor == ["Yes, explain hyperenhancing.", "Yes, explain spot.", "No.", "No"]
    # Every request carried the batch's parameters; the job's usage is the server's.
    requests = llm.chat_requests()
    assert len(requests) == job.calls == 10 and job.cached_calls == 0
    assert {(r.params["temperature"], r.params["seed"], r.params["max_tokens"]) for r in requests} == {
        (0.3, 7, 512)
    }
    assert job.prompt_tokens == sum(count_tokens(m["content"]) for r in requests for m in r.messages)
    assert job.completion_tokens == sum(count_tokens(r.answer) for r in requests)
    assert job.cost_usd == pytest.approx((job.prompt_tokens * 0.5 + job.completion_tokens * 1.5) / 1e6)
    assert job.transcript == sc.transcript and job.attempts == 1


def test_a_bs_only_job_skips_the_loop_and_a_cot_parse_failure_is_flagged(llm, launch):
    study = make_study()
    llm.script("generator", [COT_ANSWER])  # the first cot call; the rest get the plain fallback answer
    batch = launch(study=study, systems=["cot_bs"], concurrency=1)

    assert [r.agent for r in llm.chat_requests()] == ["generator"] * 3
    assert batch.jobs.filter(status="succeeded").count() == 3
    first = simplification(study, "s1", "cot_bs")
    assert first.text == "There is a little fluid around the right lung." and not first.flagged
    assert first.raw_output == COT_ANSWER and first.rounds == 0
    second = simplification(study, "s2", "cot_bs")
    assert second.flagged and "CoT answer not parsed" in second.flag_reason
    assert not Simplification.objects.filter(system__key="cot_sc").exists()


def test_a_500_is_retried_and_the_job_succeeds(llm, launch):
    study = make_study(sentences=SENTENCES[:1])
    llm.fail_next(500)
    batch = launch(study=study, systems=["plain_bs"])

    job = batch.jobs.get()
    assert job.status == "succeeded" and job.attempts == 1 and job.error == ""
    assert [r.status for r in llm.chat_requests(status=None)] == [500, 200]
    assert simplification(study, "s1", "plain_bs").text == "There are two spots in the liver."


def test_a_timeout_is_recorded_as_a_failure_while_the_other_jobs_finish(settings, llm, launch):
    # two calls per job attempt
    settings.RADLAY_LLM_CALLS = replace(settings.RADLAY_LLM_CALLS, timeout=0.3, retries=1)
    settings.RADLAY_JOB_ATTEMPTS = 2
    slow = "Slow sentence: moderate hydronephrosis."

    def generator(request):
        if slow in request.messages[0]["content"]:
            time.sleep(1.0)
        return "A plain answer."

    llm.set_fallback("generator", generator)
    study = make_study(sentences=[SENTENCES[0], slow, SENTENCES[1]])
    batch = launch(study=study, systems=["plain_bs", "plain_sc"], concurrency=2)

    failed = batch.jobs.get(source__key="s2")
    assert failed.status == "failed" and failed.attempts == 2
    assert "timeout" in failed.error
    assert not Simplification.objects.filter(source__key="s2").exists()
    assert list(batch.jobs.exclude(pk=failed.pk).values_list("status", flat=True)) == ["succeeded"] * 2
    assert batch.finished_at is not None
    slow_calls = [r for r in llm.chat_requests(status=None) if slow in r.messages[0]["content"]]
    assert len(slow_calls) == 4  # 2 job attempts × 2 backend attempts


def test_a_non_transient_error_fails_the_job_at_once(llm, launch):
    study = make_study(sentences=SENTENCES[:2])
    llm.fail_next(400)
    batch = launch(study=study, systems=["plain_bs"], concurrency=1)

    first, second = batch.jobs.order_by("source__position")
    assert (first.status, first.attempts) == ("failed", 1) and "HTTP 400" in first.error
    assert second.status == "succeeded"


def test_a_transient_failure_sends_the_job_again_after_a_backoff(
    settings, llm, sent, django_capture_on_commit_callbacks
):
    settings.RADLAY_LLM_CALLS = replace(settings.RADLAY_LLM_CALLS, retries=0)
    settings.RADLAY_JOB_ATTEMPTS = 3
    study = make_study(sentences=SENTENCES[:1])
    with django_capture_on_commit_callbacks(execute=True):
        batch = batches.generation_batch_create(
            study=study, systems=["plain_bs"], backend="openai", model_name="gpt-3.5-turbo"
        )
    job = batch.jobs.get()
    llm.fail_next(503)
    with django_capture_on_commit_callbacks(execute=True):
        jobs.generation_job_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "pending" and job.attempts == 1 and "HTTP 503" in job.error
    assert job.dispatched_at is not None and job.not_before > job.dispatched_at
    assert sent[-1][0] == [job.pk] and sent[-1][2] > 0  # resent with a countdown
    with django_capture_on_commit_callbacks(execute=True):
        jobs.generation_job_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "succeeded" and job.attempts == 2 and job.error == ""


def test_scgr_factuality_violations_are_flagged_after_the_retries(llm, launch):
    study = make_study(sentences=["Small right pleural effusion measuring 2 cm."])
    llm.set_fallback("generator", '{"simplification": "There is some fluid."}')
    launch(study=study, systems=["scgr"])

    result = simplification(study, "s1", "scgr")
    assert result.text == "There is some fluid."
    assert result.flagged and "2 cm" in result.flag_reason
    assert result.rounds == 3 and result.reached_round_cap
    assert len(llm.chat_requests("generator")) == 3
    answers = [t for t in result.transcript if t["role"] == "assistant"]
    assert [t["round"] for t in answers] == [1, 2, 3] and all(t["violations"] for t in answers)
    # Each retry tells the refiner what it broke.
    assert "broke these constraints" in llm.chat_requests("generator")[1].messages[-1]["content"]


# --- cache, idempotency, crashes --------------------------------------------------------------------


def distinct_answers(server):
    """Answers that depend on the prompt, so that no two calls of a batch are identical."""

    def answer(prefix):
        def respond(request):
            tag = zlib.crc32(request.messages[-1]["content"].encode())
            if "complicated medical terms" in request.messages[-1]["content"]:
                return f"1. term: meaning.\n\nSimplification: {prefix} {tag}."
            return f"{prefix} {tag}."

        return respond

    for agent in ("generator", "radiologist", "patient"):
        server.set_fallback(agent, answer(agent.capitalize()))


def test_a_rerun_makes_no_call_and_duplicates_nothing(llm, launch):
    study = make_study()
    distinct_answers(llm)
    first = launch(study=study, systems=FOUR, concurrency=3)
    calls = len(llm.chat_requests(status=None))
    assert calls == 3 * 2 * 5  # per source and family: generator, radiologist, patient, 2 × processor
    assert LLMCallCache.objects.count() == calls
    texts = dict(Simplification.objects.values_list("pk", "shown_text__text"))

    second = launch(study=study, systems=FOUR, concurrency=3)
    assert len(llm.chat_requests(status=None)) == calls  # zero new calls
    assert Simplification.objects.count() == 3 * 4
    assert dict(Simplification.objects.values_list("pk", "shown_text__text")) == texts
    for job in second.jobs.all():
        assert job.status == "succeeded" and job.calls == job.cached_calls == 5 and job.cost_usd == 0
    assert sum(first.jobs.values_list("cost_usd", flat=True)) > 0
    sc = simplification(study, "s1", "plain_sc")
    assert sc.parameters["generation_batch"] == second.pk
    assert all(t["cached"] for t in sc.transcript if t["role"] == "assistant")


def test_a_fresh_sample_index_makes_new_calls(llm, launch):
    study = make_study(sentences=SENTENCES[:1])
    launch(study=study, systems=["plain_bs"])
    launch(study=study, systems=["plain_bs"], sample_index=1)
    assert len(llm.chat_requests()) == 2


def test_running_a_finished_job_again_does_nothing(llm, launch):
    study = make_study(sentences=SENTENCES[:1])
    batch = launch(study=study, systems=["plain_bs", "plain_sc"])
    job = batch.jobs.get()
    requests = len(llm.chat_requests())
    again = jobs.generation_job_run(job_id=job.pk, task_id="another-delivery")
    assert again.status == "succeeded" and again.attempts == 1
    assert len(llm.chat_requests()) == requests
    assert Simplification.objects.count() == 2


class WorkerKilled(BaseException):
    """What a worker dying mid-task looks like to the code: an exception no `except Exception` catches."""


def test_a_worker_killed_mid_job_resumes_without_paying_twice(
    llm, monkeypatch, django_capture_on_commit_callbacks, sent
):
    study = make_study(sentences=SENTENCES[:1])
    llm.script("processor", ["Yes, explain lesions.", "No.", "No.", "No."])
    with django_capture_on_commit_callbacks(execute=True):
        batch = batches.generation_batch_create(
            study=study, systems=["plain_bs", "plain_sc"], backend="openai", model_name="gpt-3.5-turbo"
        )
    job = batch.jobs.get()

    real_backend = outcomes.batch_backend

    class DiesAfter:
        def __init__(self, inner, calls):
            self.inner, self.left = inner, calls
            self.name, self.model = inner.name, inner.model

        def complete(self, messages, **kwargs):
            if self.left == 0:
                raise WorkerKilled()
            self.left -= 1
            return self.inner.complete(messages, **kwargs)

    monkeypatch.setattr(outcomes, "batch_backend", lambda b: DiesAfter(real_backend(b), 4))
    with pytest.raises(WorkerKilled):
        jobs.generation_job_run(job_id=job.pk, task_id="task-1")
    job.refresh_from_db()
    assert job.status == "running" and job.task_id == "task-1"
    assert len(llm.chat_requests()) == 4 and LLMCallCache.objects.count() == 4
    assert not Simplification.objects.exists()
    monkeypatch.setattr(outcomes, "batch_backend", real_backend)

    # Another message for the same job (not the redelivered one) leaves a live job alone…
    assert jobs.generation_job_run(job_id=job.pk, task_id="task-2").status == "running"
    # …the broker's redelivery of task-1 (acks_late) takes it over and replays the cached calls.
    with django_capture_on_commit_callbacks(execute=True):
        done = jobs.generation_job_run(job_id=job.pk, task_id="task-1")
    assert done.status == "succeeded" and done.attempts == 2
    assert done.calls == 10 and done.cached_calls == 4
    assert len(llm.chat_requests()) == 10  # the 4 calls made before the crash were not paid twice
    assert Simplification.objects.count() == 2
    batch.refresh_from_db()
    assert batch.finished_at is not None


def test_a_stale_running_job_is_taken_over_by_any_message_and_by_dispatch(
    settings, sent, django_capture_on_commit_callbacks
):
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, stale_after=600)
    study = make_study(sentences=SENTENCES[:2])
    with django_capture_on_commit_callbacks(execute=True):
        batch = batches.generation_batch_create(
            study=study, systems=["plain_bs"], backend="glossary", concurrency=1
        )
    first, second = batch.jobs.order_by("source__position")
    assert sent[-1][0] == [first.pk]
    # Its worker died long ago (no heartbeat since) and the message is gone: the next dispatch sends
    # it again in the slot it held; the second job still waits for a free slot.
    GenerationJob.objects.filter(pk=first.pk).update(
        status="running", started_at=timezone.now() - timedelta(seconds=601), task_id="dead"
    )
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        batches.generation_batch_dispatch(batch=batch)
    assert [ids for ids, _, _ in sent] == [[first.pk]]
    assert GenerationJob.objects.get(pk=first.pk).status == "pending"
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs.generation_job_run(job_id=first.pk, task_id="new").status == "succeeded"
    assert sent[-1][0] == [second.pk]  # its finish freed the slot
    first.refresh_from_db()
    assert first.attempts == 1 and first.simplifications.count() == 1


def test_cancel_stops_pending_jobs_and_resume_runs_them(sent, django_capture_on_commit_callbacks):
    study = make_study()
    with django_capture_on_commit_callbacks(execute=True):
        batch = batches.generation_batch_create(
            study=study, systems=["plain_bs"], backend="glossary", concurrency=1
        )
    queued = sent[-1][0][0]
    assert batches.generation_batch_cancel(batch=batch) == 3
    assert batch.status == "cancelled" and batch.finished_at is not None
    # The message already in the queue finds its job cancelled and does nothing.
    assert jobs.generation_job_run(job_id=queued).status == "cancelled"
    assert not Simplification.objects.exists()
    sent.clear()

    with django_capture_on_commit_callbacks(execute=True):
        resumed = batches.generation_batch_resume(batch=batch)
    assert len(resumed) == 1 and batch.cancelled_at is None and batch.finished_at is None
    assert set(batch.jobs.values_list("status", flat=True)) == {"pending"}
    while sent:
        for job_id in sent.pop(0)[0]:
            with django_capture_on_commit_callbacks(execute=True):
                jobs.generation_job_run(job_id=job_id)
    batch.refresh_from_db()
    assert set(batch.jobs.values_list("status", flat=True)) == {"succeeded"} and batch.finished_at is not None


def test_a_running_job_finishes_and_is_recorded_after_cancel(llm, launch, monkeypatch):
    study = make_study(sentences=SENTENCES[:2])
    real_backend = outcomes.batch_backend

    class CancelsOnFirstCall:
        def __init__(self, inner):
            self.inner, self.name, self.model = inner, inner.name, inner.model

        def complete(self, messages, **kwargs):
            batch = GenerationBatch.objects.get()
            if batch.cancelled_at is None:
                batches.generation_batch_cancel(batch=batch)  # an admin cancels while this job runs
            return self.inner.complete(messages, **kwargs)

    monkeypatch.setattr(outcomes, "batch_backend", lambda b: CancelsOnFirstCall(real_backend(b)))
    batch = launch(study=study, systems=["plain_bs"], concurrency=1)
    assert dict(batch.jobs.values_list("source__key", "status")) == {"s1": "succeeded", "s2": "cancelled"}
    assert batch.status == "cancelled" and batch.finished_at is not None
    assert Simplification.objects.get().source.key == "s1"


def test_retry_failed_runs_failed_jobs_again(llm, launch, django_capture_on_commit_callbacks):
    study = make_study(sentences=SENTENCES[:1])
    llm.fail_next(401)
    batch = launch(study=study, systems=["plain_bs"])
    assert batch.jobs.get().status == "failed"
    with django_capture_on_commit_callbacks(execute=True):
        batches.generation_batch_resume(batch=batch)  # failed jobs stay failed without retry_failed
    assert batch.jobs.get().status == "failed"
    with django_capture_on_commit_callbacks(execute=True):
        batches.generation_batch_resume(batch=batch, retry_failed=True)
    job = batch.jobs.get()
    assert job.status == "succeeded" and job.attempts == 1 and job.error == ""


# --- a local model (transformers) -----------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_t5_dir(tiny_t5):
    """The session's tiny T5 (tests/conftest.py)."""
    import torch

    # A tiny model gains nothing from intra-op threads; on a 2-core CI machine they only slow it down.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield tiny_t5
    torch.set_num_threads(threads)


def test_a_transformers_batch_runs_a_local_model_directory(launch, tiny_t5_dir):
    study = make_study(sentences=SENTENCES[:2])
    batch = launch(
        study=study,
        systems=["plain_bs"],
        backend="transformers",
        model_name=str(tiny_t5_dir),
        temperature=0.0,
        max_tokens=8,
        concurrency=1,
    )
    jobs = list(batch.jobs.all())
    assert [j.status for j in jobs] == ["succeeded", "succeeded"], [j.error for j in jobs]
    result = simplification(study, "s1", "plain_bs")
    assert result.backend == "transformers" and result.model_name == str(tiny_t5_dir)
    assert result.raw_output.strip() and result.transcript[-1]["completion_tokens"] >= 1
    assert result.parameters["temperature"] == 0.0 and result.parameters["max_tokens"] == 8


def test_a_model_artifact_is_the_model_of_a_transformers_batch(launch, tiny_t5_dir):
    from ml.services import model_artifact_register

    artifact = model_artifact_register(name="tiny-t5", path=tiny_t5_dir)
    study = make_study(sentences=SENTENCES[:1])
    batch = launch(
        study=study,
        systems=["plain_bs", "plain_sc"],
        backend="transformers",
        model_artifact=artifact,
        temperature=0.0,
        max_tokens=8,
        max_rounds=1,
    )
    job = batch.jobs.get()
    assert job.status == "succeeded", job.error
    assert batch.model_artifact == artifact and batch.model_name == ""
    sc = simplification(study, "s1", "plain_sc")
    assert sc.model_name == artifact.path and sc.parameters["model_artifact"] == artifact.pk
    assert sc.rounds == 1 and {t["agent"] for t in sc.transcript} == {
        "generator",
        "radiologist",
        "patient",
        "processor",
    }


def test_a_model_artifact_needs_the_transformers_backend(tiny_t5_dir):
    from ml.services import model_artifact_register

    artifact = model_artifact_register(name="tiny-t5", path=tiny_t5_dir)
    with pytest.raises(ValidationError) as caught:
        batches.generation_batch_create(
            study=make_study(),
            systems=["plain_bs"],
            backend="openai",
            model_name="gpt-4o",
            model_artifact=artifact,
        )
    assert "model_artifact" in caught.value.message_dict


def test_the_failure_of_a_superseded_run_does_not_undo_the_run_that_took_over(
    llm, monkeypatch, sent, django_capture_on_commit_callbacks
):
    study = make_study(sentences=SENTENCES[:1])
    with django_capture_on_commit_callbacks(execute=True):
        batch = batches.generation_batch_create(
            study=study, systems=["plain_bs"], backend="openai", model_name="gpt-3.5-turbo"
        )
    job = batch.jobs.get()
    real_backend = outcomes.batch_backend

    class ResumedMeanwhile:
        """While the first run waits on the API, its heartbeat looks stopped, a resume sends the job
        again and another worker takes over."""

        def __init__(self, inner):
            self.inner, self.name, self.model = inner, inner.name, inner.model

        def complete(self, messages, **kwargs):
            monkeypatch.setattr(outcomes, "batch_backend", real_backend)
            with django_capture_on_commit_callbacks(execute=True):
                GenerationJob.objects.filter(pk=job.pk).update(
                    heartbeat_at=timezone.now() - timedelta(hours=1)
                )
                batches.generation_batch_resume(batch=batch)
                jobs.generation_job_run(job_id=job.pk, task_id="second")
            raise BackendError("HTTP 400: bad request", transient=False)

    monkeypatch.setattr(outcomes, "batch_backend", lambda b: ResumedMeanwhile(real_backend(b)))
    with django_capture_on_commit_callbacks(execute=True):
        jobs.generation_job_run(job_id=job.pk, task_id="first")
    job.refresh_from_db()
    assert (job.status, job.task_id, job.attempts, job.error) == ("succeeded", "second", 2, "")
    assert simplification(study, "s1", "plain_bs").text == "There are two spots in the liver."
