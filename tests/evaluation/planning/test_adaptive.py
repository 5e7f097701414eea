"""Adaptive allocation in a study (evaluation/planning/adaptive.py): the option set by the service, the
console page and the command, refused on its field where the planner cannot reach the target,
recorded in the activity log; rows handed out at a constant number of queries; recruitment that
closes itself; the progress page showing the width against the target."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation import participant_services
from annotation.models import Participant, Study
from evaluation.models import AdaptiveAllocation
from evaluation.planning.adaptive import (
    adaptive_allocation_off,
    adaptive_allocation_set,
    adaptive_progress,
    adaptive_state,
)
from studies.team_services import study_member_add
from surveys.lay import services as lay_answers
from surveys.lay.assignment import lay_survey_start
from surveys.lay.errors import StudyNotReady
from tests.annotation.factories import build_study
from tests.evaluation.analysis.test_study_frames import CONFIDENCE, HELPFULNESS, SEVERITY, UNDERSTANDING

pytestmark = pytest.mark.django_db


def _systems(study: Study):
    systems = {system.key: system for system in study.systems.all()}
    return systems["cot_sc"], systems["plain_bs"]


def _set(study: Study, **overrides):
    a, b = _systems(study)
    values = {
        "study": study,
        "outcome": "understanding",
        "system_a": a,
        "system_b": b,
        "target_width": 5.0,
        "max_participants": 40,
        **overrides,
    }
    return adaptive_allocation_set(**values)


def _newcomer(study: Study) -> Participant:
    person = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    return participant_services.participant_consent(participant=person, accepted=True)


def _answer(person: Participant, rng: np.random.Generator) -> None:
    """Panels 1 and 2 of every item of `person`, understanding drawn at random (seeded)."""
    for item in lay_survey_start(participant=person):
        first = {
            "understanding": UNDERSTANDING[1],
            "confidence": CONFIDENCE[1],
            "severity_guess": SEVERITY[2],
        }
        lay_answers.lay_answer_save(item=item, phase="original", answers=first, time_spent_ms=1000)
        lay_answers.lay_item_lock_original(item=item)
        second = {
            "understanding": UNDERSTANDING[int(rng.integers(1, 4))],
            "confidence": CONFIDENCE[2],
            "severity_guess": SEVERITY[2],
            "helpfulness": HELPFULNESS[2],
        }
        lay_answers.lay_answer_save(item=item, phase="assisted", answers=second, time_spent_ms=1000)
    participant_services.participant_complete(participant=person)


def build_answered_study(*, slug: str, n_sources: int, n_lay: int, seed: int = 0) -> Study:
    """A study of `n_sources` sources × four systems whose `n_lay` laypeople took their rows
    through the real handout and answered panel 2's understanding at random."""
    study = build_study(slug=slug, n_sources=n_sources)
    rng = np.random.default_rng(seed)
    for _ in range(n_lay):
        _answer(_newcomer(study), rng)
    return study


@pytest.fixture
def study():
    return build_answered_study(slug="adaptive", n_sources=8, n_lay=8)


def test_the_option_is_recorded_on_and_off_with_the_planners_components(study):
    option = _set(study, actor="test")
    assert option.enabled and option.components["pilot"] == "adaptive"
    assert option.components["width_at_max"] > 0
    event = study.activity.get(verb="adaptive.set")
    assert event.details["target_width"] == 5.0 and event.details["system_a"] == "cot_sc"
    assert adaptive_allocation_off(study=study, actor="test") is True
    assert adaptive_allocation_off(study=study, actor="test") is False
    assert study.activity.filter(verb="adaptive.off").count() == 1
    assert not AdaptiveAllocation.objects.get(study=study).enabled


def test_a_target_the_planner_cannot_reach_is_refused_on_its_field_with_the_width_it_can(study):
    with pytest.raises(ValidationError) as caught:
        _set(study, target_width=0.01, max_participants=10)
    message = " ".join(caught.value.message_dict["target_width"])
    assert "cannot reach a width of 0.01" in message and "at most 10 participants" in message
    assert not AdaptiveAllocation.objects.exists() and not study.activity.filter(verb="adaptive.set").exists()
    # More participants make a narrower target reachable: the refusal is the planner's arithmetic.
    # (A target between the two widths, not a fixed fraction of one: how much 390 more participants
    # narrow it depends on the pilot's components, which the random handout of its rows moves.)
    reachable = _set(study, target_width=5.0, max_participants=10).components["width_at_max"]
    with_more = _set(study, target_width=5.0, max_participants=400).components["width_at_max"]
    assert with_more < reachable
    between = (with_more + reachable) / 2
    with pytest.raises(ValidationError):
        _set(study, target_width=between, max_participants=10)
    _set(study, target_width=between, max_participants=400)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"outcome": "expert_correctness"}, "outcome"),
        ({"target_width": "-1"}, "target_width"),
        ({"target_width": "wide"}, "target_width"),
        ({"max_participants": 1}, "max_participants"),
    ],
)
def test_bad_input_is_refused_on_its_field(study, overrides, field):
    with pytest.raises(ValidationError) as caught:
        _set(study, **overrides)
    assert field in caught.value.message_dict


def test_the_same_system_twice_and_a_pilot_without_answers_are_refused(study):
    a, _ = _systems(study)
    with pytest.raises(ValidationError) as caught:
        _set(study, system_b=a)
    assert "system_b" in caught.value.message_dict
    empty = build_study(slug="empty", n_sources=4)
    with pytest.raises(ValidationError) as caught:
        _set(study, pilot=empty)
    assert "pilot" in caught.value.message_dict


def test_the_state_is_the_per_source_difference_of_the_two_systems(study):
    _set(study)
    state = adaptive_state(study=study)
    # Eight laypeople through the fixed square (every source, rows 0–3 twice): each source has
    # answers of every system, so all 8 are paired.
    assert state.interval.n_sources == 8 and state.participants == 8
    assert state.interval.estimate is not None and state.interval.projected_width is not None


def _handout_queries(study: Study) -> int:
    person = _newcomer(study)
    with CaptureQueriesContext(connection) as seen:
        lay_survey_start(participant=person)
    return len(seen)


def test_a_newcomer_gets_a_row_at_a_constant_number_of_queries():
    small = build_answered_study(slug="small", n_sources=8, n_lay=4)
    large = build_answered_study(slug="large", n_sources=8, n_lay=12)
    for study in (small, large):
        _set(study, target_width=50.0, max_participants=400)
    assert _handout_queries(small) == _handout_queries(large)
    fixed = build_answered_study(slug="fixed", n_sources=8, n_lay=4)
    # Adaptive allocation reads the option, the answers and their keys: a handful more than the
    # fixed square's handout, whatever the study's size.
    assert _handout_queries(small) - _handout_queries(fixed) <= 12


def test_the_newcomers_rows_stay_whole_rows_of_the_square(study):
    _set(study, target_width=50.0, max_participants=400)
    rows = []
    for _ in range(6):
        person = _newcomer(study)
        items = lay_survey_start(participant=person)
        person.refresh_from_db()
        rows.append(person.latin_square_row)
        # Every source, one system each, balanced: each of the four systems on two sources.
        assigned = [item.assigned_system_id for item in items]
        assert len(items) == 8 and sorted(assigned.count(s) for s in set(assigned)) == [2, 2, 2, 2]
    assert all(0 <= row < 4 for row in rows)


def test_recruitment_closes_itself_once_the_target_is_reached_and_says_so_once(study):
    _set(study, target_width=50.0, max_participants=400, close_recruitment=True)
    assert adaptive_progress(study=study)["can_close"] is True
    for _ in range(2):
        with pytest.raises(StudyNotReady, match="all the answers it needs"):
            lay_survey_start(participant=_newcomer(study))
    assert study.activity.filter(verb="adaptive.recruitment_closed").count() == 1
    assert AdaptiveAllocation.objects.get(study=study).recruitment_closed_at is not None


def test_without_self_closing_the_study_keeps_recruiting_past_the_target(study):
    _set(study, target_width=50.0, max_participants=400)
    lay_survey_start(participant=_newcomer(study))
    assert not study.activity.filter(verb="adaptive.recruitment_closed").exists()


@pytest.fixture
def editor(django_user_model, study):
    user = django_user_model.objects.create_user("editor", password="pw")
    study_member_add(study=study, user=user, role="editor", actor="test")
    return user


def test_the_console_page_turns_it_on_and_refuses_an_unreachable_target_on_its_field(client, editor, study):
    client.force_login(editor)
    url = reverse("console:adaptive", args=[study.slug])
    assert 'id="adaptive-form"' in client.get(url).content.decode()
    data = {
        "outcome": "understanding",
        "system_a": "cot_sc",
        "system_b": "plain_bs",
        "target_width": "0.01",
        "max_participants": "10",
    }
    refused = client.post(url, data)
    assert refused.status_code == 400
    assert "cannot reach a width of 0.01" in refused.content.decode()
    assert not AdaptiveAllocation.objects.exists()
    done = client.post(url, {**data, "target_width": "50", "close_recruitment": "on"})
    assert done.status_code == 302
    option = AdaptiveAllocation.objects.get(study=study)
    assert option.enabled and option.close_recruitment
    assert study.activity.get(verb="adaptive.set").actor == editor
    progress = client.get(reverse("evaluation:study-progress", args=[study.slug])).content.decode()
    assert 'id="adaptive-table"' in progress and "The study can close" in progress
    client.post(url, {"action": "off"})
    assert not AdaptiveAllocation.objects.get(study=study).enabled


def test_the_command_sets_it_shows_it_and_refuses_what_the_planner_cannot_reach(study):
    args = [
        "--study",
        study.slug,
        "--outcome",
        "understanding",
        "--system",
        "cot_sc",
        "--against",
        "plain_bs",
    ]
    with pytest.raises(CommandError, match="target_width: The planner cannot reach"):
        call_command("adaptive_allocation", *args, "--target-width", "0.01", "--max-participants", "10")
    with pytest.raises(CommandError, match="--against: no system"):
        call_command(
            "adaptive_allocation", *args[:-1], "nope", "--target-width", "1", "--max-participants", "10"
        )
    out = io.StringIO()
    call_command("adaptive_allocation", *args, "--target-width", "50", "--max-participants", "40", stdout=out)
    assert "adaptive allocation on, cot_sc − plain_bs" in out.getvalue()
    assert study.activity.get(verb="adaptive.set").actor_label == "manage.py adaptive_allocation"
    out = io.StringIO()
    call_command("adaptive_allocation", "--study", study.slug, "--status", stdout=out)
    assert "can close" in out.getvalue()
