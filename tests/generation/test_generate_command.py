"""`manage.py generate` end to end. transaction=True: the command commits like it does in a shell, so
the embedded (eager) mode runs the whole batch before --wait reads it."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Simplification, Study
from generation.models import GenerationBatch, GenerationJob
from studies.source_services import source_upsert

pytestmark = pytest.mark.django_db(transaction=True)

FOUR = "plain_bs,plain_sc,cot_bs,cot_sc"


def generate(*args: str) -> str:
    out = io.StringIO()
    call_command("generate", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def small_study() -> Study:
    study = Study.objects.create(slug="cmd", title="cmd")
    for i, text in enumerate(["Small right pleural effusion.", "Mild cardiomegaly.", "No pneumothorax."]):
        source_upsert(study=study, key=f"s{i + 1}", text=text)
    return study


@pytest.fixture
def llm(settings, scripted_llm, external_calls_approved):
    settings.OPENAI_BASE_URL = scripted_llm.base_url
    settings.OPENAI_API_KEY = "test-key"
    settings.RADLAY_LLM_CALLS = replace(settings.RADLAY_LLM_CALLS, retry_delay=0.01)
    return scripted_llm


@pytest.mark.heavy
def test_all_systems_and_scgr_with_the_glossary_backend_on_the_demo_study():
    call_command("demo", stdout=io.StringIO())
    # The demo ships texts for these systems: replaced on purpose.
    out = generate(
        "--study",
        "demo",
        "--systems",
        FOUR + ",scgr",
        "--backend",
        "glossary",
        "--replace-uploaded",
        "--wait",
    )

    study = Study.objects.get(slug="demo")
    batch = GenerationBatch.objects.get()
    n = study.sources.count()
    assert f"batch {batch.pk}: {2 * n + n} job(s) for demo" in out
    assert f"{3 * n} succeeded, 0 failed" in out and f"batch {batch.pk} finished" in out
    for key in ("plain_bs", "plain_sc", "cot_bs", "cot_sc", "scgr"):
        assert Simplification.objects.filter(system__key=key, origin="generation").count() == n


def test_the_openai_backend_through_the_command_and_a_rerun_that_pays_nothing(llm):
    small_study()
    args = ["--study", "cmd", "--systems", FOUR, "--backend", "openai", "--model", "gpt-4o-mini"]
    args += ["--temperature", "0.5", "--seed", "11", "--max-rounds", "2", "--max-tokens", "300", "--wait"]
    out = generate(*args)
    calls = len(llm.chat_requests())
    assert calls > 0 and "6 succeeded, 0 failed" in out
    batch = GenerationBatch.objects.get()
    assert (batch.model_name, batch.parameters["temperature"], batch.parameters["seed"]) == (
        "gpt-4o-mini",
        0.5,
        11,
    )
    assert batch.parameters["max_rounds"] == 2 and batch.parameters["max_tokens"] == 300
    assert {r.params["model"] for r in llm.chat_requests()} == {"gpt-4o-mini"}
    assert {r.params["max_tokens"] for r in llm.chat_requests()} == {300}

    again = generate(*args)
    assert len(llm.chat_requests()) == calls
    rerun = GenerationBatch.objects.order_by("-pk").first()
    total = sum(rerun.jobs.values_list("calls", flat=True))
    assert total >= calls and f"{total} calls ({total} cached)" in again and "$0.0000" in again
    assert Simplification.objects.count() == 3 * 4  # one per (source, system), however often it runs


def test_failed_jobs_are_reported_and_make_the_command_fail(llm):
    small_study()
    llm.fail_next(403)
    with pytest.raises(CommandError) as caught:
        generate(
            "--study",
            "cmd",
            "--systems",
            "plain_bs",
            "--backend",
            "openai",
            "--model",
            "gpt-4o",
            "--wait",
            "--concurrency",
            "1",
        )
    assert "1 job(s)" in str(caught.value) and caught.value.returncode == 1
    assert list(GenerationJob.objects.order_by("source__position").values_list("status", flat=True)) == [
        "failed",
        "succeeded",
        "succeeded",
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--study", "nope", "--systems", "plain_bs", "--backend", "glossary"], "No study 'nope'"),
        (["--study", "cmd", "--systems", "plain_bs", "--backend", "openai"], "model_name"),
        (["--study", "cmd", "--systems", "plain_bs,human", "--backend", "glossary"], "unknown: human"),
        (["--study", "cmd", "--backend", "glossary"], "--systems is required"),
        (["--resume", "999"], "No generation batch 999"),
    ],
)
def test_bad_arguments_are_refused(args, message):
    small_study()
    with pytest.raises(CommandError, match=message):
        generate(*args)
    assert not GenerationBatch.objects.exists()


def test_cancel_and_resume_a_batch(monkeypatch):
    from generation import tasks

    small_study()
    monkeypatch.setattr(tasks, "generation_jobs_send", lambda *a, **k: None)  # a broker nobody consumes
    generate("--study", "cmd", "--systems", "plain_bs", "--backend", "glossary", "--concurrency", "1")
    batch = GenerationBatch.objects.get()
    assert "3 pending job(s) cancelled" in generate("--cancel", str(batch.pk))
    assert set(batch.jobs.values_list("status", flat=True)) == {"cancelled"}

    monkeypatch.undo()
    out = generate("--resume", str(batch.pk), "--wait")
    assert "resumed, 1 job(s) sent" in out and "3 succeeded" in out
    assert Simplification.objects.count() == 3


def test_a_model_artifact_is_looked_up_by_name(tmp_path):
    from ml.services import model_artifact_register

    directory = tmp_path / "broken-model"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps({"model_type": "t5", "is_encoder_decoder": True}))
    artifact = model_artifact_register(name="my-t5", path=directory)
    small_study()
    with pytest.raises(CommandError):
        generate(
            "--study",
            "cmd",
            "--systems",
            "plain_bs",
            "--backend",
            "transformers",
            "--model-artifact",
            "my-t5",
            "--wait",
        )
    batch = GenerationBatch.objects.get()
    assert batch.model_artifact == artifact
    job = batch.jobs.first()
    # The job tried to load the artifact's directory (which holds no weights) and recorded why it failed.
    assert (
        job.status == "failed"
        and "cannot load local model" in job.error
        and str(directory.resolve()) in job.error
    )
    with pytest.raises(CommandError, match="No model artifact 'other'"):
        generate(
            "--study",
            "cmd",
            "--systems",
            "plain_bs",
            "--backend",
            "transformers",
            "--model-artifact",
            "other",
        )
