"""The admin: every annotation model is registered; answers are read-only; the returned action."""

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model

from annotation import models, participant_services
from annotation.models import Participant
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db

ANSWER_MODELS = [
    models.ItemAnswer,
    models.LayItem,
    models.ExpertItem,
    models.AttentionCheckResponse,
]


def test_every_model_is_registered():
    for model in [
        models.Study,
        models.Source,
        models.System,
        models.Simplification,
        models.SimplificationText,
        models.Participant,
        *ANSWER_MODELS,
        models.ConsentRefusal,
    ]:
        assert admin.site.is_registered(model), model


def test_answers_are_read_only(rf):
    user = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    request = rf.get("/")
    request.user = user
    for model in ANSWER_MODELS:
        model_admin = admin.site._registry[model]
        assert not model_admin.has_add_permission(request)
        assert not model_admin.has_change_permission(request)


def test_changelists_render(client):
    build_study(slug="adm", n_sources=2)
    study = models.Study.objects.get(slug="adm")
    participant_services.participant_create(study=study, role="radiologist")
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.org", "pw"))
    for model in [
        models.Study,
        models.Source,
        models.Simplification,
        models.Participant,
        models.SimplificationText,
    ]:
        url = f"/admin/annotation/{model._meta.model_name}/"
        assert client.get(url).status_code == 200, url


def test_mark_returned_action(client):
    study = build_study(slug="ret", n_sources=1)
    active = participant_services.participant_create(study=study, role="layperson")
    done = participant_services.participant_create(study=study, role="layperson")
    participant_services.participant_complete(participant=done)
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.org", "pw"))
    response = client.post(
        "/admin/annotation/participant/",
        {"action": "mark_returned", "_selected_action": [active.pk, done.pk]},
    )
    assert response.status_code == 302
    assert Participant.objects.get(pk=active.pk).returned_at is not None
    assert Participant.objects.get(pk=done.pk).returned_at is None
