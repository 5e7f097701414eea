"""The researcher's study services (studies/study_services.py): create, configure, duplicate,
the status cycle (draft → pilot → open ⇄ paused → closed), previews and the pilot, and the rule
that previews and pilot participants count nowhere (annotation.selectors.counted_participants)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.test import Client
from rest_framework.test import APIClient

from annotation import participant_services
from annotation.access import SurveyClosed, access_participant
from annotation.models import (
    ActivityEvent,
    AttentionCheck,
    AttentionCheckResponse,
    ItemAnswer,
    Participant,
    Simplification,
    SimplificationText,
    Study,
    StudyInstrument,
    StudyMembership,
    completion_redirect_errors,
)
from annotation.selectors import counted_participants, study_counts
from evaluation import progress
from evaluation.analysis import study_frames
from evaluation.exports.rows import answer_rows
from evaluation.selectors import analysis_coverage
from studies.study_services import (
    pilot_participants_discard,
    preview_participant_create,
    study_close,
    study_configure,
    study_create,
    study_duplicate,
    study_open,
    study_pause,
    study_pilot_start,
)
from surveys.lay import assignment, entry
from surveys.lay import selectors as design
from surveys.lay import services as lay_answers
from surveys.radiologist import services as expert_answers
from tests.annotation import answers as typed_answers
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db
LAY, RAD = Participant.Role.LAYPERSON, Participant.Role.RADIOLOGIST


@pytest.fixture
def researcher():
    return get_user_model().objects.create_user("ada", password="pw", is_staff=True)


def _verbs(study: Study) -> list[str]:
    return list(ActivityEvent.objects.filter(study=study).order_by("id").values_list("verb", flat=True))


# --- create and configure -------------------------------------------------------------------------------


def test_the_creator_owns_the_new_draft_study_and_the_log_says_so(researcher):
    study = study_create(slug="liver", title="Liver", actor=researcher, settings={"unit": "report"})
    assert study.status == Study.Status.DRAFT and study.unit == "report"
    assert StudyMembership.objects.get(study=study, user=researcher).role == "owner"
    event = ActivityEvent.objects.get(study=study)
    assert (event.verb, event.actor, event.details) == ("study.created", researcher, {"slug": "liver"})


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"completion_redirect_url": "https://x.org/done?cc={Code}"}, "completion_redirect_url"),
        ({"completion_redirect_url": "https://x.org/{code}/{pid}"}, "completion_redirect_url"),
        ({"language": "xx"}, "language"),
        ({"background_questions": [{"key": "1age", "question": "Age?"}]}, "background_questions"),
        ({"safety_gate_threshold": 9}, "safety_gate_threshold"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(researcher, settings, field):
    with pytest.raises(ValidationError) as refused:
        study_create(slug="bad", title="Bad", actor=researcher, settings=settings)
    assert field in refused.value.message_dict
    assert not Study.objects.filter(slug="bad").exists()


def test_the_completion_placeholder_is_the_one_the_survey_replaces():
    assert completion_redirect_errors("https://app.prolific.com/submissions/complete?cc={code}") == []
    assert completion_redirect_errors("https://app.prolific.com/submissions/complete?cc=C0DE") == []
    assert completion_redirect_errors("https://x.org/?cc={{code}}")
    assert completion_redirect_errors("ftp://x.org/{code}")
    study = build_study(slug="done", n_sources=1)
    study.completion_redirect_url = "https://x.org/done?cc={code}"
    study.save()
    participant = participant_services.participant_create(study=study, role=LAY)
    assert entry.lay_completion_url(participant=participant) == (
        f"https://x.org/done?cc={participant.completion_code}"
    )


def test_configure_records_the_changed_field_names_and_nothing_when_unchanged(researcher):
    study = study_create(slug="cfg", title="Cfg", actor=researcher)
    changed = study_configure(
        study=study,
        actor=researcher,
        settings={"title": "Cfg", "ask_urgency": True, "abandon_after_minutes": 30},
        attention_checks=[
            {"position": 1, "prompt": "Pick Mild", "options": ["Mild", "Severe"], "expected_answer": "Mild"}
        ],
    )
    assert changed == ["ask_urgency", "abandon_after_minutes", "attention_checks"]
    event = ActivityEvent.objects.filter(study=study, verb="study.changed").get()
    assert event.details == {"fields": changed}
    check = AttentionCheck.objects.get(study=study)
    again = study_configure(
        study=study,
        actor=researcher,
        settings={"ask_urgency": True},
        attention_checks=[
            {
                "id": check.pk,
                "position": 1,
                "prompt": "Pick Mild",
                "options": ["Mild", "Severe"],
                "expected_answer": "Mild",
            }
        ],
    )
    assert again == [] and ActivityEvent.objects.filter(study=study, verb="study.changed").count() == 1


def test_attention_checks_swap_places_and_an_answered_one_cannot_be_removed(researcher):
    study = build_study(slug="checks", n_sources=2)
    first = AttentionCheck.objects.create(
        study=study, position=0, prompt="A?", options=["a", "b"], expected_answer="a"
    )
    second = AttentionCheck.objects.create(
        study=study, position=1, prompt="B?", options=["a", "b"], expected_answer="b"
    )
    swapped = [
        {"id": first.pk, "position": 1, "prompt": "A?", "options": ["a", "b"], "expected_answer": "a"},
        {"id": second.pk, "position": 0, "prompt": "B?", "options": ["a", "b"], "expected_answer": "b"},
    ]
    study_configure(study=study, actor=researcher, settings={}, attention_checks=swapped)
    assert dict(AttentionCheck.objects.filter(study=study).values_list("prompt", "position")) == {
        "A?": 1,
        "B?": 0,
    }
    participant = participant_services.participant_create(study=study, role=LAY)
    AttentionCheckResponse.objects.create(participant=participant, check_item=first, answer="a", passed=True)
    with pytest.raises(ValidationError) as refused:
        study_configure(study=study, actor=researcher, settings={}, attention_checks=swapped[1:])
    assert "has answers and cannot be removed" in " ".join(refused.value.message_dict["attention_checks"])
    assert AttentionCheck.objects.filter(study=study).count() == 2
    with pytest.raises(ValidationError) as refused:
        study_configure(
            study=study,
            actor=researcher,
            settings={},
            attention_checks=[
                *swapped,
                {"position": 2, "prompt": "C?", "options": ["x", "y"], "expected_answer": "z"},
            ],
        )
    assert (
        "Attention check 3: Attention check: the expected answer 'z' is not one of the options."
        in (refused.value.message_dict["attention_checks"])
    )


# --- duplicate --------------------------------------------------------------------------------------------


def test_duplicate_copies_the_set_up_and_no_participant_or_answer(researcher):
    study = build_study(slug="orig", n_sources=3, shared=((0, "plain_bs", "plain_sc"),))
    study.lay_consent_text, study.background_questions = "Consent!", [{"key": "age", "question": "Age?"}]
    study.save()
    AttentionCheck.objects.create(
        study=study, position=1, prompt="A?", options=["a", "b"], expected_answer="a"
    )
    rater = participant_services.participant_create(study=study, role=RAD)
    text = SimplificationText.objects.filter(source__study=study).first()
    expert_answers.expert_rating_save(participant=rater, shown_text=text, scores={"correctness": 4})
    # A row standing for another instrument (written after the answer, which names a real one).
    StudyInstrument.objects.create(
        study=study,
        key="lay",
        version=1,
        flow="lay",
        definition={"key": "lay"},
        fingerprint="f",
        structure_fingerprint="s",
    )

    copy = study_duplicate(study=study, slug="orig-2", title="Orig 2", actor=researcher)

    assert (copy.status, copy.lay_consent_text, copy.background_questions) == (
        "draft",
        "Consent!",
        [{"key": "age", "question": "Age?"}],
    )

    def shape(s):
        return sorted(
            Simplification.objects.filter(source__study=s).values_list(
                "source__key", "system__key", "shown_text__text", "origin"
            )
        )

    assert shape(copy) == shape(study) and len(shape(copy)) == 12
    # Identical texts stay one text in the copy.
    assert (
        SimplificationText.objects.filter(source__study=copy).count()
        == SimplificationText.objects.filter(source__study=study, simplifications__isnull=False)
        .distinct()
        .count()
        == 11
    )
    assert list(copy.attention_checks.values_list("prompt", flat=True)) == ["A?"]
    # Every version of every instrument (the protocol's two, which every study has, and the added one).
    versions = sorted(copy.instruments.values_list("key", "version", "fingerprint"))
    assert versions == sorted(study.instruments.values_list("key", "version", "fingerprint"))
    assert ("lay", 1, "f") in versions
    assert not copy.participants.exists() and not ItemAnswer.objects.filter(source__study=copy).exists()
    assert StudyMembership.objects.get(study=copy).user == researcher
    assert _verbs(copy) == ["study.created"] and "study.duplicated" in _verbs(study)
    # The original is untouched.
    assert study.participants.count() == 1 and len(shape(study)) == 12


# --- status -----------------------------------------------------------------------------------------------


def test_open_says_why_it_cannot(researcher):
    study = study_create(slug="empty", title="Empty", actor=researcher)
    with pytest.raises(ValidationError) as refused:
        study_open(study=study, actor=researcher)
    assert "It has no sources yet" in " ".join(refused.value.messages)
    study.refresh_from_db()
    assert study.status == Study.Status.DRAFT


def test_pause_keeps_answers_and_refuses_new_ones_until_resumed(researcher):
    study = build_study(slug="p", n_sources=2)
    participant = participant_services.participant_create(study=study, role=LAY)
    with pytest.raises(ValidationError):
        study_pilot_start(study=study, actor=researcher)  # open already: no pilot
    assert (
        study_pause(study=study, actor=researcher) is True
        and study_pause(study=study, actor=researcher) is False
    )
    with pytest.raises(SurveyClosed):
        access_participant(token=participant.token)
    assert access_participant(token=participant.token, require_open=False).pk == participant.pk
    assert study_open(study=study, actor=researcher) is True
    assert access_participant(token=participant.token).pk == participant.pk
    assert study_close(study=study, actor=researcher) is True
    with pytest.raises(ValidationError):
        study_pause(study=study, actor=researcher)
    assert _verbs(study) == ["study.paused", "study.opened", "study.closed"]
    assert ActivityEvent.objects.filter(study=study, verb="study.opened").get().details == {"from": "paused"}


# --- previews and the pilot -------------------------------------------------------------------------------


def _lay_answering(participant: Participant) -> None:
    participant_services.participant_consent(participant=participant, accepted=True)
    items = assignment.lay_survey_start(participant=participant)
    lay_answers.lay_answer_save(item=items[0], phase="original", answers={"understanding": "Completely"})


def _rating(participant: Participant, study: Study) -> None:
    for text in SimplificationText.objects.filter(source__study=study):
        expert_answers.expert_rating_save(
            participant=participant,
            shown_text=text,
            scores={
                a: 1 for a in ("correctness", "completeness", "hallucination", "structure", "simplicity")
            },
        )
    for source in study.sources.all():
        expert_answers.expert_source_judgement_save(
            participant=participant, source=source, severity="Mild", simplicity=2
        )


def test_a_preview_answers_in_a_draft_study_and_takes_no_participant_number(researcher):
    study = build_study(slug="draft", n_sources=2, status=Study.Status.DRAFT)
    preview = preview_participant_create(study=study, role=LAY, actor=researcher)
    assert preview.is_preview and not preview.is_pilot and preview.pseudonym == "preview-L1"
    assert access_participant(token=preview.token).pk == preview.pk  # draft, yet the preview may answer
    _lay_answering(preview)
    assert len(typed_answers.lay_answers(participant=preview)) == 1
    study_open(study=study, actor=researcher)
    real = participant_services.participant_create(study=study, role=LAY)
    assert real.pseudonym == "L001"
    with pytest.raises(SurveyClosed):
        access_participant(
            token=participant_services.participant_create(
                study=build_study(slug="d2", status="draft"), role=LAY
            ).token
        )
    assert "study.previewed" in _verbs(study)


def test_previews_and_pilots_leak_into_nothing_that_counts(researcher, django_user_model):
    """One counted participant per role and, beside them, a preview and a pilot participant of
    each role, all with answers: every count, frame, export and API answer sees only the first."""
    study = build_study(slug="leak", n_sources=2, status=Study.Status.DRAFT)
    study.safety_gate_enabled = True  # the previews rate everything 1: nothing may be withheld for it
    study.save()
    StudyMembership.objects.create(study=study, user=researcher, role="owner")
    study_pilot_start(study=study, actor=researcher)
    pilot_lay = participant_services.participant_create(study=study, role=LAY)
    pilot_rad = participant_services.participant_create(study=study, role=RAD)
    assert pilot_lay.is_pilot and pilot_rad.is_pilot
    preview_lay = preview_participant_create(study=study, role=LAY, actor=researcher)
    preview_rad = preview_participant_create(study=study, role=RAD, actor=researcher)
    for person in (pilot_lay, preview_lay):
        _lay_answering(person)
    for person in (pilot_rad, preview_rad):
        _rating(person, study)
    study_open(study=study, actor=researcher)
    real_lay = participant_services.participant_create(study=study, role=LAY)
    real_rad = participant_services.participant_create(study=study, role=RAD)
    assert not real_lay.is_pilot and not real_lay.is_preview
    _lay_answering(real_lay)
    expert_answers.expert_source_judgement_save(
        participant=real_rad, source=study.sources.first(), severity="Mild", simplicity=3
    )
    counted = {real_lay.pseudonym, real_rad.pseudonym}
    # The uncounted participants' answers are there, only not counted.
    assert len(typed_answers.lay_answers(study=study)) == 3

    # Progress (dashboard, study list, API) and the Latin-square balance.
    assert {r["participant"] for r in progress.participants_progress(study=study)} == counted
    balance = progress.latin_square_balance(study=study)
    assert sum(cell.assigned for cell in balance.cells.values()) == 2  # the one counted layperson's items
    assert sum(sum(v for k, v in row.items() if k != "row") for row in balance.rows) == 1
    # The Latin square handed the counted layperson row 0, as if nobody had come before.
    assert real_lay.latin_square_row == 0 == preview_lay.latin_square_row == pilot_lay.latin_square_row
    assert design.lay_live_rows(study=study) == [0]
    # The safety gate: only counted radiologists' ratings withhold texts.
    assert design.lay_withheld_text_ids(study=study) == set()
    assert design.lay_safety_flags(study=study) == []
    # Counts and the analysis.
    assert study_counts(study=study)["participants"] == {"radiologist": 1, "layperson": 1}
    assert study_counts(study=study)["lay_answers"]["original"] == 1
    assert set(study_frames.lay_answers_frame(study=study)["participant"]) == {real_lay.pseudonym}
    assert study_frames.expert_ratings_frame(study=study).empty
    assert set(study_frames.expert_judgements_frame(study=study)["participant"]) == {real_rad.pseudonym}
    assert analysis_coverage(study=study)["lay_answers"]["n"] == 1
    assert analysis_coverage(study=study)["expert_ratings"]["n"] == 0
    # Exports.
    assert {row[1] for row in answer_rows(study=study)} == counted
    web = Client()
    web.force_login(researcher)
    for fmt in ("csv", "json"):
        response = web.get(f"/dashboard/leak/export.{fmt}")
        body = b"".join(response.streaming_content) if response.streaming else response.content
        text = body.decode("utf-8-sig")
        assert response.status_code == 200 and "L002" in text, (fmt, response.status_code)
        assert not any(name in text for name in ("preview-L1", "preview-R1", "L001", "R001")), fmt
    # The API.
    api = APIClient()
    api.force_authenticate(researcher)
    listed = api.get("/api/studies/").json()
    rows = listed["results"] if isinstance(listed, dict) and "results" in listed else listed
    assert [s["n_participants"] for s in rows if s["slug"] == "leak"] == [2]
    api_progress = api.get("/api/studies/leak/progress/").json()
    assert {p["participant"] for p in api_progress} == counted
    answers = api.get("/api/studies/leak/answers/", {"limit": 1000}).json()
    assert {row["participant"] for row in answers["results"]} == counted
    assert Participant.objects.filter(counted_participants(), study=study).count() == 2


def test_discarding_the_pilot_deletes_its_participants_and_answers_only(researcher):
    study = build_study(slug="pilot", n_sources=2, status=Study.Status.DRAFT)
    study_pilot_start(study=study, actor=researcher)
    pilots = [participant_services.participant_create(study=study, role=LAY) for _ in range(2)]
    for person in pilots:
        _lay_answering(person)
    preview = preview_participant_create(study=study, role=LAY, actor=researcher)
    with pytest.raises(ValidationError) as refused:
        pilot_participants_discard(study=study, actor=researcher, expected=3)
    assert "2 pilot participant(s), not 3" in " ".join(refused.value.messages)
    assert pilot_participants_discard(study=study, actor=researcher, expected=2) == 2
    assert list(study.participants.all()) == [preview]
    assert not ItemAnswer.objects.filter(participant__study=study, participant__is_pilot=True).exists()
    event = ActivityEvent.objects.get(study=study, verb="pilot.discarded")
    assert event.details == {"count": 2, "pseudonyms": ["L001", "L002"]}
    study_open(study=study, actor=researcher)
    assert participant_services.participant_create(study=study, role=LAY).pseudonym == "L001"
    with pytest.raises(ValidationError):
        pilot_participants_discard(study=study, actor=researcher, expected=0)  # open: pause first


def test_a_pilot_participant_is_one_who_took_part_during_the_pilot(researcher):
    study = build_study(slug="joined", n_sources=1, status=Study.Status.DRAFT)
    invited_in_draft = participant_services.participant_create(study=study, role=LAY)
    study_pilot_start(study=study, actor=researcher)
    invited_in_pilot = participant_services.participant_create(study=study, role=LAY)
    assert invited_in_pilot.is_pilot and not invited_in_draft.is_pilot
    participant_services.participant_consent(participant=invited_in_draft, accepted=True)
    study_open(study=study, actor=researcher)
    invited_in_pilot.study.refresh_from_db()
    participant_services.participant_consent(participant=invited_in_pilot, accepted=True)
    invited_in_draft.refresh_from_db()
    invited_in_pilot.refresh_from_db()
    assert invited_in_draft.is_pilot and not invited_in_pilot.is_pilot
