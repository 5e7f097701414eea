"""A Spanish study's pairwise participant: consent, a comparison
and the done page in Spanish, the instrument's Spanish wording from the preset, and the language
recorded on the participant and on each answer."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.urls import reverse

from annotation import participant_services
from annotation.models import Participant, Study
from surveys.compare_two.services import pairwise_instrument_attach
from tests.annotation import answers as typed_answers
from tests.annotation.factories import build_study

PRESET = Path(__file__).resolve().parents[3] / "instruments" / "presets" / "pairwise_clinical.yaml"


@pytest.fixture
def spanish_study(db) -> Study:
    study = build_study(slug="comparar", n_sources=2, systems=("a", "b", "c"))
    study.language = "es"
    study.full_clean()
    study.save()
    pairwise_instrument_attach(study=study)
    return study


def test_a_spanish_pairwise_participant_sees_spanish_throughout_and_it_is_recorded(spanish_study, client):
    # The YAML read directly: an independent reading of the preset's Spanish.
    preset = yaml.safe_load(PRESET.read_text(encoding="utf-8"))
    assert preset["translation_status"]["es"] == "unvalidated translation"
    preference = next(item for item in preset["items"] if item["key"] == "preference")
    reason = next(item for item in preset["items"] if item["key"] == "reason")

    person = participant_services.participant_create(study=spanish_study, role=Participant.Role.LAYPERSON)
    start = client.get(reverse("surveys:entry", args=[person.token]))
    consent_url = client.get(start.url).url
    consent = client.get(consent_url)
    html = consent.content.decode()
    assert consent.status_code == 200 and '<html lang="es">' in html
    assert "Información y consentimiento" in html and "Acepto, continuar" in html
    assert "Le invitamos a participar" in html
    assert preset["description"]["es"] in html
    assert "I agree" not in html and "Information and consent" not in html

    response = client.post(consent_url, {"choice": "accept"})
    task_url = client.get(response.url).url
    page = client.get(task_url)
    html = page.content.decode()
    assert page.status_code == 200 and '<html lang="es">' in html
    assert "Comparación 1 de 2" in html and "El original" in html and "Guardar y continuar" in html
    assert preference["wording"]["es"] in html and reason["wording"]["es"] in html
    for option in preference["options"]:
        assert option["label"]["es"] in html and option["label"]["en"] not in html
    assert "Which version" not in html and "Save and continue" not in html

    bad = client.post(task_url, {"choice": "mejor"})
    assert bad.status_code == 422 and "Elija una de las respuestas." in bad.content.decode()

    for _ in range(2):
        next_page = client.get(reverse("surveys:pairwise-start", args=[person.token])).url
        assert client.post(next_page, {"choice": "left", "reason": "más claro"}).status_code == 302
    done_url = client.get(reverse("surveys:pairwise-start", args=[person.token])).url
    done = client.get(done_url)
    html = done.content.decode()
    assert done_url.endswith("/done/") and '<html lang="es">' in html
    assert "Gracias: sus comparaciones están guardadas" in html and "Comparación 2" in html
    assert "Thank you" not in html

    assert Participant.objects.get(pk=person.pk).language == "es"
    answers = typed_answers.item_answers().filter(participant=person)
    assert answers.count() == 2 and set(answers.values_list("language", flat=True)) == {"es"}


def test_declining_in_spanish(spanish_study, client):
    person = participant_services.participant_create(study=spanish_study, role=Participant.Role.RADIOLOGIST)
    declined = client.post(reverse("surveys:pairwise-consent", args=[person.token]), {"choice": "decline"})
    html = declined.content.decode()
    assert '<html lang="es">' in html and "Ha decidido no participar" in html
    person.refresh_from_db()
    assert person.declined_at is not None
