"""The survey pages show the text the data policy allows, read with the page's own query."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation import participant_services
from annotation.models import ExpertItem, Participant
from privacy.services import originals_for_radiologists_set
from studies.source_services import source_upsert
from studies.team_services import study_member_add
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db

REPORT = "Patient: Amaka Okafor, MRN 00483921. Mild atelectasis at the left base. Read by Dr. Lindqvist."


def _radiologist_pages(client, study):
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    client.get(reverse("surveys:entry", args=[participant.token]))
    client.post(reverse("surveys:expert-instructions", args=[participant.token]))
    items = ExpertItem.objects.filter(participant=participant).select_related("source")
    return [
        (item.source.key, reverse("surveys:expert-page", args=[participant.token, item.pk])) for item in items
    ]


def test_a_radiologist_sees_the_deidentified_report_unless_an_owner_chose_originals(client):
    study = build_study(slug="privpages", n_sources=2)
    key = study.sources.order_by("position").first().key
    source_upsert(study=study, key=key, text=REPORT)
    owner = get_user_model().objects.create_user("owner", password="pw")
    study_member_add(study=study, user=owner, role="owner", actor="test")
    (url,) = [url for source_key, url in _radiologist_pages(client, study) if source_key == key]

    html = client.get(url).content.decode()
    assert "Okafor" not in html and "00483921" not in html
    assert "Mild atelectasis at the left base" in html and "[NAME]" in html

    originals_for_radiologists_set(study=study, show=True, reason="our own radiologists", actor=owner)
    html = client.get(url).content.decode()
    assert "Amaka Okafor" in html and "00483921" in html
