"""Items a study adds to the protocol's instruments, through the survey views: the radiologist page
asks an added item about each simplification and one about the original; the lay panel 2 asks an
added free-text item. They render in the study's language, autosave, are refused by name when bad,
are stored in ItemAnswer with their code as score, and count for completion; the protocol's own
questions and the queries of a protocol page stay as they were."""

from __future__ import annotations

import dataclasses

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation import participant_services
from annotation.instrument_services import study_instrument_save
from annotation.models import ExpertItem, LayItem, Participant, Study
from instruments.schema import AppliesTo, Item, ItemKind, Option, Point, Scale
from surveys.radiologist import pages
from tests.annotation import answers as typed_answers
from tests.annotation.factories import ACTIONABILITY, WHY_BEST, build_study, instrument_with

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}

FINDINGS = Item(
    key="findings",
    kind=ItemKind.COUNT,
    applies_to=AppliesTo.SOURCE,
    roles=("radiologist",),
    wording={
        "en": "How many findings does the sentence report?",
        "es": "¿Cuántos hallazgos describe la frase?",
    },
    required=False,
    max_count=20,
)


def expert_study(slug: str, *items: Item, language: str = "en") -> Study:
    study = build_study(slug=slug, n_sources=2, systems=("a", "b"))
    study_instrument_save(
        study=study, instrument=instrument_with("protocol_003_radiologist", *items), actor=None
    )
    Study.objects.filter(pk=study.pk).update(language=language)
    study.refresh_from_db()
    return study


def started(client, participant) -> list[ExpertItem]:
    client.get(reverse("surveys:entry", args=[participant.token]))
    client.post(reverse("surveys:expert-instructions", args=[participant.token]))
    return list(ExpertItem.objects.filter(participant=participant).order_by("position"))


def page_url(participant, item) -> str:
    return reverse("surveys:expert-page", args=[participant.token, item.pk])


def test_the_radiologist_page_asks_added_items_where_they_apply_and_stores_them(client):
    study = expert_study("added-expert", ACTIONABILITY, FINDINGS)
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    item = started(client, participant)[0]
    html = client.get(page_url(participant, item)).content.decode()
    assert html.count("It tells the patient what to do next.") == 2  # one per simplification (A, B)
    assert 'name="A-actionability" value="3"' in html and 'name="B-actionability"' in html
    assert 'name="original-findings"' in html and "(optional)" in html
    # In each card the added item comes after the rubric and before the justification.
    card = html[html.index('data-label="A"') :]
    assert card.index("Simplicity") < card.index("Actionability") < card.index('name="A-comment"')
    page = pages.expert_page_get(item=item)
    assert {"A-actionability", "B-actionability"} <= set(page.missing)
    assert "original-findings" not in page.missing  # optional

    response = client.post(page_url(participant, item), {"A-actionability": "2", "elapsed_ms": "700"}, **HTMX)
    assert response.status_code == 200 and "Saved" in response.content.decode()
    (answer,) = typed_answers.item_answers().filter(participant=participant)
    assert (answer.item_key, answer.value, answer.score, answer.language) == ("actionability", 2, 2.0, "en")
    assert answer.shown_text_id == item.text_order[0] and answer.time_spent_ms == 700
    response = client.post(page_url(participant, item), {"original-findings": "3"}, **HTMX)
    assert response.status_code == 200
    assert typed_answers.item_answers().get(item_key="findings").shown_text_id is None

    # After a reload the answers are there.
    html = client.get(page_url(participant, item)).content.decode()
    assert 'name="A-actionability" value="2" data-key="2" checked' in html
    assert 'name="original-findings" min="0" step="1" inputmode="numeric" max="20" value="3"' in html


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("A-actionability", "9", "actionability: 9 is not a point of the scale"),
        ("original-findings", "-2", "findings: a count cannot be negative"),
        ("original-findings", "many", "findings: a count must be a whole number"),
    ],
)
def test_a_bad_value_of_an_added_item_is_refused_by_name_and_saves_nothing(client, field, value, message):
    study = expert_study(f"bad-{field.lower()}-{value}".replace("-", ""), ACTIONABILITY, FINDINGS)
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    item = started(client, participant)[0]
    response = client.post(page_url(participant, item), {field: value, "A-correctness": "4"}, **HTMX)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not typed_answers.item_answers().exists()
    assert not typed_answers.ratings(participant=participant)  # all or nothing


def test_a_required_added_item_holds_the_page_open_until_answered():
    study = expert_study("required-added", ACTIONABILITY)
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    item = started_directly(participant)
    data = {"original-severity": "Mild", "original-simplicity": "3"}
    data |= {
        f"{label}-{aspect}": "4"
        for label in "AB"
        for aspect in ("correctness", "completeness", "hallucination", "structure", "simplicity")
    }
    page = pages.expert_page_save(participant=participant, item=item, data=data)
    assert page.missing == ["A-actionability", "B-actionability"] and not page.complete
    page = pages.expert_page_save(
        participant=participant, item=item, data={"A-actionability": "1", "B-actionability": "3"}
    )
    assert page.complete
    item.refresh_from_db()
    assert item.completed_at is not None


def started_directly(participant: Participant) -> ExpertItem:
    from surveys.radiologist import assignment

    participant_services.participant_touch(participant=participant)
    item = assignment.expert_items_ensure(participant=participant)[0]
    return ExpertItem.objects.select_related("participant__study", "source").get(pk=item.pk)


def test_the_page_is_worded_in_the_studys_language():
    study = expert_study("spanish-expert", ACTIONABILITY, language="es")
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    page = pages.expert_page_get(item=started_directly(participant))
    assert page.wording is not None
    assert (
        page.wording.severity_question
        == "¿Cuál es la gravedad de la afección médica descrita en la frase original?"
    )
    assert [a.title for a in page.wording.aspects][0] == "Corrección"
    assert page.texts[0].added[0].wording == "Le dice al paciente qué hacer después."
    # What the form posts and the column stores does not change with the language.
    assert [(level.name, level.label) for level in page.wording.severity_levels][0] == ("Critical", "Crítico")


# Pinned from measured counts: a protocol study's page costs what it cost before instruments were
# data (tests/surveys/test_radiologist_scale.py pins those); an added item costs one read of its
# answers, and saving one costs its upsert.
PROTOCOL_GET, PROTOCOL_AUTOSAVE = 4, 5  # the autosave: test_radiologist_scale.py names its five
# The added items' answers come with the page's own reads of its answers: no query more.
ADDED_GET, ADDED_AUTOSAVE = PROTOCOL_GET, PROTOCOL_AUTOSAVE


def _count(client, method: str, url: str, data=None) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = getattr(client, method)(url, data, **HTMX) if data else client.get(url)
    assert response.status_code == 200
    return len(captured.captured_queries)


def test_the_queries_of_a_survey_request_are_pinned(client):
    plain = build_study(slug="plain-queries", n_sources=2, systems=("a", "b"))
    participant = participant_services.participant_create(study=plain, role=Participant.Role.RADIOLOGIST)
    item = started(client, participant)[0]
    url = page_url(participant, item)
    client.get(url)  # a process reads a study's instruments once per version (then cached)
    assert _count(client, "get", url) == PROTOCOL_GET
    assert _count(client, "post", url, {"A-correctness": "3"}) == PROTOCOL_AUTOSAVE

    study = expert_study("added-queries", ACTIONABILITY)
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    item = started(client, participant)[0]
    url = page_url(participant, item)
    assert _count(client, "get", url) == ADDED_GET + 1  # the first read of this version's instrument
    assert _count(client, "get", url) == ADDED_GET
    assert _count(client, "post", url, {"A-correctness": "3"}) == ADDED_AUTOSAVE


# --- The lay flow: an added free-text item and an added scale on panel 2 ---------------------------------

STILL_UNCLEAR = Item(
    key="still_unclear",
    kind=ItemKind.FREE_TEXT,
    applies_to=AppliesTo.SIMPLIFICATION,
    roles=("layperson",),
    phases=("assisted",),
    required=False,
    max_length=40,
    wording={
        "en": "Which words are still unclear to you?",
        "es": "¿Qué palabras le siguen resultando confusas?",
    },
)
TRUST = Item(
    key="trust",
    kind=ItemKind.ORDINAL,
    applies_to=AppliesTo.SIMPLIFICATION,
    roles=("layperson",),
    phases=("assisted",),
    number="Q4b",
    wording={"en": "Would you trust this explanation?", "es": "¿Confiaría en esta explicación?"},
    scale=Scale(
        points=(Point(code=0, label={"en": "No", "es": "No"}), Point(code=1, label={"en": "Yes", "es": "Sí"}))
    ),
)
PANEL1 = {"understanding": "Some parts of it", "confidence": "With low confidence", "severity_guess": "Mild"}
PANEL2 = {
    "understanding": "Most of it",
    "confidence": "With high confidence",
    "severity_guess": "Moderate",
    "helpfulness": "I understand much better",
}


def lay_study(slug: str) -> Study:
    study = build_study(slug=slug, n_sources=1, systems=("a", "b"))
    study_instrument_save(
        study=study, instrument=instrument_with("protocol_003_layperson", STILL_UNCLEAR, TRUST), actor=None
    )
    study.refresh_from_db()
    return study


def at_panel_1(client, study) -> tuple[Participant, LayItem, str]:
    """A layperson who consented and read the instructions, with panel 1's address of their one item."""
    participant = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    participant_services.participant_consent(participant=participant, accepted=True)
    client.post(reverse("surveys:lay-instructions", kwargs={"token": participant.token}))
    item = participant.lay_items.get()
    url = reverse(
        "surveys:lay-panel", kwargs={"token": participant.token, "item_id": item.pk, "panel": "original"}
    )
    return participant, item, url


def at_panel_2(client, study):
    participant, item, url = at_panel_1(client, study)
    assert "Which words are still unclear" not in client.get(url).content.decode()  # panel 2's, not panel 1's
    assert client.post(url, {**PANEL1, "continue": "1"}).status_code == 302
    return participant, item, url.replace("/original/", "/assisted/")


def test_the_lay_panel_2_asks_added_items_after_the_protocols_and_stores_them(client):
    study = lay_study("lay-added")
    participant, item, url = at_panel_2(client, study)
    page = client.get(url).content.decode()
    # In the instrument's order, after the protocol's questions of the panel.
    assert (
        page.index("Has the simplified sentence improved")
        < page.index("Which words are still unclear to you?")
        < page.index("Q4b:")
    )

    assert '<textarea id="f-still_unclear" name="still_unclear"' in page and 'maxlength="40"' in page
    # The lock of panel 1 is untouched: it is shown read-only and refuses changes.
    assert "(locked)" in page
    response = client.post(
        url, {"still_unclear": "  effusion  ", "trust": "1", "autosave": "1", "elapsed_ms": "400"}, **HTMX
    )
    assert response.status_code == 200
    answers = {a.item_key: a for a in typed_answers.item_answers().filter(participant=participant)}
    assert answers["still_unclear"].value == "effusion" and answers["still_unclear"].score is None
    assert answers["trust"].value == 1 and answers["trust"].score == 1.0
    assert {a.shown_text_id for a in answers.values()} == {item.shown_text_id}
    page = client.get(url).content.decode()
    assert ">effusion</textarea>" in page and 'name="trust" value="1" checked' in page
    # Emptying the text clears its answer; the scale answer stays.
    client.post(url, {"still_unclear": "", "autosave": "1"}, **HTMX)
    assert set(typed_answers.item_answers().values_list("item_key", flat=True)) == {"trust"}
    response = client.post(url, {**PANEL2, "continue": "1"})
    assert response.status_code == 302


def test_a_required_added_lay_item_holds_the_panel_and_bad_values_are_refused_by_name(client):
    study = lay_study("lay-added-bad")
    participant, item, url = at_panel_2(client, study)
    response = client.post(url, {**PANEL2, "continue": "1"})
    assert response.status_code == 400 and "Please answer this question." in response.content.decode()
    item.refresh_from_db()
    assert item.stage == "assisted"
    bad = {**PANEL2, "understanding": "Completely", "still_unclear": "x" * 41, "trust": "1", "autosave": "1"}
    response = client.post(url, bad, **HTMX)
    assert response.status_code == 400
    assert "still_unclear: at most 40 characters (got 41)" in response.content.decode()
    response = client.post(url, {"trust": "7", "autosave": "1"}, **HTMX)
    assert response.status_code == 400 and "trust: 7 is not a point of the scale" in response.content.decode()
    assert not typed_answers.item_answers().exists()
    # All or nothing: the panel's answer beside the bad one was not changed either.
    assert typed_answers.lay_answer(item, "assisted").understanding == "Most of it"
    assert client.post(url, {**PANEL2, "trust": "0", "continue": "1"}).status_code == 302


# --- The lay flow: added items on panel 3, and panel 1's added items repeated in panel 2 ---------------

STEPS = Item(
    key="steps",
    kind=ItemKind.COUNT,
    applies_to=AppliesTo.SOURCE,
    roles=("layperson",),
    phases=("original",),
    number="Q3b",
    wording={
        "en": "How many findings do you see in the sentence?",
        "es": "¿Cuántos hallazgos ve en la frase?",
    },
    required=False,
)
WORRIED = Item(
    key="worried",
    kind=ItemKind.ORDINAL,
    applies_to=AppliesTo.SOURCE,
    roles=("layperson",),
    phases=("original",),
    wording={"en": "Does the sentence worry you?", "es": "¿Le preocupa la frase?"},
    required=False,
    scale=Scale(
        points=(
            Point(code=0, label={"en": "Not worried", "es": "Nada"}),
            Point(code=1, label={"en": "Worried", "es": "Preocupado"}),
        )
    ),
)
RECOMMEND = Item(
    key="recommend",
    kind=ItemKind.SINGLE_CHOICE,
    applies_to=AppliesTo.SOURCE,
    roles=("layperson",),
    phases=("preference",),
    number="Q7",
    wording={"en": "Would you show one of them to a relative?", "es": "¿Enseñaría una a un familiar?"},
    options=(
        Option(key="yes", label={"en": "Yes", "es": "Sí"}),
        Option(key="no", label={"en": "No", "es": "No"}),
    ),
)


def three_panel_study(slug: str) -> Study:
    study = build_study(slug=slug, n_sources=1, systems=("a", "b"))
    study_instrument_save(
        study=study,
        instrument=instrument_with("protocol_003_layperson", STEPS, WORRIED, WHY_BEST, RECOMMEND),
        actor=None,
    )
    study.refresh_from_db()
    return study


def test_panel_2_repeats_panel_1s_added_answers_read_only_and_panel_1_stays_locked(client):
    study = three_panel_study("lay-repeat")
    participant, item, url = at_panel_1(client, study)
    page = client.get(url).content.decode()
    assert 'name="steps"' in page and 'name="worried"' in page and 'name="why_best"' not in page
    response = client.post(url, {**PANEL1, "steps": "2", "worried": "1", "continue": "1"})
    assert response.status_code == 302
    assisted = url.replace("/original/", "/assisted/")
    page = client.get(assisted).content.decode()
    locked = page[page.index('<details class="card locked">') : page.index("</details>")]
    # After the protocol's three, in the instrument's order: the count as given, the scale by its label.
    assert locked.index("Q3:") < locked.index(
        "<dt>Q3b: How many findings do you see in the sentence?</dt><dd>2</dd>"
    )
    assert "<dt>Does the sentence worry you?</dt><dd>Worried</dd>" in locked
    assert 'name="steps"' not in page and 'name="worried"' not in page  # read-only, not asked again
    # Panel 1 is locked: its added items cannot change from panel 2 on.
    response = client.post(url, {"steps": "5", "autosave": "1"}, **HTMX)
    assert response.status_code == 409
    assert typed_answers.item_answers().get(participant=participant, item_key="steps").value == 2


def test_the_lay_panel_3_asks_added_items_after_q5_q6_and_stores_them(client):
    study = three_panel_study("lay-panel-3")
    participant, item, url = at_panel_1(client, study)
    client.post(url, {**PANEL1, "continue": "1"})
    assert (
        client.post(url.replace("/original/", "/assisted/"), {**PANEL2, "continue": "1"}).status_code == 302
    )
    url = url.replace("/original/", "/preference/")
    page = client.get(url).content.decode()
    assert page.index("Q6:") < page.index("What made your favourite better?") < page.index("Q7:")
    assert '<textarea id="f-why_best" name="why_best" rows="2" maxlength="30"' in page
    assert 'name="recommend" value="yes"' in page
    texts = item.preference_order
    # A bad value is refused by name, and nothing of that save is kept (the ticks beside it neither).
    bad = {"fields": ["most", "least"], "most": [texts[0]], "why_best": "x" * 31, "autosave": "1"}
    response = client.post(url, bad, **HTMX)
    assert (
        response.status_code == 400
        and "why_best: at most 30 characters (got 31)" in response.content.decode()
    )
    assert not typed_answers.item_answers().exists()  # neither the added item's answer nor the ticks
    # Autosaved one control at a time, as the page's script sends them.
    assert client.post(url, {"why_best": " clearer ", "autosave": "1"}, **HTMX).status_code == 200
    assert client.post(url, {"recommend": "yes", "autosave": "1"}, **HTMX).status_code == 200
    answers = {a.item_key: a for a in typed_answers.item_answers().filter(participant=participant)}
    assert answers["why_best"].value == "clearer" and answers["recommend"].value == "yes"
    assert {a.shown_text_id for a in answers.values()} == {None}  # about the sentence
    page = client.get(url).content.decode()
    assert ">clearer</textarea>" in page and 'name="recommend" value="yes" checked' in page
    # A required added item holds the panel; answered, the sentence is done.
    client.post(url, {"why_best": "", "autosave": "1"}, **HTMX)
    choice = {"fields": ["most", "least"], "most": [texts[0]], "least": [texts[1]]}
    response = client.post(url, {**choice, "continue": "1"})
    assert response.status_code == 400 and "Please answer this question." in response.content.decode()
    item.refresh_from_db()
    assert item.stage == "preference"
    response = client.post(url, {**choice, "why_best": "shorter", "continue": "1"})
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.stage == "done"
    # A repeated submit changes nothing and is answered as the first one was; a change is refused.
    assert client.post(url, {**choice, "why_best": "shorter", "continue": "1"}).status_code == 302
    assert client.post(url, {"why_best": "other", "autosave": "1"}, **HTMX).status_code == 409


def test_a_panel_3_item_must_be_about_the_sentence():
    study = build_study(slug="lay-panel-3-bad", n_sources=1, systems=("a", "b"))
    about_a_text = dataclasses.replace(WHY_BEST, applies_to=AppliesTo.SIMPLIFICATION)
    with pytest.raises(ValidationError, match="panel 3 shows every simplification"):
        study_instrument_save(
            study=study, instrument=instrument_with("protocol_003_layperson", about_a_text), actor=None
        )
    from_texts = dataclasses.replace(RECOMMEND, options=(), options_from="texts")
    with pytest.raises(ValidationError, match="options from the texts are asked in the rate-each-pair flow"):
        study_instrument_save(
            study=study, instrument=instrument_with("protocol_003_layperson", from_texts), actor=None
        )


def test_the_queries_of_lay_panels_with_added_items_are_pinned(client, django_assert_num_queries):
    plain = build_study(slug="lay-plain-queries", n_sources=1, systems=("a", "b"))
    counts = {}
    for study in (plain, three_panel_study("lay-added-queries")):
        _participant, _item, url = at_panel_1(client, study)
        client.get(url)
        gets = [_count(client, "get", url)]
        client.post(url, {**PANEL1, "continue": "1"})
        url = url.replace("/original/", "/assisted/")
        client.get(url)  # locks panel 1
        gets.append(_count(client, "get", url))
        client.post(url, {**PANEL2, "continue": "1"})
        url = url.replace("/assisted/", "/preference/")
        client.get(url)
        gets.append(_count(client, "get", url))
        counts[study.slug] = gets
    # One query more where a panel has added items (panel 2: both panels' answers in that one).
    assert counts["lay-added-queries"] == [n + 1 for n in counts["lay-plain-queries"]]
