"""The autosave answers rendered once and reused (surveys/survey_fragments.py) are, in every state
of a page and in every language, what rendering the template afresh for that request gives."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string
from django.test import override_settings
from django.urls import reverse
from django.utils import translation

from annotation import participant_services
from annotation.models import ExpertItem, LayItem, Participant
from surveys import survey_fragments
from surveys.radiologist import pages
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture(autouse=True)
def nothing_kept():
    survey_fragments._kept.clear()
    yield
    survey_fragments._kept.clear()


def fresh(template: str, context: dict, request, language: str) -> str:
    with translation.override(language):
        return render_to_string(template, context, request=request)


@pytest.mark.parametrize("language", ["en", "es"])
def test_every_expert_autosave_answer_is_the_templates_rendering(client, language):
    study = build_study(n_sources=2)
    study.language = language
    study.save()
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    client.post(reverse("surveys:expert-instructions", args=[participant.token]))
    item = ExpertItem.objects.filter(participant=participant).order_by("position").first()
    url = reverse("surveys:expert-page", args=[participant.token, item.pk])
    fields = [cell.field for row in pages.expert_page_get(item=item).texts for cell in row.aspects]
    fields += ["original-severity", "original-simplicity"]
    # Every answer of the page in turn (each state once), then the same answers again (each state's
    # kept fragment reused for another save): each answer must be the template's for that state.
    for field in [*fields, *fields]:
        value = "Moderate" if field == "original-severity" else "3"
        response = client.post(url, {field: value}, **HTMX)
        assert response.status_code == 200
        html = response.content.decode()
        if 'id="progress"' in html:
            continue  # the completing save: rendered with its progress, never kept
        page = pages.expert_page_get(item=ExpertItem.objects.get(pk=item.pk))
        expected = fresh("surveys/radiologist/_saved.html", {"page": page}, response.wsgi_request, language)
        assert html == expected, field
    assert len(survey_fragments._kept) == len(
        fields
    )  # one per state of the page (less the completing one) + complete


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_lay_autosave_answer_is_the_templates_rendering(client, language):
    study = build_study(n_sources=1)
    study.language = language
    study.save()
    participant = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    participant_services.participant_consent(participant=participant, accepted=True)
    client.post(reverse("surveys:lay-instructions", kwargs={"token": participant.token}))
    item = LayItem.objects.filter(participant=participant).order_by("position").first()
    url = reverse(
        "surveys:lay-panel", kwargs={"token": participant.token, "item_id": item.pk, "panel": "original"}
    )
    for answer in ("Most of it", "Completely"):
        response = client.post(url, {"understanding": answer, "autosave": "1"}, **HTMX)
        assert response.status_code == 200
        expected = fresh("surveys/lay/_saved.html", {}, response.wsgi_request, language)
        assert response.content.decode() == expected
    assert ("Guardado" in expected) == (language == "es")


def test_nothing_is_kept_while_templates_may_change():
    with override_settings(DEBUG=True):
        survey_fragments.fragment_html("surveys/lay/_saved.html", {}, key=())
    assert not survey_fragments._kept
    survey_fragments.fragment_html("surveys/lay/_saved.html", {}, key=())
    assert len(survey_fragments._kept) == 1
