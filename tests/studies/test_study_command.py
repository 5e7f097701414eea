"""Opening and closing a study from the admin and from `manage.py study`: a confirmation message,
the same checks, nothing changed when it cannot be opened."""

import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Study
from studies.study_services import study_close, study_open
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("study", *args, stdout=out)
    return out.getvalue()


def test_open_close_status_from_the_command_line():
    study = build_study(slug="cmd", n_sources=2, status=Study.Status.DRAFT)
    assert "is now open" in run("open", "cmd")
    assert Study.objects.get(pk=study.pk).status == Study.Status.OPEN
    assert "already open; nothing changed" in run("open", "cmd")
    status = json.loads(run("status", "cmd"))
    assert status["study"] == "cmd" and status["status"] == "open"
    assert "is now closed" in run("close", "cmd")
    assert Study.objects.get(pk=study.pk).status == Study.Status.CLOSED


def test_unknown_study_is_an_error():
    with pytest.raises(CommandError, match="No study with slug 'nope'"):
        run("open", "nope")


def test_a_study_without_sources_or_with_bad_settings_is_not_opened():
    empty = Study.objects.create(slug="empty", title="Empty")
    with pytest.raises(CommandError, match="no sources yet"):
        run("open", "empty")
    assert Study.objects.get(pk=empty.pk).status == Study.Status.DRAFT
    bad = build_study(slug="bad-q", n_sources=1, status=Study.Status.DRAFT)
    bad.background_questions = [{"key": "q", "question": "Q?", "options": "Yes,No"}]
    bad.save()
    with pytest.raises(CommandError, match="not the text 'Yes,No'"):
        run("open", "bad-q")
    assert Study.objects.get(pk=bad.pk).status == Study.Status.DRAFT


def test_services_report_whether_anything_changed():
    study = build_study(slug="svc", n_sources=1, status=Study.Status.DRAFT)
    assert study_open(study=study) is True and study_open(study=study) is False
    assert study_close(study=study) is True and study_close(study=study) is False


def test_admin_actions_confirm(client):
    draft = build_study(slug="a-draft", n_sources=1, status=Study.Status.DRAFT)
    empty = Study.objects.create(slug="a-empty", title="Empty")
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.org", "pw"))
    response = client.post(
        reverse("admin:annotation_study_changelist"),
        {"action": "open_studies", "_selected_action": [draft.pk, empty.pk]},
    )
    shown = [str(m) for m in get_messages(response.wsgi_request)]
    assert "Now open: a-draft." in shown
    assert any("'a-empty' cannot be opened" in m for m in shown)
    assert Study.objects.get(pk=empty.pk).status == Study.Status.DRAFT
    response = client.post(
        reverse("admin:annotation_study_changelist"),
        {"action": "close_studies", "_selected_action": [draft.pk]},
    )
    assert "Now closed: a-draft." in [str(m) for m in get_messages(response.wsgi_request)]
