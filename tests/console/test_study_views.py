"""The console's set-up pages (console/study_views.py): creating a study, its settings and form
rows with field-named errors (never a 500), status buttons with the reason a check fails,
previews, the pilot page and duplication."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation import participant_services, protocol_texts
from annotation.models import ActivityEvent, AttentionCheck, Participant, Study, StudyMembership
from studies.study_services import study_create
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(client):
    user = get_user_model().objects.create_user("ada", password="pw", is_staff=True)
    client.force_login(user)
    return user


@pytest.fixture
def study(researcher):
    study = build_study(slug="setup", n_sources=2, status=Study.Status.DRAFT)
    StudyMembership.objects.create(study=study, user=researcher, role="owner")
    return study


def _management(prefix: str, total: int, initial: int = 0) -> dict[str, str]:
    return {
        f"{prefix}-TOTAL_FORMS": str(total),
        f"{prefix}-INITIAL_FORMS": str(initial),
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }


def _settings(study: Study, **changes) -> dict[str, str]:
    data = {
        "title": study.title,
        "description": "",
        "unit": study.unit,
        "language": "en",
        "lay_consent_text": protocol_texts.LAY_CONSENT_DEFAULT,
        "lay_instructions": protocol_texts.LAY_INSTRUCTIONS_DEFAULT,
        "expert_consent_text": protocol_texts.EXPERT_CONSENT_DEFAULT,
        "expert_instructions": protocol_texts.EXPERT_INSTRUCTIONS_DEFAULT,
        "safety_gate_threshold": "2",
        "abandon_after_minutes": "120",
        **_management("background", 1),
        **_management("checks", 1),
    }
    return {**data, **changes}


def test_the_dashboard_links_to_new_study_and_set_up(client, study):
    html = client.get(reverse("evaluation:study-list")).content.decode()
    assert reverse("console:study-new") in html and reverse("console:study-setup", args=["setup"]) in html


def test_create_makes_the_creator_owner_and_a_bad_slug_names_the_field(client, researcher):
    bad = client.post(
        reverse("console:study-new"),
        {"title": "Liver", "slug": "no spaces", "unit": "sentence", "language": "en"},
    )
    assert bad.status_code == 400 and "slug" in bad.context["form"].errors
    response = client.post(
        reverse("console:study-new"),
        {"title": "Liver", "slug": "liver", "unit": "sentence", "language": "en"},
    )
    assert response.status_code == 302 and response["Location"] == reverse(
        "console:study-setup", args=["liver"]
    )
    study = Study.objects.get(slug="liver")
    assert StudyMembership.objects.get(study=study).user == researcher
    assert ActivityEvent.objects.get(study=study).verb == "study.created"
    again = client.post(
        reverse("console:study-new"),
        {"title": "Liver", "slug": "liver", "unit": "sentence", "language": "en"},
    )
    assert again.status_code == 400 and "slug" in again.context["form"].errors


def test_an_account_without_a_research_role_cannot_create(client):
    client.force_login(get_user_model().objects.create_user("rad", password="pw"))
    assert client.get(reverse("console:study-new")).status_code == 403
    assert client.post(reverse("console:study-new"), {"title": "x", "slug": "x"}).status_code == 403


def test_the_set_up_page_prefills_the_protocol_texts_and_explains_the_code(client, study):
    html = client.get(reverse("console:study-setup", args=["setup"])).content.decode()
    assert "You are invited to take part in a research study" in html  # LAY_CONSENT_DEFAULT
    assert "{code} where the participant" in html and "example.org/done?code=7F3A91C2" in html
    assert 'id="preview-lay-consent"' in html


def test_saving_unchanged_defaults_keeps_the_texts_empty_and_logs_changed_fields(client, study):
    response = client.post(reverse("console:study-setup", args=["setup"]), _settings(study, ask_urgency="on"))
    assert response.status_code == 302
    study.refresh_from_db()
    assert study.ask_urgency and study.lay_consent_text == "" and study.expert_instructions == ""
    assert ActivityEvent.objects.get(study=study, verb="study.changed").details == {"fields": ["ask_urgency"]}


def test_an_invalid_background_row_names_its_field_and_saves_nothing(client, study):
    row = {
        "background-0-key": "1age",
        "background-0-question": "Your age?",
        "background-0-options": "18-39\n40+",
    }
    response = client.post(reverse("console:study-setup", args=["setup"]), _settings(study, **row))
    assert response.status_code == 400
    errors = response.context["background"].forms[0].errors
    assert errors["key"] == [
        "Background question 1 ('1age'): \"key\" may hold only letters, digits and _ "
        "and must start with a letter."
    ]
    study.refresh_from_db()
    assert (
        study.background_questions == [] and not ActivityEvent.objects.filter(verb="study.changed").exists()
    )
    one_option = {**row, "background-0-key": "age", "background-0-options": "only one"}
    response = client.post(reverse("console:study-setup", args=["setup"]), _settings(study, **one_option))
    assert (
        "a single option leaves nothing to choose"
        in response.context["background"].forms[0].errors["options"][0]
    )


def test_background_rows_are_saved_in_the_order_given(client, study):
    rows = {
        **_management("background", 2),
        "background-0-key": "age",
        "background-0-question": "Your age?",
        "background-0-options": "18-39\n40+",
        "background-0-ORDER": "2",
        "background-1-key": "education",
        "background-1-question": "Education?",
        "background-1-ORDER": "1",
    }
    response = client.post(reverse("console:study-setup", args=["setup"]), _settings(study, **rows))
    assert response.status_code == 302
    study.refresh_from_db()
    assert study.background_questions == [
        {"key": "education", "question": "Education?"},
        {"key": "age", "question": "Your age?", "options": ["18-39", "40+"]},
    ]
    # Removing one: the other stays.
    removal = {
        **_management("background", 2, initial=2),
        "background-0-key": "education",
        "background-0-question": "Education?",
        "background-0-ORDER": "1",
        "background-0-DELETE": "on",
        "background-1-key": "age",
        "background-1-question": "Your age?",
        "background-1-options": "18-39\n40+",
        "background-1-ORDER": "2",
    }
    assert (
        client.post(reverse("console:study-setup", args=["setup"]), _settings(study, **removal)).status_code
        == 302
    )
    study.refresh_from_db()
    assert [q["key"] for q in study.background_questions] == ["age"]


def test_attention_check_rows_name_their_field(client, study):
    row = {
        "checks-0-position": "1",
        "checks-0-prompt": "Choose Mild",
        "checks-0-options": "Mild\nSevere",
        "checks-0-expected_answer": "Healthy",
    }
    response = client.post(reverse("console:study-setup", args=["setup"]), _settings(study, **row))
    assert response.status_code == 400
    assert response.context["checks"].forms[0].errors["expected_answer"] == [
        "Attention check: the expected answer 'Healthy' is not one of the options."
    ]
    response = client.post(
        reverse("console:study-setup", args=["setup"]),
        _settings(study, **{**row, "checks-0-expected_answer": "Mild"}),
    )
    assert response.status_code == 302
    check = AttentionCheck.objects.get(study=study)
    assert (check.position, check.options, check.expected_answer) == (1, ["Mild", "Severe"], "Mild")


@pytest.mark.parametrize(
    "changes",
    [
        {"checks-0-position": "abc", "checks-0-prompt": "x"},
        {"background-TOTAL_FORMS": "x"},
        {"checks-TOTAL_FORMS": "99999999999999999999"},
        {"safety_gate_threshold": "99"},
        {"completion_redirect_url": "https://x.org/?cc={CODE}"},
        {"language": "klingon"},
        {"abandon_after_minutes": "-4"},
        {
            "checks-0-id": "999999",
            "checks-0-position": "1",
            "checks-0-prompt": "A?",
            "checks-0-expected_answer": "a",
        },
    ],
)
def test_bad_input_is_a_400_never_a_500(client, study, changes):
    response = client.post(reverse("console:study-setup", args=["setup"]), _settings(study, **changes))
    assert response.status_code == 400


def test_add_a_row_keeps_what_was_typed(client, study):
    typed = _settings(study, title="Typed title", add_row="background")
    response = client.post(reverse("console:study-setup", args=["setup"]), typed)
    assert response.status_code == 200 and len(response.context["background"].forms) == 2
    assert 'value="Typed title"' in response.content.decode()
    study.refresh_from_db()
    assert study.title == "Study setup"


def test_status_buttons_say_why_a_check_fails(client, researcher):
    empty = study_create(slug="empty", title="Empty", actor=researcher)
    response = client.post(reverse("console:study-status", args=["empty"]), {"action": "open"}, follow=True)
    assert "cannot be opened" in response.content.decode() and "no sources yet" in response.content.decode()
    empty.refresh_from_db()
    assert empty.status == "draft"


def test_status_cycle_through_the_buttons(client, study):
    url = reverse("console:study-status", args=["setup"])
    for action, status in [
        ("pilot", "pilot"),
        ("open", "open"),
        ("pause", "paused"),
        ("open", "open"),
        ("close", "closed"),
    ]:
        if action == "close":
            # Closing asks first: the first press only shows what it stops.
            asked = client.post(url, {"action": action})
            assert asked.status_code == 200 and "no further answer is accepted" in asked.content.decode()
            study.refresh_from_db()
            assert study.status == "open"
        assert client.post(url, {"action": action, "confirmed": "yes"}).status_code == 302
        study.refresh_from_db()
        assert study.status == status
    assert client.post(url, {"action": "explode"}).status_code == 302
    verbs = list(ActivityEvent.objects.filter(study=study).order_by("id").values_list("verb", flat=True))
    assert verbs == ["study.pilot_started", "study.opened", "study.paused", "study.opened", "study.closed"]


def test_a_paused_study_shows_participants_a_paused_page(client, study):
    participant = Participant.objects.create(study=study, role="layperson")
    client.post(reverse("console:study-status", args=["setup"]), {"action": "open"})
    client.post(reverse("console:study-status", args=["setup"]), {"action": "pause"})
    response = client.get(f"/s/{participant.token}/")
    page = response.content.decode()
    assert response.status_code == 403 and "This survey is paused" in page
    # A newcomer has answered nothing: not told that their answers are saved.
    assert "answered so far is saved" not in page
    participant_services.participant_touch(participant=participant)
    assert "answered so far is saved" in client.get(f"/s/{participant.token}/").content.decode()


@pytest.mark.parametrize("role", ["layperson", "radiologist"])
def test_preview_opens_the_real_survey_as_a_preview_participant(client, study, role):
    response = client.post(reverse("console:study-preview", args=["setup", role]))
    participant = Participant.objects.get(study=study, is_preview=True)
    assert response.status_code == 302 and response["Location"] == f"/s/{participant.token}/"
    followed = client.get(response["Location"], follow=True)
    assert followed.status_code == 200  # a draft study, and yet the preview may answer
    bad = client.post(reverse("console:study-preview", args=["setup", "admin"]), follow=True)
    assert "Unknown role" in bad.content.decode()


def test_the_pilot_page_lists_and_discards_with_the_count_confirmed(client, study):
    client.post(reverse("console:study-status", args=["setup"]), {"action": "pilot"})
    from annotation import participant_services

    for _ in range(3):
        participant_services.participant_create(study=study, role="layperson")
    page = client.get(reverse("console:study-pilot", args=["setup"])).content.decode()
    assert "This deletes 3 pilot participants and every answer they gave." in page
    assert client.post(reverse("console:study-pilot", args=["setup"]), {"expected": "2"}).status_code == 400
    assert client.post(reverse("console:study-pilot", args=["setup"]), {"expected": "x"}).status_code == 400
    assert study.participants.count() == 3
    assert client.post(reverse("console:study-pilot", args=["setup"]), {"expected": "3"}).status_code == 302
    assert study.participants.count() == 0


def test_duplicate_through_the_page(client, study, researcher):
    assert client.get(reverse("console:study-duplicate", args=["setup"])).status_code == 200
    taken = client.post(
        reverse("console:study-duplicate", args=["setup"]), {"title": "Copy", "slug": "setup"}
    )
    assert taken.status_code == 400 and "slug" in taken.context["form"].errors
    response = client.post(
        reverse("console:study-duplicate", args=["setup"]), {"title": "Copy", "slug": "setup-2"}
    )
    assert response.status_code == 302
    copy = Study.objects.get(slug="setup-2")
    assert copy.sources.count() == 2 and StudyMembership.objects.get(study=copy).user == researcher


def test_viewers_may_not_configure(client, study):
    viewer = get_user_model().objects.create_user("vic", password="pw")
    StudyMembership.objects.create(study=study, user=viewer, role="viewer")
    client.force_login(viewer)
    assert client.get(reverse("console:study-setup", args=["setup"])).status_code == 403
    assert client.post(reverse("console:study-status", args=["setup"]), {"action": "open"}).status_code == 403
    study.refresh_from_db()
    assert study.status == "draft"


def test_every_setting_is_on_the_page():
    from console.forms import StudySettingsForm
    from console.study_views import SETTINGS_GROUPS

    grouped = [name for _, names in SETTINGS_GROUPS for name in names]
    assert sorted(grouped) == sorted(StudySettingsForm.base_fields) and len(set(grouped)) == len(grouped)
