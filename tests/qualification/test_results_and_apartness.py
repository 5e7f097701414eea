"""The team's side of the qualification round and where its rows go: the console page refuses a
rule that cannot be met on its field; results read the same in the console, the progress page, the
command and the API; practice answers never reach the answer exports, the item exports, the
instrument answers or the analysis frames; the archive carries the round."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation import participant_services
from annotation.instrument_selectors import instrument_answers
from annotation.models import ActivityEvent, Participant, StudyMembership
from evaluation.analysis.study_frames import study_frames
from evaluation.exports.rows import answer_rows
from evaluation.exports.study_answers import item_answer_rows
from evaluation.exports.study_archive_tables import archive_coverage
from qualification.models import PracticeAnswer, QualificationRule
from qualification.rule_services import qualification_rule_save
from tests.annotation.factories import build_study
from tests.qualification.test_practice_flow import answer_all, consent


@pytest.fixture
def study():
    return build_study(slug="qualres", n_sources=2, systems=("a", "b"))


@pytest.fixture
def editor(django_user_model, study):
    user = django_user_model.objects.create_user("editor", password="pw-editor-123")
    StudyMembership.objects.create(study=study, user=user, role=StudyMembership.Role.EDITOR)
    return user


def _form(prefix: str, **values) -> dict:
    fields = {
        "target": "expert:radiologist",
        "share_percent": 80,
        "retries": 1,
        "min_seconds": 0,
        "on_fail": "retry",
    }
    fields.update(values)
    return {
        "prefix": prefix,
        "action": "save",
        **{f"{prefix}-{name}": value for name, value in fields.items()},
    }


@pytest.mark.django_db
def test_the_console_sets_a_rule_and_refuses_one_that_cannot_be_met_on_its_field(client, study, editor):
    client.force_login(editor)
    url = reverse("console:qualification", args=[study.slug])
    page = client.get(url).content.decode()
    assert "radiologist · expert flow" in page and "5 practice items" in page
    refused = client.post(url, _form("expert-radiologist", share_percent=120))
    assert refused.status_code == 400
    body = refused.content.decode()
    assert "120 % cannot be met: it needs more correct answers than the round&#x27;s 5 practice items" in body
    assert not QualificationRule.objects.exists()
    saved = client.post(url, _form("expert-radiologist", share_percent=60, on_fail="screen_out"))
    assert saved.status_code == 302
    rule = QualificationRule.objects.get()
    assert (rule.share_percent, rule.retries, rule.on_fail) == (60, 1, "screen_out")
    assert ActivityEvent.objects.filter(study=study, verb="qualification.rule_set", actor=editor).exists()
    assert client.post(url, _form("expert-radiologist") | {"action": "remove"}).status_code == 302
    assert not QualificationRule.objects.exists()


@pytest.mark.django_db
def test_a_group_without_practice_items_cannot_get_a_rule(study):
    with pytest.raises(Exception, match="no practice items for this rater group"):
        qualification_rule_save(study=study, flow="expert", group="layperson", share_percent=50)


def _exports(study) -> tuple:
    frames = study_frames(study=study)
    return (
        list(answer_rows(study=study)),
        list(item_answer_rows(study=study)),
        sorted(map(repr, instrument_answers(study=study, flow="expert").items())),
        {
            name: len(getattr(frames, name))
            for name in vars(frames)
            if hasattr(getattr(frames, name), "__len__")
        },
    )


@pytest.mark.django_db
def test_practice_answers_never_reach_the_exports_or_the_analysis(client, study, editor):
    qualification_rule_save(study=study, flow="expert", group="radiologist", share_percent=100, retries=1)
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    consent(client, participant)
    before = _exports(study)
    answer_all(client, participant, right=3)
    answer_all(client, participant, right=5)
    assert PracticeAnswer.objects.count() == 10
    assert _exports(study) == before

    # The results: the API, the command and the progress page read the same rows.
    client.force_login(editor)
    rows = client.get(reverse("api:qualification-results", args=[study.slug])).json()
    assert len(rows) == 1
    assert rows[0]["state"] == "passed" and rows[0]["needed"] == 5
    assert [(a["number"], a["correct"], a["total"], a["passed"]) for a in rows[0]["attempts"]] == [
        (1, 3, 5, False),
        (2, 5, 5, True),
    ]
    out = io.StringIO()
    call_command("qualification", "results", "--study", study.slug, "--json", stdout=out)
    assert json.loads(out.getvalue())[0]["attempts"][1]["correct"] == 5
    progress = client.get(reverse("evaluation:study-progress", args=[study.slug])).content.decode()
    assert 'id="qualification-results"' in progress and "5/5 (5 needed)" in progress


@pytest.mark.django_db
def test_the_command_refuses_a_rule_that_cannot_be_met(study):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="share_percent: 150 % cannot be met"):
        call_command("qualification", "rule", "--study", study.slug, "--share", "150")


def test_the_archive_carries_the_round():
    coverage = archive_coverage()
    for label in (
        "qualification.qualificationrule",
        "qualification.qualificationattempt",
        "qualification.practiceanswer",
    ):
        assert coverage[label] == "archived"
