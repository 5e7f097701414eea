"""The judge page, the run page (with its htmx progress fragment), the API, the CSV export, the
admin launch form and the `judge` command."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation.models import StudyMembership
from judging.models import JudgeRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(study):
    user = get_user_model().objects.create_user("ada", password="pw")
    study.researchers.add(user)
    return user


@pytest.fixture
def staff(study):
    user = get_user_model().objects.create_user("sam", password="pw", is_staff=True, is_superuser=True)
    study.researchers.add(user)
    return user


@pytest.fixture
def heuristic_run(study, launch):
    return launch(study=study, backend="glossary")


def _api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.mark.heavy
def test_the_judge_page_shows_the_agreement_and_the_dashboard_links_to_it(
    client, researcher, study, heuristic_run, settings
):
    settings.RADLAY_ANALYSIS_OPTIONS = {
        "n_resamples": 20,
        "correlation_resamples": 5,
        "metric_families": ["readability"],
        "correlation_metrics": ["fkgl"],
    }
    client.force_login(researcher)
    page = client.get(reverse("judging:study-judges", args=[study.slug]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "glossary heuristic (not an LLM)" in html
    assert "Judge–radiologist agreement" in html and "radiologist R1" in html
    assert "System ranking" in html and "Lay judge" in html and "laypeople" in html
    assert "the inter-rater ceiling needs at least two" in html
    dashboard = client.get(reverse("evaluation:study-detail", args=[study.slug]))
    assert reverse("judging:study-judges", args=[study.slug]).encode() in dashboard.content


def test_another_researchers_study_and_run_are_404(client, study, heuristic_run, other_researcher_client):
    assert other_researcher_client.get(reverse("judging:study-judges", args=[study.slug])).status_code == 404
    url = reverse("judging:run-detail", args=[study.slug, heuristic_run.pk])
    assert other_researcher_client.get(url).status_code == 404


@pytest.fixture
def other_researcher_client(client, db):
    client.force_login(get_user_model().objects.create_user("bob", password="pw"))
    return client


def test_the_run_page_and_its_htmx_progress_fragment(client, staff, study, heuristic_run):
    client.force_login(staff)
    url = reverse("judging:run-detail", args=[study.slug, heuristic_run.pk])
    page = client.get(url)
    assert page.status_code == 200
    assert "Heuristic judge." in page.content.decode()
    fragment = client.get(url, HTTP_HX_REQUEST="true")
    assert fragment.content.decode().lstrip().startswith('<section id="run-progress"')
    assert f"{heuristic_run.items.count()} of {heuristic_run.items.count()}</strong> items finished" in (
        fragment.content.decode()
    )


def test_a_viewer_cannot_stop_or_launch_and_a_non_staff_editor_can(client, researcher, study, heuristic_run):
    """One role rule for launching, cancelling, resuming and recomputing a run: an owner or editor
    of the study, staff or not (the console's launch page lets editors launch)."""
    StudyMembership.objects.filter(study=study, user=researcher).update(role="viewer")
    client.force_login(researcher)
    for name in ("run-cancel", "run-resume", "run-agreement"):
        response = client.post(reverse(f"judging:{name}", args=[study.slug, heuristic_run.pk]))
        assert response.status_code == 403, name
    api = _api(researcher)
    launch = lambda: api.post(  # noqa: E731
        f"/api/studies/{study.slug}/judges/", {"backend": "glossary"}, format="json"
    )
    assert launch().status_code == 403

    StudyMembership.objects.filter(study=study, user=researcher).update(role="editor")
    assert not researcher.is_staff
    detail = reverse("judging:run-detail", args=[study.slug, heuristic_run.pk])
    for name in ("run-resume", "run-agreement", "run-cancel"):
        response = client.post(reverse(f"judging:{name}", args=[study.slug, heuristic_run.pk]))
        assert response.status_code == 302 and response["Location"] == detail, name
    heuristic_run.refresh_from_db()
    assert heuristic_run.cancelled_at is not None
    assert launch().status_code == 201


def test_the_api_launches_lists_and_details_runs(staff, study, django_capture_on_commit_callbacks):
    api = _api(staff)
    with django_capture_on_commit_callbacks(execute=True):
        created = api.post(
            f"/api/studies/{study.slug}/judges/",
            {"backend": "glossary", "instruments": ["radiologist"], "samples": 1},
            format="json",
        )
    assert created.status_code == 201, created.content
    run_id = created.json()["id"]
    assert created.json()["is_heuristic"] is True
    listed = api.get(f"/api/studies/{study.slug}/judges/").json()
    assert [r["id"] for r in listed] == [run_id]
    detail = api.get(f"/api/studies/{study.slug}/judges/{run_id}/").json()
    assert detail["progress"]["succeeded"] == detail["progress"]["total"]
    assert {r["field"] for r in detail["agreement"]["per_field"]} >= {"correctness", "severity"}
    assert detail["summary"]["against"] == "the radiologist"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"backend": "gpt"}, "backend"),
        ({"backend": "openai"}, "model_name"),
        ({"backend": "glossary", "samples": 0}, "samples"),
        # Past int4 the concurrency was an IntegrityError (a 500), or stored wrapped.
        ({"backend": "glossary", "concurrency": 2**31}, "concurrency"),
        ({"backend": "glossary", "concurrency": 99_999_999_999}, "concurrency"),
        ({"backend": "glossary", "max_tokens": 2**31}, "max_tokens"),
        ({"backend": "glossary", "seed": 2**64}, "seed"),
    ],
)
def test_a_bad_launch_is_a_400_naming_the_field(staff, study, body, field):
    response = _api(staff).post(f"/api/studies/{study.slug}/judges/", body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not JudgeRun.objects.exists()


def test_the_judge_export_is_its_own_file_and_the_human_export_has_no_judge(
    client, researcher, study, heuristic_run
):
    client.force_login(researcher)
    response = client.get(reverse("judging:answers-csv", args=[study.slug]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == heuristic_run.items.count()
    assert {r["judge"] for r in rows} == {heuristic_run.label}
    assert {r["is_heuristic"] for r in rows} == {"True"}
    text_row = next(r for r in rows if r["task"] == "radiologist_text")
    assert 1 <= float(text_row["correctness"]) <= 5 and text_row["systems"]
    human = client.get(reverse("evaluation:study-export", args=[study.slug, "csv"]))
    human_rows = list(csv.DictReader(io.StringIO(b"".join(human.streaming_content).decode())))
    assert human_rows and {r["participant"] for r in human_rows} == {"R1", "L1"}
    assert {r["role"] for r in human_rows} == {"radiologist", "layperson"}
    assert not any(heuristic_run.label in value for r in human_rows for value in r.values())


def test_the_admin_launch_form_and_the_study_action(client, staff, study, django_capture_on_commit_callbacks):
    client.force_login(staff)
    url = reverse("admin:judging_judgerun_launch")
    assert client.get(url + f"?study={study.pk}").status_code == 200
    bad = client.post(
        url,
        {
            "study": study.pk,
            "backend": "openai",
            "model_name": "",
            "instruments": ["lay"],
            "samples": 1,
            "prompt_version": "judge-v1",
        },
    )
    assert bad.status_code == 200 and "needs a model name" in bad.content.decode()
    too_many = client.post(
        url,
        {
            "study": study.pk,
            "backend": "glossary",
            "instruments": ["lay"],
            "samples": 1,
            "prompt_version": "judge-v1",
            "concurrency": 4_294_967_304,
        },
    )
    assert too_many.status_code == 200
    errors = too_many.context["form"].errors
    assert errors["concurrency"] == ["Ensure this value is less than or equal to 1000."]
    assert not JudgeRun.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            url,
            {
                "study": study.pk,
                "backend": "glossary",
                "instruments": ["lay"],
                "samples": 1,
                "max_tokens": 64,
                "prompt_version": "judge-v1",
            },
        )
    run = JudgeRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "judging:run-detail", args=[study.slug, run.pk]
    )
    assert set(run.items.values_list("task", flat=True)) == {"lay_original", "lay_assisted"}
    action = client.post(
        reverse("admin:annotation_study_changelist"),
        {"action": "judge_study", "_selected_action": [study.pk]},
    )
    assert action.status_code == 302 and action["Location"].endswith(f"launch/?study={study.pk}")


@pytest.mark.django_db(transaction=True)
def test_the_judge_command_runs_and_prints_the_agreement(study):
    # Committed transactions: the command sends the items after its commit and waits for them.
    out = io.StringIO()
    call_command("judge", "--study", study.slug, "--backend", "glossary", "--wait", "--poll", "0", stdout=out)
    text = out.getvalue()
    assert "glossary heuristic (not an LLM)" in text
    assert "correctness" in text and "vs radiologist R1" in text
    assert "lay judge severity accuracy" in text
    with pytest.raises(CommandError, match="no study"):
        call_command("judge", "--study", "nope", "--backend", "glossary", stdout=io.StringIO())
    with pytest.raises(CommandError, match="model_name"):
        call_command("judge", "--study", study.slug, "--backend", "openai", stdout=io.StringIO())


def test_the_judge_endpoints_are_in_the_schema_without_warnings():
    from django.urls import include, path
    from drf_spectacular.drainage import GENERATOR_STATS
    from drf_spectacular.generators import SchemaGenerator

    GENERATOR_STATS.reset()
    with GENERATOR_STATS.silence():
        schema = SchemaGenerator(patterns=[path("api/", include("judging.api_urls"))]).get_schema(public=True)
    assert not GENERATOR_STATS, dict(GENERATOR_STATS._warn_cache)
    assert "/api/studies/{slug}/judges/{run_id}/" in schema["paths"]
