"""The batch pages and the admin: launching from the form and from the Study action, the live
progress bar (htmx fragment + plain link), transcripts, cancel; every page scoped to the study's
researchers."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.urls import reverse

from annotation.models import Simplification, Study
from generation import tasks
from generation.models import GenerationBatch
from generation.services import batches, jobs
from studies.source_services import source_upsert

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):
    user = get_user_model().objects.create_user("admin", password="pw", is_staff=True, is_superuser=True)
    client.force_login(user)
    return user


@pytest.fixture
def study():
    study = Study.objects.create(slug="views", title="Views study")
    for i, text in enumerate(["Small right pleural effusion.", "Mild hepatic steatosis."]):
        source_upsert(study=study, key=f"s{i + 1}", text=text)
    return study


@pytest.fixture
def finished_batch(study, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        batch = batches.generation_batch_create(
            study=study, systems=["plain_bs", "plain_sc"], backend="glossary"
        )
    batch.refresh_from_db()
    return batch


@pytest.fixture
def unsent_batch(study, monkeypatch, django_capture_on_commit_callbacks):
    """A batch whose jobs were queued on a broker nobody consumes yet."""
    monkeypatch.setattr(tasks, "generation_jobs_send", lambda *a, **k: None)
    with django_capture_on_commit_callbacks(execute=True):
        return batches.generation_batch_create(
            study=study, systems=["cot_bs"], backend="glossary", concurrency=1
        )


def test_batch_pages_are_for_the_studys_researchers_only(client, study, finished_batch, unsent_batch):
    detail = reverse("generation:batch_detail", args=[finished_batch.pk])
    cancel = reverse("generation:batch_cancel", args=[unsent_batch.pk])
    resume = reverse("generation:batch_resume", args=[finished_batch.pk])
    response = client.get(detail)
    assert response.status_code == 302 and response["Location"].startswith(reverse("evaluation:login"))

    # A staff researcher of another study sees none of this study's batches and can act on none.
    other = Study.objects.create(slug="other", title="Other study")
    outsider = get_user_model().objects.create_user("outsider", password="pw", is_staff=True)
    other.researchers.add(outsider)
    client.force_login(outsider)
    assert client.get(detail).status_code == 404
    assert client.get(detail, headers={"HX-Request": "true"}).status_code == 404
    assert client.post(cancel).status_code == 404
    assert client.post(resume, {"retry_failed": "1"}).status_code == 404
    assert detail not in client.get(reverse("generation:batch_list")).content.decode()
    assert unsent_batch.jobs.filter(status="cancelled").count() == 0

    # A researcher of the study needs no staff status.
    insider = get_user_model().objects.create_user("insider", password="pw")
    study.researchers.add(insider)
    client.force_login(insider)
    assert client.get(detail).status_code == 200
    assert detail in client.get(reverse("generation:batch_list")).content.decode()
    assert client.post(cancel).status_code == 302
    assert set(unsent_batch.jobs.values_list("status", flat=True)) == {"cancelled"}


def test_the_admin_lists_only_the_batches_and_jobs_of_ones_studies(client, study, finished_batch):
    other = Study.objects.create(slug="other", title="Other study")
    outsider = get_user_model().objects.create_user("outsider", password="pw", is_staff=True)
    outsider.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_generationbatch", "view_generationjob"])
    )
    other.researchers.add(outsider)
    client.force_login(outsider)
    batches_page = client.get(reverse("admin:generation_generationbatch_changelist")).content.decode()
    assert "0 generation batchs" in batches_page or "0 generation batches" in batches_page
    job = finished_batch.jobs.first()
    assert client.get(reverse("admin:generation_generationjob_change", args=[job.pk])).status_code == 302
    study.researchers.add(outsider)
    assert client.get(reverse("admin:generation_generationjob_change", args=[job.pk])).status_code == 200


def test_a_finished_batch_page_shows_counts_and_every_transcript_and_stops_polling(
    client, staff, finished_batch
):
    response = client.get(reverse("generation:batch_detail", args=[finished_batch.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "<strong>2 of 2</strong> jobs finished" in html and "2 succeeded" in html and "0 pending" in html
    assert "hx-trigger" not in html  # nothing left to poll for
    sc = Simplification.objects.get(source__key="s1", system__key="plain_sc")
    assert reverse("admin:annotation_simplification_change", args=[sc.pk]) in html
    # Each job's transcript: every agent's message, the processor's decisions included.
    assert html.count("<details>") == 2
    for turn in sc.transcript:
        assert turn["agent"] in html
    processor_answer = next(
        t["content"] for t in sc.transcript if t["agent"] == "processor" and t["role"] == "assistant"
    )
    assert processor_answer in html


def test_a_running_batch_polls_every_two_seconds_with_a_link_fallback(client, staff, unsent_batch):
    url = reverse("generation:batch_detail", args=[unsent_batch.pk])
    html = client.get(url).content.decode()
    assert f'hx-get="{url}"' in html and 'hx-trigger="every 2s"' in html
    assert f'<a href="{url}">Refresh</a>' in html
    assert "0 succeeded" in html and "2 pending" in html and "ETA —" in html

    fragment = client.get(url, headers={"HX-Request": "true"})
    body = fragment.content.decode()
    assert (
        fragment.status_code == 200
        and "<html" not in body
        and body.lstrip().startswith('<section id="batch-progress"')
    )
    assert "0 of 2" in body

    # A job finishes: the next poll shows it (and an ETA from the time it took).
    job = unsent_batch.jobs.order_by("source__position").first()
    jobs.generation_job_run(job_id=job.pk)
    body = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "<strong>1 of 2</strong>" in body and "1 succeeded" in body and "ETA 0:" in body


def test_cancel_from_the_batch_page(client, staff, unsent_batch):
    url = reverse("generation:batch_cancel", args=[unsent_batch.pk])
    assert client.get(url).status_code == 405
    response = client.post(url)
    assert response.status_code == 302 and response["Location"] == reverse(
        "generation:batch_detail", args=[unsent_batch.pk]
    )
    assert set(unsent_batch.jobs.values_list("status", flat=True)) == {"cancelled"}
    assert "cancelled" in client.get(response["Location"]).content.decode()


def test_the_batch_list(client, staff, finished_batch, unsent_batch):
    html = client.get(reverse("generation:batch_list")).content.decode()
    assert reverse("generation:batch_detail", args=[finished_batch.pk]) in html
    assert reverse("generation:batch_detail", args=[unsent_batch.pk]) in html


def test_launching_from_the_admin_form(client, staff, study, django_capture_on_commit_callbacks):
    launch = reverse("admin:generation_generationbatch_launch")
    form = client.get(launch + f"?study={study.pk}")
    assert form.status_code == 200 and f'<option value="{study.pk}" selected>' in form.content.decode()
    data = {
        "study": study.pk,
        "systems": ["plain_bs", "plain_sc", "cot_bs", "cot_sc", "scgr"],
        "backend": "glossary",
        "model_name": "",
        "temperature": "0.8",
        "max_rounds": "5",
        "seed": "",
        "max_tokens": "512",
        "sample_index": "0",
        "prompt_version": "seed003-v1",
        "concurrency": "2",
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(launch, data)
    batch = GenerationBatch.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "generation:batch_detail", args=[batch.pk]
    )
    assert batch.created_by == staff and batch.concurrency == 2
    batch.refresh_from_db()
    assert batch.finished_at is not None
    assert Simplification.objects.filter(origin="generation").count() == 2 * 5


def test_the_admin_form_shows_why_a_launch_is_refused(client, staff, study):
    data = {
        "study": study.pk,
        "systems": ["plain_bs"],
        "backend": "openai",
        "model_name": "",
        "temperature": "0.8",
        "max_rounds": "5",
        "max_tokens": "512",
        "sample_index": "0",
        "prompt_version": "seed003-v1",
    }
    response = client.post(reverse("admin:generation_generationbatch_launch"), data)
    assert response.status_code == 200
    assert "The openai backend needs a model name" in response.content.decode()
    assert not GenerationBatch.objects.exists()


def test_the_study_action_opens_the_launch_form_for_that_study(client, staff, study):
    response = client.post(
        reverse("admin:annotation_study_changelist"),
        {"action": "generate_simplifications", "_selected_action": [study.pk]},
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:generation_generationbatch_launch") + f"?study={study.pk}"
    # The study's other actions are still there.
    page = client.get(reverse("admin:annotation_study_changelist")).content.decode()
    assert "open_studies" in page and "generate_simplifications" in page


def test_admin_pages_for_batches_jobs_and_the_cache(client, staff, finished_batch):
    assert client.get(reverse("admin:generation_generationbatch_changelist")).status_code == 200
    add = client.get(reverse("admin:generation_generationbatch_add"))
    assert add.status_code == 302 and add["Location"] == reverse("admin:generation_generationbatch_launch")
    assert (
        client.get(reverse("admin:generation_generationbatch_change", args=[finished_batch.pk])).status_code
        == 200
    )
    job = finished_batch.jobs.get(source__key="s1")
    page = client.get(reverse("admin:generation_generationjob_change", args=[job.pk])).content.decode()
    sc = Simplification.objects.get(source__key="s1", system__key="plain_sc")
    assert reverse("admin:annotation_simplification_change", args=[sc.pk]) in page
    assert "<th>agent</th>" in page and "processor" in page
    assert client.get(reverse("admin:generation_llmcallcache_changelist")).status_code == 200
