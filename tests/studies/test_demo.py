"""The embedded demo: its study, logins and links, and that running it twice changes nothing."""

import re
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from annotation.models import ActivityEvent, Participant, Study
from annotation.selectors import study_counts
from config.celery_app import app as celery_app

pytestmark = pytest.mark.django_db


def run_demo() -> str:
    out = StringIO()
    call_command("demo", "--base-url", "http://testserver", stdout=out)
    return out.getvalue()


def test_demo_creates_an_open_study_logins_and_links():
    output = run_demo()
    study = Study.objects.get(slug="demo")
    counts = study_counts(study=study)
    assert study.status == Study.Status.OPEN
    assert 10 <= counts["sources"] <= 15
    assert counts["systems"] >= 3
    assert counts["simplifications"] == counts["sources"] * counts["systems"]
    assert counts["participants"] == {"radiologist": 1, "layperson": 4}
    assert all(s.reference_severity for s in study.sources.all())
    user = authenticate(username="researcher", password="radlay-demo")
    assert user is not None and user.is_staff
    assert study.researchers.filter(pk=user.pk).exists()
    # The researcher's entry is the dashboard's own login, not the admin.
    assert re.search(r"Researcher login: http://testserver/dashboard/login/ +user researcher", output)
    # The console is where a researcher goes next: this study's set-up page and a new study.
    assert "Study set-up:     http://testserver/console/demo/" in output
    assert "New study:        http://testserver/console/new/" in output
    # Created like a study made in the console: its Activity page starts with the creation.
    created = ActivityEvent.objects.get(study=study, verb="study.created")
    assert created.actor_label == "manage.py demo" and created.details == {"slug": "demo"}
    links = re.findall(r"http://testserver/s/([\w-]+)/", output)
    assert set(links) == set(Participant.objects.filter(study=study).values_list("token", flat=True))


def test_demo_is_idempotent():
    first = run_demo()
    second = run_demo()
    assert first == second
    assert Participant.objects.count() == 5
    assert Study.objects.count() == 1
    assert ActivityEvent.objects.filter(verb="study.created").count() == 1


def test_celery_declares_the_four_queues_and_plans_go_to_heavy():
    assert {q.name for q in celery_app.conf.task_queues} == {"default", "llm", "gpu", "heavy"}
    router = celery_app.amqp.router
    assert router.route({}, "evaluation.tasks.power_plan_run")["queue"].name == "heavy"
    assert router.route({}, "evaluation.tasks.analysis_snapshot_compute")["queue"].name == "default"


def test_every_queue_has_a_worker_in_the_compose_file():
    compose = (Path(__file__).resolve().parents[2] / "docker" / "compose.yml").read_text()
    consumed = {
        queue
        for found in re.findall(r"celery -A config worker -Q (\S+)", compose)
        for queue in found.split(",")
    }
    assert consumed == {q.name for q in celery_app.conf.task_queues}
    # The snapshots' queue and the plans' queue are not consumed by the same worker.
    assert not any(
        {"default", "heavy"} <= set(found.split(",")) for found in re.findall(r"-Q (\S+)", compose)
    )
    assert celery_app.conf.task_serializer == "json"
    assert celery_app.conf.accept_content == ["json"]


def test_training_tasks_get_a_longer_time_limit_than_the_default():
    from django.conf import settings

    annotations = celery_app.conf.task_annotations
    limit = annotations["ml.tasks.training_job_run_task"]["time_limit"]
    assert limit == settings.RADLAY_TRAINING.time_limit > settings.CELERY_TASK_TIME_LIMIT
