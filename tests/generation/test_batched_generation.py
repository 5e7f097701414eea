"""Batched generation for local models: the self-correction loop in lockstep over many sentences
(generation.pipeline.self_correction.run_self_correction_batch) and the gpu queue's chunks of jobs
(generation.services.jobs.generation_jobs_run, the dispatcher's chunks, generation.tasks).

The reference for every lockstep result is run_self_correction on the same sentence alone, with a
backend whose answers depend only on the call (the glossary, or the scripted one below), so the
order in which calls are made cannot change them."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from annotation.models import Simplification, Study
from generation import tasks
from generation.backends.base import BackendError, Completion, GenerationParams
from generation.backends.cache import CachedBackend, InMemoryCallCache
from generation.backends.glossary_backend import GlossaryBackend
from generation.call_cache import DbCallCache
from generation.models import GenerationJob, LLMCallCache
from generation.pipeline.self_correction import (
    run_self_correction,
    run_self_correction_batch,
)
from generation.services import batches, jobs, outcomes
from studies.source_services import source_upsert

DEMO_FILE = Path(__file__).resolve().parents[2] / "studies" / "demo" / "demo_study.csv"


def demo_sentences() -> list[str]:
    with DEMO_FILE.open(encoding="utf-8") as handle:
        return list(dict.fromkeys(row["source_text"] for row in csv.DictReader(handle)))


# --- a scripted backend -----------------------------------------------------------------------------

# Sentence tag → rounds in which the Processor still asks for changes on the radiologist's feedback.
YES_ROUNDS = {"S1": 0, "S2": 1, "S3": 3, "S4": 99}
TAG = re.compile(r"\bS\d+\b")


def words(text: str) -> int:
    return len(text.split())


@dataclass
class Log:
    method: str
    agent: str
    size: int


class ScriptedBackend:
    """Plays the four agents from each call's context, like the glossary backend, but with a known
    number of rounds per sentence (YES_ROUNDS by the sentence's tag) and some oddities: S2's Patient
    answer in round 1 is read as neither Yes nor No, S3's first refinement is cut off at max_tokens,
    S3's CoT answer is not in the CoT shape, and S4's processor calls are unpriced."""

    name = "scripted"

    def __init__(self, *, batches: bool = True, model: str = "scripted-1", fail_on: str = "") -> None:
        self.model = model
        self.log: list[Log] = []
        self.fail_on = fail_on
        if not batches:
            self.complete_batch = None  # type: ignore[assignment]

    def answer(self, messages, agent, context) -> Completion:
        if "scgr" in context:  # SCGR's Generator: strict JSON
            text = json.dumps({"simplification": f"In plain words, {context['scgr']['original']}"})
            return Completion(text=text, prompt_tokens=1, completion_tokens=words(text), model=self.model)
        round_ = context["round"]
        raw: dict = {}
        cost_known = True
        if agent == "generator":
            sentence = context["sentence"]
            tag = TAG.search(sentence).group()
            if context["prompt"] == "refine":
                text = f"{context['simplification']} (better {round_})"
                if tag == "S3" and round_ == 1:
                    raw["finish_reason"] = "length"
            elif context["prompt"] == "cot" and tag != "S3":
                text = f"1. term: a word.\n\nSimplification: In plain words, {sentence}"
            else:
                text = f"In plain words, {sentence}"
            if self.fail_on and self.fail_on in sentence:
                raise BackendError(f"cannot generate for {self.fail_on}", transient=False)
        elif agent == "radiologist":
            text = f"Radiologist round {round_} on: {context['simplification']}"
        elif agent == "patient":
            text = f"Patient round {round_} on: {context['simplification']}"
        else:
            tag = TAG.search(context["feedback"]).group()
            if context["feedback_of"] == "patient":
                text = "Notably, say it shorter." if (tag, round_) == ("S2", 1) else "No."
            else:
                text = f"Yes, explain {tag} better." if round_ <= YES_ROUNDS[tag] else "No, it is fine."
            cost_known = tag != "S4"
        prompt = sum(words(m["content"]) for m in messages)
        return Completion(
            text=text,
            prompt_tokens=prompt,
            completion_tokens=words(text),
            cost_usd=0.001 * (prompt + words(text)),
            model=self.model,
            raw=raw,
            cost_known=cost_known,
        )

    def complete(self, messages, *, agent, params, context=None) -> Completion:
        self.log.append(Log("complete", agent, 1))
        return self.answer(messages, agent, context)

    def complete_batch(self, conversations, *, agent, params, contexts=None) -> list[Completion]:
        self.log.append(Log("complete_batch", agent, len(conversations)))
        return [self.answer(m, agent, c) for m, c in zip(conversations, contexts, strict=True)]


SENTENCES = [
    "S1 Mild cardiomegaly.",
    "S2 Small right pleural effusion.",
    "S3 There are 2 hyperenhancing liver lesions.",
    "S4 No acute intracranial hemorrhage.",
]


def one_at_a_time(sentences, backend, **kwargs):
    return [run_self_correction(s, backend=backend, **kwargs) for s in sentences]


# --- lockstep = one at a time -------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["plain", "cot"])
@pytest.mark.parametrize("max_rounds", [0, 2, 5])
def test_lockstep_results_are_those_of_one_sentence_at_a_time(family, max_rounds):
    params = GenerationParams(temperature=0.0, seed=3)
    alone = one_at_a_time(SENTENCES, ScriptedBackend(), family=family, params=params, max_rounds=max_rounds)
    backend = ScriptedBackend()
    together = run_self_correction_batch(
        SENTENCES, backend=backend, family=family, params=params, max_rounds=max_rounds
    )
    assert together == alone  # every field: texts, rounds, transcript, flags, tokens, cost, stop reason

    # The sentences really differ: S1 stops in round 1, S2 in 2, S3 in 4, S4 only at the cap.
    expected_rounds = [min(r + 1, max_rounds) for r in (0, 1, 3, 99)]
    assert [r.rounds for r in together] == expected_rounds
    assert [r.stopped_by for r in together] == [
        "processor_no" if YES_ROUNDS[f"S{i + 1}"] < max_rounds else "round_cap" for i in range(4)
    ]
    if max_rounds == 5:
        assert "neither Yes nor No" in together[1].flag_reason
        assert "generator answer in round 1 was cut off" in together[2].flag_reason
        assert together[3].cost_known is False and together[0].cost_known is True
        assert together[3].sc_text.endswith("(better 5)") and together[3].reached_cap
    # One batch per step and agent, of the sentences still in the loop (a lone call is a plain one).
    assert all((log.method == "complete_batch") == (log.size > 1) for log in backend.log)
    steps = [(log.agent, log.size) for log in backend.log]
    expected = [("generator", 4)]
    for round_ in range(1, max_rounds + 1):
        active = sum(1 for r in expected_rounds if r >= round_)
        refining = sum(
            1 for i, r in enumerate(expected_rounds) if r >= round_ and YES_ROUNDS[f"S{i + 1}"] >= round_
        )
        expected += [("radiologist", active), ("patient", active), ("processor", 2 * active)]
        if refining:
            expected.append(("generator", refining))
    assert steps == expected


def test_a_backend_without_complete_batch_is_called_once_per_conversation():
    alone = one_at_a_time(SENTENCES, ScriptedBackend(), family="plain")
    backend = ScriptedBackend(batches=False)
    together = run_self_correction_batch(SENTENCES, backend=backend, family="plain")
    assert together == alone
    assert {log.method for log in backend.log} == {"complete"}
    assert len(backend.log) == sum(r.calls for r in together)


@pytest.mark.parametrize("max_rounds", [1, 5])
def test_lockstep_with_the_glossary_backend_on_the_demo_sentences(max_rounds):
    sentences = demo_sentences()
    for kind in ("plain", "cot"):
        alone = one_at_a_time(sentences, GlossaryBackend(), family=kind, max_rounds=max_rounds)
        together = run_self_correction_batch(
            sentences, backend=GlossaryBackend(), family=kind, max_rounds=max_rounds
        )
        assert together == alone
        if max_rounds == 5:
            assert {r.rounds for r in together} == {1, 2}  # some sentences take another round
            assert any(r.sc_text != r.bs_text for r in together)
        else:
            assert {r.stopped_by for r in together} == {"processor_no", "round_cap"}


def test_agent_backends_play_their_agents_in_lockstep_too():
    patient = ScriptedBackend(model="patient-model")
    alone = [
        run_self_correction(
            s, backend=ScriptedBackend(), agent_backends={"patient": ScriptedBackend(model="patient-model")}
        )
        for s in SENTENCES
    ]
    together = run_self_correction_batch(
        SENTENCES, backend=ScriptedBackend(), agent_backends={"patient": patient}
    )
    assert together == alone
    assert {log.agent for log in patient.log} == {"patient"}
    assert {
        t["model"] for r in together for t in r.transcript if t["agent"] == "patient" and "model" in t
    } == {"patient-model"}


def test_empty_input_and_bad_arguments():
    assert run_self_correction_batch([], backend=ScriptedBackend()) == []
    with pytest.raises(ValueError, match="family"):
        run_self_correction_batch(SENTENCES, backend=None, family="fancy")
    with pytest.raises(ValueError, match="max_rounds"):
        run_self_correction_batch(SENTENCES, backend=None, max_rounds=-1)


def test_a_failing_batch_fails_the_whole_call():
    with pytest.raises(BackendError, match="S3"):
        run_self_correction_batch(SENTENCES, backend=ScriptedBackend(fail_on="S3"))


# --- the call cache is shared by both ways ---------------------------------------------------------


def test_a_lockstep_rerun_is_served_by_the_cache_of_a_one_at_a_time_run_and_back():
    inner = ScriptedBackend()
    cache = InMemoryCallCache()
    alone = one_at_a_time(SENTENCES, CachedBackend(inner, cache), family="cot")
    made = len(inner.log)
    assert made == sum(r.calls for r in alone) and len(cache) == made

    again = run_self_correction_batch(SENTENCES, backend=CachedBackend(inner, cache), family="cot")
    assert len(inner.log) == made  # no new call
    assert all(r.cached_calls == r.calls and r.cost_usd == 0 for r in again)
    assert [(r.sc_text, r.rounds, r.flag_reasons) for r in again] == [
        (r.sc_text, r.rounds, r.flag_reasons) for r in alone
    ]

    # …and the other way round: a batched run fills the cache that a one-at-a-time run reads.
    inner, cache = ScriptedBackend(), InMemoryCallCache()
    first = run_self_correction_batch(SENTENCES, backend=CachedBackend(inner, cache), family="plain")
    made = len(inner.log)
    second = one_at_a_time(SENTENCES, CachedBackend(inner, cache), family="plain")
    assert len(inner.log) == made
    assert [r.sc_text for r in second] == [r.sc_text for r in first]
    assert all(r.cached_calls == r.calls for r in second)


def test_a_call_repeated_within_a_batch_is_made_once_as_one_after_another():
    sentences = [SENTENCES[1], SENTENCES[1], SENTENCES[0]]  # two sources with the same text
    alone = one_at_a_time(sentences, CachedBackend(ScriptedBackend(), InMemoryCallCache()))
    inner = ScriptedBackend()
    together = run_self_correction_batch(sentences, backend=CachedBackend(inner, InMemoryCallCache()))
    assert together == alone
    assert together[1].cached_calls == together[1].calls > 0 and together[0].cached_calls == 0
    assert sum(log.size for log in inner.log) == together[0].calls + together[2].calls


# --- the gpu queue: chunks of jobs ----------------------------------------------------------------


def make_study(n: int, slug: str = "gpu") -> Study:
    study = Study.objects.create(slug=slug, title=slug)
    for index in range(n):
        tag = f"S{index % 4 + 1}"
        source_upsert(study=study, key=f"s{index}", text=f"{tag} finding number {index}: mild cardiomegaly.")
    return study


@pytest.fixture
def scripted_gpu(monkeypatch):
    """transformers batches answered by ScriptedBackend (through the database call cache), so the
    chunk path runs without a model; `.inner` counts the calls."""

    class Holder:
        inner = ScriptedBackend(model="/models/scripted")
        fail_on = ""

    def backend(batch):
        Holder.inner.fail_on = Holder.fail_on
        return CachedBackend(Holder.inner, DbCallCache(backend=batch.backend, model=batch.model_name))

    monkeypatch.setattr(outcomes, "batch_backend", backend)
    return Holder


def gpu_batch(study, django_capture_on_commit_callbacks, **kwargs):
    kwargs.setdefault("systems", ["plain_bs", "plain_sc"])
    with django_capture_on_commit_callbacks(execute=True):
        return batches.generation_batch_create(
            study=study, backend="transformers", model_name="/models/scripted", **kwargs
        )


def texts_and_provenance(study):
    rows = []
    for s in Simplification.objects.filter(source__study=study).order_by("source__position", "system__key"):
        parameters = {
            k: v for k, v in s.parameters.items() if k not in ("generation_batch", "generation_job")
        }
        rows.append(
            (
                s.source.key,
                s.system.key,
                s.text,
                s.origin,
                s.backend,
                s.model_name,
                s.prompt_version,
                parameters,
                s.seed,
                s.rounds,
                s.reached_round_cap,
                s.transcript,
                s.raw_output,
                s.flagged,
                s.flag_reason,
            )
        )
    return rows


@pytest.mark.django_db
def test_gpu_jobs_are_sent_in_chunks_of_one_family_and_a_slot_holds_a_chunk(
    settings, sent, scripted_gpu, django_capture_on_commit_callbacks
):
    settings.RADLAY_LOCAL_MODELS = replace(settings.RADLAY_LOCAL_MODELS, batch_size=3)
    study = make_study(5)
    batch = gpu_batch(
        study,
        django_capture_on_commit_callbacks,
        systems=["plain_bs", "plain_sc", "cot_bs", "scgr"],
        concurrency=2,
    )
    ids = {(j.family, j.source.position): j.pk for j in batch.jobs.select_related("source")}
    positions = sorted({p for _, p in ids})
    cot = [ids["cot", p] for p in positions]
    plain = [ids["plain", p] for p in positions]
    # Two slots × 3 jobs, taken family by family in source order, sent as chunks of one family.
    assert [ids for ids, _, _ in sent] == [cot[:3], cot[3:5], [plain[0]]]
    assert {backend for _, backend, _ in sent} == {"transformers"}
    in_flight = batch.jobs.filter(dispatched_at__isnull=False, status="pending").count()
    assert in_flight == 6  # concurrency × RADLAY_LOCAL_MODELS.batch_size

    queued = [ids for ids, _, _ in sent[1:]]
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        done = jobs.generation_jobs_run(job_ids=cot[:3], task_id="chunk-1")
    assert [j.status for j in done] == ["succeeded"] * 3
    # The chunk's three freed slots are refilled at once, as one chunk, not three chunks of one.
    assert [ids for ids, _, _ in sent] == [plain[1:4]]
    assert [log.size for log in scripted_gpu.inner.log] == [3]  # cot_bs only: one batched call

    # Run everything left; SCGR jobs go one per task.
    scgr = {ids["scgr", p] for p in positions}
    queued += [ids for ids, _, _ in sent]
    sent.clear()
    while queued:
        ids = queued.pop(0)
        assert len(ids) <= 3 and (len(ids) == 1 or not scgr & set(ids))
        with django_capture_on_commit_callbacks(execute=True):
            jobs.generation_jobs_run(job_ids=ids, task_id=f"chunk-{ids[0]}")
        queued += [ids for ids, _, _ in sent]
        sent.clear()
    batch.refresh_from_db()
    assert set(batch.jobs.values_list("status", flat=True)) == {"succeeded"} and batch.finished_at
    assert Simplification.objects.filter(source__study=study).count() == 5 * 4


@pytest.mark.django_db
def test_a_chunk_writes_each_job_as_the_single_job_path_does(
    settings, scripted_gpu, django_capture_on_commit_callbacks
):
    systems = ["plain_bs", "plain_sc", "cot_bs", "cot_sc"]
    # the one-job-per-task path
    settings.RADLAY_LOCAL_MODELS = replace(settings.RADLAY_LOCAL_MODELS, batch_size=1)
    single = make_study(6, slug="single")
    gpu_batch(single, django_capture_on_commit_callbacks, systems=systems, max_rounds=3)
    assert {log.size for log in scripted_gpu.inner.log} == {1}

    settings.RADLAY_LOCAL_MODELS = replace(settings.RADLAY_LOCAL_MODELS, batch_size=4)
    scripted_gpu.inner = ScriptedBackend(model="/models/scripted")
    LLMCallCache.objects.all().delete()  # the same texts: the second study must make its own calls
    chunked = make_study(6, slug="chunked")
    batch = gpu_batch(chunked, django_capture_on_commit_callbacks, systems=systems, max_rounds=3)
    assert max(log.size for log in scripted_gpu.inner.log) == 8  # 4 jobs × 2 Processor calls

    assert texts_and_provenance(chunked) == texts_and_provenance(single)
    for job in batch.jobs.all():
        assert job.status == "succeeded" and job.attempts == 1
        produced = list(job.simplifications.all())
        assert {s.system.key for s in produced} == {f"{job.family}_bs", f"{job.family}_sc"}
        assert all(s.parameters["generation_job"] == job.pk for s in produced)
        sc = next(s for s in produced if s.system.key.endswith("_sc"))
        assert job.transcript == sc.transcript and job.calls == len(sc.transcript) // 2
        assert job.cost_usd == pytest.approx(sum(t.get("cost_usd", 0) for t in sc.transcript))


@pytest.mark.django_db
def test_a_rerun_of_a_chunked_batch_makes_no_call(settings, scripted_gpu, django_capture_on_commit_callbacks):
    settings.RADLAY_LOCAL_MODELS = replace(settings.RADLAY_LOCAL_MODELS, batch_size=4)
    study = make_study(6)
    gpu_batch(study, django_capture_on_commit_callbacks)
    calls = sum(log.size for log in scripted_gpu.inner.log)
    texts = dict(Simplification.objects.values_list("pk", "shown_text__text"))
    assert LLMCallCache.objects.count() == calls

    second = gpu_batch(study, django_capture_on_commit_callbacks)
    assert sum(log.size for log in scripted_gpu.inner.log) == calls
    assert dict(Simplification.objects.values_list("pk", "shown_text__text")) == texts
    assert all(j.status == "succeeded" and j.calls == j.cached_calls > 0 for j in second.jobs.all())


class WorkerKilled(BaseException):
    """A worker dying mid-task, as the code sees it: nothing catches it."""


@pytest.mark.django_db
def test_a_chunk_whose_worker_died_is_taken_over_and_resumes_from_the_cache(
    settings, sent, scripted_gpu, django_capture_on_commit_callbacks
):
    settings.RADLAY_LOCAL_MODELS = replace(settings.RADLAY_LOCAL_MODELS, batch_size=4)
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, stale_after=600)
    study = make_study(4)
    batch = gpu_batch(study, django_capture_on_commit_callbacks, max_rounds=2)
    ((chunk, _, _),) = sent
    inner = scripted_gpu.inner
    real_batch = inner.complete_batch
    left = [3]  # the first answers, the radiologists', the patients'; then the worker dies

    def dies(conversations, **kwargs):
        if not left[0]:
            raise WorkerKilled()
        left[0] -= 1
        return real_batch(conversations, **kwargs)

    inner.complete_batch = dies
    with pytest.raises(WorkerKilled):
        jobs.generation_jobs_run(job_ids=chunk, task_id="gpu-1")
    assert set(batch.jobs.values_list("status", "task_id")) == {("running", "gpu-1")}
    assert not Simplification.objects.exists()
    made = sum(log.size for log in inner.log)
    assert made == 12 and LLMCallCache.objects.count() == 12
    inner.complete_batch = real_batch

    # Another message leaves live jobs alone; the broker's redelivery (same task id) takes them over.
    assert {j.status for j in jobs.generation_jobs_run(job_ids=chunk, task_id="gpu-2")} == {"running"}
    with django_capture_on_commit_callbacks(execute=True):
        done = jobs.generation_jobs_run(job_ids=chunk, task_id="gpu-1")
    assert [(j.status, j.attempts) for j in done] == [("succeeded", 2)] * 4
    assert all(j.cached_calls == 3 for j in done)  # the three calls made before the crash
    assert sum(log.size for log in inner.log) == made + sum(j.calls - 3 for j in done)

    # A chunk lost with its message is sent again by a dispatch once stale, like a single job.
    long_ago = timezone.now() - timedelta(seconds=601)
    GenerationJob.objects.filter(pk=chunk[0]).update(
        status="running", started_at=long_ago, heartbeat_at=long_ago
    )
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        batches.generation_batch_dispatch(batch=batch)
    assert sent == [([chunk[0]], "transformers", None)]


@pytest.mark.django_db
def test_a_failing_job_does_not_fail_its_chunk(settings, scripted_gpu, django_capture_on_commit_callbacks):
    settings.RADLAY_LOCAL_MODELS = replace(settings.RADLAY_LOCAL_MODELS, batch_size=4)
    scripted_gpu.fail_on = "number 2:"
    study = make_study(4)
    batch = gpu_batch(study, django_capture_on_commit_callbacks)
    statuses = dict(batch.jobs.values_list("source__key", "status"))
    assert statuses == {"s0": "succeeded", "s1": "succeeded", "s2": "failed", "s3": "succeeded"}
    assert "cannot generate for number 2:" in batch.jobs.get(source__key="s2").error
    batch.refresh_from_db()
    assert batch.finished_at is not None
    assert Simplification.objects.filter(source__study=study).count() == 3 * 2


@pytest.mark.django_db
def test_a_transient_chunk_failure_sends_each_job_again_on_its_own(
    settings, sent, scripted_gpu, django_capture_on_commit_callbacks
):
    settings.RADLAY_LOCAL_MODELS = replace(settings.RADLAY_LOCAL_MODELS, batch_size=4)
    study = make_study(3)
    batch = gpu_batch(study, django_capture_on_commit_callbacks, systems=["plain_bs"])
    ((chunk, _, _),) = sent

    def out_of_memory(conversations, **kwargs):
        raise BackendError("CUDA out of memory", transient=True)

    scripted_gpu.inner.complete_batch = out_of_memory
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        jobs.generation_jobs_run(job_ids=chunk, task_id="gpu-1")
    assert sorted(ids for ids, _, _ in sent) == sorted([pk] for pk in chunk)
    assert all(countdown is not None for _, _, countdown in sent)
    for job in batch.jobs.all():
        assert (job.status, job.attempts) == ("pending", 1) and "out of memory" in job.error


@pytest.mark.django_db
def test_the_gpu_task_takes_a_chunk_or_a_single_job_id(settings, scripted_gpu, monkeypatch):
    monkeypatch.setattr(tasks, "generation_jobs_send", lambda *a, **k: None)
    study = make_study(3)
    batch = batches.generation_batch_create(
        study=study, systems=["plain_bs"], backend="transformers", model_name="/models/scripted"
    )
    first, *rest = batch.jobs.order_by("source__position").values_list("pk", flat=True)
    tasks.generation_job_run_gpu.apply(args=[rest], task_id="chunk")
    tasks.generation_job_run_gpu.apply(args=[first], task_id="old-message")  # queued before chunks
    assert dict(batch.jobs.values_list("pk", "task_id")) == {
        first: "old-message",
        **dict.fromkeys(rest, "chunk"),
    }
    assert set(batch.jobs.values_list("status", flat=True)) == {"succeeded"}
    assert [log.size for log in scripted_gpu.inner.log] == [2, 1]


# --- a real local model ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_t5_dir(tiny_t5):
    """The session's tiny T5 (tests/conftest.py)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model gains nothing from intra-op threads on a 2-core CI box
    yield tiny_t5
    torch.set_num_threads(threads)


@pytest.mark.django_db
def test_a_transformers_batch_runs_its_jobs_in_lockstep_on_a_local_model(
    settings, tiny_t5_dir, monkeypatch, django_capture_on_commit_callbacks
):
    import ml.inference

    real_generate = ml.inference.generate
    prompts_per_call: list[int] = []

    def spy(loaded, prompts, **kwargs):
        prompts_per_call.append(len(prompts))
        return real_generate(loaded, prompts, **kwargs)

    monkeypatch.setattr(ml.inference, "generate", spy)
    settings.RADLAY_LOCAL_MODELS = replace(settings.RADLAY_LOCAL_MODELS, batch_size=4)
    study = make_study(5)
    options = {
        "study": study,
        "systems": ["plain_bs", "plain_sc"],
        "backend": "transformers",
        "model_name": str(tiny_t5_dir),
        # Sampling: greedy decoding of a random model says the same thing to every prompt, and the
        # cache would rightly make one call for the jobs' identical Patient and Processor prompts.
        "temperature": 1.0,
        "seed": 0,
        "max_tokens": 6,
        "max_rounds": 1,
    }
    with django_capture_on_commit_callbacks(execute=True):
        batch = batches.generation_batch_create(**options)
    jobs = list(batch.jobs.all())
    assert [j.status for j in jobs] == ["succeeded"] * 5, [j.error for j in jobs]
    for source in study.sources.all():
        for system in ("plain_bs", "plain_sc"):
            assert Simplification.objects.filter(source=source, system__key=system).count() == 1
    # Chunks of 4 and 1: the first answers of 4 jobs in one call, their Processor step 8 prompts.
    assert max(prompts_per_call) == 8 and prompts_per_call[0] == 4
    sc = Simplification.objects.get(source__key="s0", system__key="plain_sc")
    assert sc.backend == "transformers" and sc.model_name == str(tiny_t5_dir) and sc.rounds == 1
    assert {t["agent"] for t in sc.transcript} == {"generator", "radiologist", "patient", "processor"}

    # The rerun is served by the call cache: no model call at all.
    prompts_per_call.clear()
    with django_capture_on_commit_callbacks(execute=True):
        again = batches.generation_batch_create(**options)
    assert prompts_per_call == []
    assert all(j.status == "succeeded" and j.calls == j.cached_calls for j in again.jobs.all())
    assert Simplification.objects.filter(source__study=study).count() == 5 * 2
