"""The study's activity log: every researcher action recorded once, by one service, with who, when,
what and the object; the Activity page (filter, pages) and its CSV; append-only in the admin."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from annotation.activity_services import activity_record
from annotation.models import ActivityEvent, Participant, Study
from annotation.participant_services import (
    participant_create,
    participants_invite,
    participants_mark_returned,
)
from generation.services import batches
from judging import services as judging_services
from studies.study_services import study_close, study_open
from studies.team_services import study_member_add, study_member_role_set
from surveys.lay.services import lay_answer_save, lay_item_create
from tests.annotation.factories import build_study

pytestmark = pytest.mark.usefixtures("fast_analysis")


def _log(study: Study) -> list[tuple[str, str]]:
    return list(study.activity.order_by("created_at", "id").values_list("actor_label", "verb"))


@pytest.fixture
def owner(db):
    return get_user_model().objects.create_user("pi", password="pw", is_staff=True)


def test_the_commands_record_themselves_as_the_actor(db, tmp_path, owner):
    file = tmp_path / "study.csv"
    file.write_text("source_key,source_text,plain\na,No acute fracture.,No broken bone.\n", encoding="utf-8")
    call_command("import_study", str(file), study="logged", owner="pi", stdout=io.StringIO())
    call_command("invite", study="logged", role="layperson", count=2, stdout=io.StringIO())
    call_command("study", "open", "logged", stdout=io.StringIO())
    study = Study.objects.get(slug="logged")
    assert _log(study) == [
        ("manage.py import_study", "study.created"),
        ("manage.py import_study", "member.added"),
        ("manage.py import_study", "sources.imported"),
        ("manage.py invite", "participants.invited"),
        ("manage.py study open", "study.opened"),
    ]
    imported = study.activity.get(verb="sources.imported")
    assert imported.details == {"file": "study.csv", "sources": 1, "systems": 1, "simplifications": 1}
    invited = study.activity.get(verb="participants.invited")
    assert invited.details["count"] == 2 and invited.details["role"] == "layperson"
    assert sorted(invited.details["pseudonyms"]) == sorted(
        study.participants.values_list("pseudonym", flat=True)
    )
    member = study.activity.get(verb="member.added")
    assert member.details == {"user": "pi", "role": "owner"}


def test_services_record_who_did_what_to_which_object(owner, django_capture_on_commit_callbacks):
    study = build_study(slug="acts", n_sources=2, status=Study.Status.DRAFT)
    colleague = get_user_model().objects.create_user("colleague")
    study_open(study=study, actor=owner)
    assert not study_open(study=study, actor=owner)  # unchanged: not recorded again
    study_member_add(study=study, user=colleague, role="viewer", actor=owner)
    study_member_role_set(study=study, user=colleague, role="editor", actor=owner)
    participants_invite(study=study, role=Participant.Role.LAYPERSON, count=1, actor=owner)
    participants_mark_returned(participants=study.participants.all(), actor=owner)
    run = judging_services.judge_run_create(study=study, backend="glossary", created_by=owner)
    batch = batches.generation_batch_create(
        study=study, systems=["plain_bs"], backend="glossary", created_by=owner
    )
    study_close(study=study, actor=owner)
    assert _log(study) == [
        ("pi", "study.opened"),
        ("pi", "member.added"),
        ("pi", "member.role_changed"),
        ("pi", "participants.invited"),
        ("pi", "participants.returned"),
        ("pi", "judges.launched"),
        ("pi", "generation.launched"),
        ("pi", "study.closed"),
    ]
    role = study.activity.get(verb="member.role_changed")
    assert role.details == {"user": "colleague", "from": "viewer", "to": "editor"}
    assert (role.object_type, role.actor_id) == ("annotation.StudyMembership", owner.pk)
    launched = study.activity.get(verb="judges.launched")
    assert (launched.object_type, launched.object_id) == ("judging.JudgeRun", str(run.pk))
    generated = study.activity.get(verb="generation.launched")
    assert (generated.object_type, generated.object_id) == ("generation.GenerationBatch", str(batch.pk))
    assert generated.details["systems"] == ["plain_bs"]


def test_an_event_without_a_user_says_system_and_survives_the_account(owner):
    study = build_study(slug="kept", n_sources=1)
    activity_record(study=study, actor=None, verb="study.changed")
    activity_record(study=study, actor=owner, verb="study.changed")
    owner.delete()
    assert _log(study) == [("system", "study.changed"), ("pi", "study.changed")]


def test_downloads_are_recorded_with_whether_ids_were_included(client, owner):
    study = build_study(slug="dl", n_sources=1)
    study_member_add(study=study, user=owner, role="owner", actor="test")
    client.force_login(owner)
    response = client.get(
        reverse("evaluation:study-export", args=[study.slug, "csv"]), {"include_external_ids": "1"}
    )
    b"".join(response.streaming_content)
    event = study.activity.get(verb="export.downloaded")
    assert event.details == {"file": "answers.csv", "external_ids": True} and event.actor == owner


def test_activity_page_filters_pages_and_downloads(client, owner):
    study = build_study(slug="page", n_sources=1)
    study_member_add(study=study, user=owner, role="editor", actor="test")
    for n in range(55):
        activity_record(study=study, actor=owner, verb="study.changed", details={"n": n})
    activity_record(study=study, actor="manage.py study open", verb="study.opened", obj=study)
    client.force_login(owner)
    url = reverse("evaluation:study-activity", args=[study.slug])
    first = client.get(url)
    html = first.content.decode()
    assert first.status_code == 200 and "page 1 of 2" in html and "manage.py study open" in html
    opened = client.get(url, {"verb": "study.opened"}).content.decode()
    assert "manage.py study open" in opened and "study.changed</td>" not in opened
    assert "study.changed" in client.get(url, {"page": "2"}).content.decode()
    response = client.get(
        reverse("evaluation:study-activity-csv", args=[study.slug]), {"verb": "study.changed"}
    )
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode("utf-8-sig"))))
    assert len(rows) == 55 and {row["verb"] for row in rows} == {"study.changed"}
    assert sorted(json.loads(row["details"])["n"] for row in rows) == list(range(55))
    assert rows[0]["actor"] == "pi"
    # The download itself is in the log.
    assert study.activity.filter(verb="export.downloaded", details__file="activity.csv").count() == 1


def test_the_admin_shows_the_log_read_only(client, db):
    root = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    study = build_study(slug="adm", n_sources=1)
    event = activity_record(study=study, actor=root, verb="study.changed")
    client.force_login(root)
    assert client.get(reverse("admin:annotation_activityevent_changelist")).status_code == 200
    assert client.get(reverse("admin:annotation_activityevent_add")).status_code == 403
    assert client.post(reverse("admin:annotation_activityevent_delete", args=[event.pk])).status_code == 403
    assert ActivityEvent.objects.filter(pk=event.pk).exists()


def test_the_admin_records_study_creation_and_changes(client, db):
    root = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    study = build_study(slug="edit-me", n_sources=1)
    client.force_login(root)
    page = client.get(reverse("admin:annotation_study_change", args=[study.pk]))
    form = page.context["adminform"].form
    data = {name: value for name, value in form.initial.items() if value is not None and name in form.fields}
    data.update({"title": "A new title", "background_questions": "[]", "_save": "Save"})
    for formset in page.context["inline_admin_formsets"]:
        management = formset.formset.management_form
        for name, value in management.initial.items():
            data[f"{formset.formset.prefix}-{name}"] = value
        for index, inline_form in enumerate(formset.formset.forms):
            for name, value in inline_form.initial.items():
                data[f"{formset.formset.prefix}-{index}-{name}"] = "" if value is None else value
            data[f"{formset.formset.prefix}-{index}-id"] = inline_form.instance.pk
    data = {key: ("on" if value is True else "" if value is False else value) for key, value in data.items()}
    response = client.post(reverse("admin:annotation_study_change", args=[study.pk]), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    event = study.activity.get(verb="study.changed")
    assert event.actor == root and "title" in event.details["fields"]


def test_the_activity_page_shows_a_participants_changed_answers(client, owner):
    from annotation.models import Simplification

    study = build_study(slug="changed", n_sources=1)
    study_member_add(study=study, user=owner, role="editor", actor="test")
    participant = participant_create(study=study, role="layperson")
    simplification = (
        Simplification.objects.filter(source__study=study).select_related("source", "system").first()
    )
    item = lay_item_create(
        participant=participant,
        source=simplification.source,
        position=0,
        shown_text=simplification.shown_text,
        assigned_system=simplification.system,
    )
    lay_answer_save(item=item, phase="original", answers={"understanding": "Some parts of it"})
    lay_answer_save(item=item, phase="original", answers={"understanding": "Completely"})
    client.force_login(owner)
    url = reverse("evaluation:study-activity", args=[study.slug])
    html = client.get(url, {"participant": participant.pseudonym}).content.decode()
    assert participant.pseudonym in html and "Some parts of it" in html
    assert "Some parts of it" not in client.get(url, {"participant": "nobody"}).content.decode()
