"""The console's participants page: invites with labels (names and e-mails for radiologists),
the table, the links CSV, a new link, withdrawing (answers deleted after a counted confirmation,
the analysis recomputed) and the open recruitment link with Prolific's parameters."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from annotation.models import ActivityEvent, LayItem, Participant
from annotation.participant_services import invite_contacts_parse, participant_withdraw
from evaluation.models import AnalysisSnapshot
from evaluation.selectors import analysis_coverage
from studies.team_services import study_member_add
from tests.annotation import answers
from tests.evaluation.analysis.test_study_frames import build_answered_study


@pytest.fixture(autouse=True)
def fast_analysis(settings):
    from tests.evaluation.conftest import FAST_ANALYSIS_OPTIONS

    settings.RADLAY_ANALYSIS_OPTIONS = FAST_ANALYSIS_OPTIONS


def test_bulk_invites_with_labels_names_and_emails(client, editor, draft):
    client.force_login(editor)
    url = reverse("console:participants-invite", args=[draft.slug])
    assert client.post(url, {"role": "layperson", "count": "3"}).status_code == 302
    response = client.post(
        url, {"role": "radiologist", "contacts": "Dr Ada Lovelace, ada@example.org\n\nbob@example.org\n"}
    )
    assert response.status_code == 302
    people = {p.pseudonym: p for p in Participant.objects.filter(study=draft)}
    assert set(people) == {"L001", "L002", "L003", "R001", "R002"}
    assert (people["R001"].contact_name, people["R001"].contact_email) == (
        "Dr Ada Lovelace",
        "ada@example.org",
    )
    assert (people["R002"].contact_name, people["R002"].contact_email) == ("", "bob@example.org")
    page = client.get(reverse("console:participants", args=[draft.slug])).content.decode()
    for person in people.values():
        assert reverse("surveys:entry", args=[person.token]) in page
    assert "ada@example.org" in page and "data-copy=" in page
    invited = ActivityEvent.objects.filter(study=draft, verb="participants.invited")
    assert invited.count() == 2
    assert not any("ada" in str(event.details) for event in invited)  # no names in the log


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"role": "layperson", "contacts": "Ann, ann@example.org"}, "contacts", "radiologists only"),
        ({"role": "radiologist", "contacts": "Ann, not-an-address@"}, "contacts", "line 1"),
        ({"role": "radiologist", "count": "2", "contacts": "a@example.org"}, "count", "1 contacts given"),
        ({"role": "layperson"}, "count", "how many to invite"),
        ({"role": "layperson", "count": "0"}, "count", "greater than or equal to 1"),
        ({"role": "boss", "count": "1"}, "role", "Select a valid choice"),
    ],
)
def test_a_bad_invite_is_a_named_form_error(client, editor, draft, data, field, message):
    client.force_login(editor)
    response = client.post(reverse("console:participants-invite", args=[draft.slug]), data)
    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors[field])
    assert not Participant.objects.filter(study=draft).exists()


def test_contacts_are_parsed_line_by_line():
    assert invite_contacts_parse("A B, a@x.org\nc@x.org\nJust A Name\n") == [
        ("A B", "a@x.org"),
        ("", "c@x.org"),
        ("Just A Name", ""),
    ]
    with pytest.raises(ValidationError, match="line 2"):
        invite_contacts_parse("ok@x.org\nX, bad@\n")


def test_the_links_csv_and_a_new_link(client, editor, draft):
    client.force_login(editor)
    client.post(
        reverse("console:participants-invite", args=[draft.slug]), {"role": "layperson", "count": "2"}
    )
    first = Participant.objects.get(study=draft, pseudonym="L001")
    old = first.token
    response = client.get(reverse("console:participants-links", args=[draft.slug]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["participant"] for r in rows] == ["L001", "L002"]
    assert rows[0]["link"].endswith(reverse("surveys:entry", args=[old]))
    downloaded = ActivityEvent.objects.get(study=draft, verb="export.downloaded")
    assert downloaded.details == {"file": "participant-links.csv", "links": 2}
    client.post(reverse("console:participant-link", args=[draft.slug, first.pk]))
    first.refresh_from_db()
    assert first.token != old
    draft.status = "open"
    draft.save()
    assert client.get(reverse("surveys:entry", args=[old])).status_code == 404
    assert client.get(reverse("surveys:entry", args=[first.token])).status_code in (200, 302)
    assert ActivityEvent.objects.filter(study=draft, verb="participants.link_regenerated").exists()


def test_the_recruitment_link_carries_prolifics_parameters(client, editor, draft):
    client.force_login(editor)
    page = client.get(reverse("console:participants", args=[draft.slug])).content.decode()
    expected = (
        "/join/draft/?PROLIFIC_PID={{%PROLIFIC_PID%}}"
        "&amp;STUDY_ID={{%STUDY_ID%}}&amp;SESSION_ID={{%SESSION_ID%}}"
    )
    assert expected in page


@pytest.mark.heavy
def test_withdrawing_counts_deletes_and_recomputes(client, editor):
    study = build_answered_study(slug="answered", n_sources=3, n_lay=2)
    study_member_add(study=study, user=editor, role="editor", actor="test")
    layperson = Participant.objects.filter(study=study, role="layperson").order_by("pk").first()
    layperson.background = {"age": "30-49"}
    layperson.save()
    mine = len(answers.lay_answers(participant=layperson))
    assert mine > 0
    others = len(answers.lay_answers(study=study)) - mine
    client.force_login(editor)
    url = reverse("console:participant-withdraw", args=[study.slug, layperson.pk])
    confirm = client.get(url)
    counts = confirm.context["counts"]
    assert counts["lay answers"] == mine and counts["background answers"] == 1
    assert counts["lay preferences"] == len(answers.preferences(participant=layperson))
    assert f"<td>lay answers</td><td>{mine}</td>" in confirm.content.decode()
    assert len(answers.lay_answers(participant=layperson)) == mine  # nothing deleted by GET
    old_link = reverse("surveys:entry", args=[layperson.token])
    response = client.post(url)
    assert response.status_code == 302
    assert client.get(old_link).status_code == 404  # the link no longer opens the survey
    layperson.refresh_from_db()
    assert (
        layperson.withdrawn_at is not None
        and layperson.returned_at is not None
        and layperson.background == {}
    )
    assert not LayItem.objects.filter(participant=layperson).exists()
    assert len(answers.lay_answers(study=study)) == others
    event = ActivityEvent.objects.get(study=study, verb="participants.withdrawn")
    assert event.details["deleted"]["lay answers"] == mine
    # The analysis was recomputed without the withdrawn answers.
    snapshot = AnalysisSnapshot.objects.get(study=study)
    assert snapshot.n_answers == analysis_coverage(study=study)["n_answers"]
    table = client.get(reverse("console:participants", args=[study.slug])).context["rows"]
    assert {r["status"] for r in table if r["pk"] == layperson.pk} == {"withdrawn"}
    with pytest.raises(ValidationError, match="already withdrawn"):
        participant_withdraw(participant=layperson, actor=editor)


def test_another_studys_participant_is_not_found(client, editor, draft):
    from tests.annotation.factories import build_study

    other = build_study(slug="other", n_sources=1)
    stranger = Participant.objects.create(study=other, role="layperson", pseudonym="L001")
    client.force_login(editor)
    assert (
        client.get(reverse("console:participant-withdraw", args=[draft.slug, stranger.pk])).status_code == 404
    )
    assert client.post(reverse("console:participant-link", args=[draft.slug, stranger.pk])).status_code == 404
