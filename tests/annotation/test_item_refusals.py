"""The refusals of instruments.answers (a Django-free package) reach a participant in their
language: the flows word `InvalidAnswer.code` with gettext (annotation/item_questions.py), and a
Spanish participant's bad answer to an added count item is refused in Spanish on every flow that
shows an item's refusal — the radiologist page, the lay panels and the pairs flow — while the
English str() of the refusal stays for logs and commands."""

from __future__ import annotations

import copy
import gettext
import re

import pytest
from django.urls import reverse
from django.utils import translation

from annotation import participant_services
from annotation.instrument_services import study_instrument_save
from annotation.item_questions import _REFUSALS, item_refusal
from annotation.models import Participant, Study
from instruments.answers import REFUSALS, InvalidAnswer, item_value_validate
from instruments.schema import AppliesTo, Item, ItemKind
from instruments.validation import instrument_from_data
from surveys.rate_each_pair import selectors as design
from surveys.rate_each_pair.services import pairs_participants_invite
from tests.annotation import answers
from tests.annotation.factories import build_study, instrument_with
from tests.annotation.test_instrument_flows import at_panel_1
from tests.annotation.test_languages import MO
from tests.evaluation.instrument_studies import instrument_add
from tests.surveys.test_rate_each_pair_flow import ALL_KINDS

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
NEGATIVE_ES = "un recuento no puede ser negativo"
NOT_WHOLE_ES = "un recuento debe ser un número entero, no &#x27;muchos&#x27;"
ABOVE_ES = "como máximo 20"


def test_the_flows_word_every_refusal_of_the_package_and_english_is_unchanged():
    assert set(_REFUSALS) == set(REFUSALS)
    with translation.override("en"):
        assert {code: str(text) for code, text in _REFUSALS.items()} == REFUSALS
    with MO.open("rb") as handle:
        catalogue = gettext.GNUTranslations(handle)
    for code, english in REFUSALS.items():
        spanish = catalogue.gettext(english)
        assert spanish != english, code
        # The same parameters in both languages (a Spanish text that dropped one would raise).
        assert sorted(re.findall(r"%\((\w+)\)s", spanish)) == sorted(re.findall(r"%\((\w+)\)s", english)), (
            code
        )
    # str() stays the English message naming the item (logs, judges' parse errors).
    count = _findings("radiologist")
    with pytest.raises(InvalidAnswer) as refused:
        item_value_validate(count, "-3")
    assert str(refused.value) == "findings: a count cannot be negative"
    assert (refused.value.item_key, refused.value.code, refused.value.params) == (
        "findings",
        "negative_count",
        {},
    )
    with translation.override("es"):
        assert item_refusal(refused.value) == NEGATIVE_ES
        with pytest.raises(InvalidAnswer) as too_long:
            item_value_validate(
                Item(
                    key="why",
                    kind=ItemKind.FREE_TEXT,
                    applies_to=AppliesTo.SOURCE,
                    roles=("layperson",),
                    wording={"en": "Why?"},
                    max_length=3,
                ),
                "abcd",
            )
        assert item_refusal(too_long.value) == "como máximo 3 caracteres (tiene 4)"
    assert str(too_long.value) == "why: at most 3 characters (got 4)"


def _findings(role: str, **extra) -> Item:
    return Item(
        key="findings",
        kind=ItemKind.COUNT,
        applies_to=AppliesTo.SOURCE,
        roles=(role,),
        wording={
            "en": "How many findings does the sentence report?",
            "es": "¿Cuántos hallazgos describe la frase?",
        },
        required=False,
        max_count=20,
        **extra,
    )


def _spanish(study: Study, instrument) -> Study:
    study_instrument_save(study=study, instrument=instrument, actor=None)
    Study.objects.filter(pk=study.pk).update(language="es")
    study.refresh_from_db()
    return study


def _assert_spanish_refusals(client, url: str, field: str, data: dict | None = None) -> None:
    for value, message in (("-2", NEGATIVE_ES), ("muchos", NOT_WHOLE_ES), ("21", ABOVE_ES)):
        response = client.post(url, {**(data or {}), field: value}, **HTMX)
        page = response.content.decode()
        assert response.status_code == 400, page[:300]
        assert message in page, page[:500]
        assert "count" not in page and "must be" not in page  # no English reason
    assert not answers.item_answers().exists()


def test_the_radiologist_page_refuses_an_added_count_in_spanish(client):
    study = _spanish(
        build_study(slug="refusal-expert", n_sources=1, systems=("a", "b")),
        instrument_with("protocol_003_radiologist", _findings("radiologist")),
    )
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    client.get(reverse("surveys:entry", args=[participant.token]))
    client.post(reverse("surveys:expert-instructions", args=[participant.token]))
    item = participant.expert_items.order_by("position").first()
    url = reverse("surveys:expert-page", args=[participant.token, item.pk])
    _assert_spanish_refusals(client, url, "original-findings")


@pytest.mark.parametrize("panel", ["original", "preference"])
def test_the_lay_panels_refuse_an_added_count_in_spanish(client, panel):
    study = _spanish(
        build_study(slug=f"refusal-lay-{panel}", n_sources=1, systems=("a", "b")),
        instrument_with("protocol_003_layperson", _findings("layperson", phases=(panel,))),
    )
    _participant, item, url = at_panel_1(client, study)
    if panel == "preference":
        panel_1 = {"understanding": "Some parts of it", "confidence": "With low confidence"}
        client.post(url, {**panel_1, "severity_guess": "Mild", "continue": "1"})
        panel_2 = {**panel_1, "severity_guess": "Mild", "helpfulness": "I understand much better"}
        client.post(url.replace("/original/", "/assisted/"), {**panel_2, "continue": "1"})
        item.refresh_from_db()
        assert item.stage == "preference"
        url = url.replace("/original/", "/preference/")
    _assert_spanish_refusals(client, url, "findings", {"autosave": "1"})


def test_the_pairs_flow_refuses_a_count_in_spanish(client):
    study = build_study(slug="refusal-pairs", n_sources=1, systems=("a",))
    Study.objects.filter(pk=study.pk).update(language="es")
    # The pairs test's instrument of every kind, its count alone, offered in Spanish too.
    data = copy.deepcopy(ALL_KINDS)
    data |= {
        "languages": ["en", "es"],
        "translation_status": {"en": "source", "es": "unvalidated translation"},
    }
    data["title"]["es"] = "Pares del equipo"
    count = next(item for item in data["items"] if item["kind"] == "count")
    count |= {"title": {"en": "Omissions", "es": "Omisiones"}, "max_count": 20}
    count["wording"]["es"] = "¿Cuántos hallazgos faltan?"
    data["items"] = [count]
    instrument_add(study=study, instrument=instrument_from_data(data))
    nurse = pairs_participants_invite(study=study, rater_group="nurse", role="radiologist", count=1)[0]
    participant_services.participant_consent(participant=nurse, accepted=True)
    pair = design.participant_pairs(participant=nurse)[0]
    url = reverse("surveys:pairs-page", args=[nurse.token, pair.shown_text_id])
    _assert_spanish_refusals(client, url, "team_pairs.omissions")
    # Named by the title the page shows, in Spanish.
    refused = client.post(url, {"team_pairs.omissions": "-1"}).content.decode()
    assert f"Omisiones: {NEGATIVE_ES}" in refused


def test_a_tampered_field_is_refused_in_the_participants_language(client):
    """A field no page sends (a script's, a stale tab's) is refused in the study's language too."""
    study = build_study(slug="refusal-tampered", n_sources=1, systems=("a", "b"))
    Study.objects.filter(pk=study.pk).update(language="es")
    radiologist = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    client.get(reverse("surveys:entry", args=[radiologist.token]))
    client.post(reverse("surveys:expert-instructions", args=[radiologist.token]))
    item = radiologist.expert_items.order_by("position").first()
    url = reverse("surveys:expert-page", args=[radiologist.token, item.pk])
    for field, message in (
        ("bogus", "no es una pregunta de esta página"),
        ("original-correctness", "no es una pregunta sobre la frase original"),
        ("Z-correctness", "No hay ninguna simplificación Z en esta página"),
        ("A-colour", "no es un aspecto"),
    ):
        response = client.post(url, {field: "3"}, **HTMX)
        assert response.status_code == 400 and message in response.content.decode(), field

    _participant, _item, url = at_panel_1(client, study)
    response = client.post(url, {"helpfulness": "I understand much better", "autosave": "1"}, **HTMX)
    assert response.status_code == 400
    assert "Esta pregunta no se hace en el panel 1" in response.content.decode()
