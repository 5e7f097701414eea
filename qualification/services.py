"""The participant's side of the qualification round: entering it, starting an attempt, answering a
practice item (checked as a real answer is, scored against its gold) and the outcome of an attempt
under the rule. Practice answers are written to PracticeAnswer only."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotation import qualification_states as states
from annotation.activity_services import activity_record
from annotation.item_questions import item_refusal
from annotation.models import Participant
from instruments.answers import InvalidAnswer, item_value_validate
from instruments.practice import gold_data
from instruments.schema import ItemKind
from qualification.models import PracticeAnswer, QualificationAttempt, QualificationRule
from qualification.practice_scoring import AttemptOutcome, PassRule, attempt_outcome, practice_score
from qualification.selectors import PracticeRound, participant_group, practice_round, rule_of

ACTOR = "participant"


def _state_set(participant: Participant, state: str, **extra: Any) -> None:
    Participant.objects.filter(pk=participant.pk).update(qualification=state, **extra)
    participant.qualification = state
    for name, value in extra.items():
        setattr(participant, name, value)


def qualification_enter(*, participant: Participant, flow: str) -> bool:
    """Called where a participant enters `flow` (after consent): a participant with no round yet is
    made due when the study has a rule for their flow and group and the flow has practice items for
    it. True when the participant must practise (or was screened out by the round) before any real
    page."""
    if participant.qualification == states.NONE:
        group = participant_group(participant)
        rule = rule_of(study=participant.study, flow=flow, group=group)
        if rule is not None and len(practice_round(study=participant.study, flow=flow, group=group)):
            _state_set(participant, states.DUE)
    return participant.qualification in states.GATED


def rule_pass(rule: QualificationRule) -> PassRule:
    return PassRule(share_percent=rule.share_percent, retries=rule.retries, min_seconds=rule.min_seconds)


def may_start(*, rule: QualificationRule, finished: int) -> bool:
    """Whether another attempt may start after `finished` failed ones."""
    return rule.on_fail == QualificationRule.OnFail.RETRY or finished < rule_pass(rule).attempts


@transaction.atomic
def attempt_start(*, participant: Participant, flow: str) -> QualificationAttempt:
    """Start the next attempt, or return the one still open. Refused once the rule allows no more."""
    Participant.objects.select_for_update().filter(pk=participant.pk).first()
    open_one = QualificationAttempt.objects.filter(
        participant=participant, flow=flow, finished_at__isnull=True
    ).first()
    if open_one is not None:
        return open_one
    if participant.qualification != states.DUE:
        raise ValidationError("There is no practice round to take now.")
    group = participant_group(participant)
    rule = rule_of(study=participant.study, flow=flow, group=group)
    found = practice_round(study=participant.study, flow=flow, group=group)
    finished = QualificationAttempt.objects.filter(participant=participant, flow=flow).count()
    if rule is None or not len(found):
        raise ValidationError("This study has no practice round for you.")
    if not may_start(rule=rule, finished=finished):
        raise ValidationError("No further attempt is allowed.")
    assert found.current is not None  # a round with items has its instrument
    instrument = found.current.instrument
    return QualificationAttempt.objects.create(
        participant=participant,
        flow=flow,
        rater_group=group,
        number=finished + 1,
        instrument_id=found.current.row_id,
        instrument_key=instrument.key,
        instrument_version=instrument.version,
        started_at=timezone.now(),
        total=len(found),
        needed=rule_pass(rule).needed(len(found)),
    )


def _raw(item_kind: ItemKind, data: Any, field: str) -> object:
    if item_kind is ItemKind.MULTIPLE_CHOICE:
        return data.getlist(field)
    raw = data.get(field, "")
    if item_kind is ItemKind.ERROR_SPANS:
        if not raw:
            return []
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


@transaction.atomic
def practice_answer_save(
    *, participant: Participant, attempt: QualificationAttempt, key: str, data: Any, language: str
) -> PracticeAnswer:
    """Check and score the answer to practice item `key` (`data`: the posted form, the item's field
    named "answer"); the attempt's outcome follows its last answer. An item already answered in the
    attempt keeps its first answer (the explanation was shown)."""
    attempt = QualificationAttempt.objects.select_for_update().get(pk=attempt.pk)
    if attempt.finished_at is not None:
        raise ValidationError("This attempt is over.")
    found = practice_round(study=participant.study, flow=attempt.flow, group=attempt.rater_group)
    pair = found.entry(key)
    if pair is None:
        raise ValidationError({"answer": "Not a practice item of this round."})
    entry, item = pair
    existing = attempt.answers.filter(practice_key=key).first()
    if existing is not None:
        return existing
    text = entry.text.get(language, "")
    try:
        value = item_value_validate(
            item,
            _raw(item.kind, data, "answer"),
            text_length=len(text) if item.kind is ItemKind.ERROR_SPANS else None,
        )
    except InvalidAnswer as refused:
        raise ValidationError({"answer": item_refusal(refused)}) from None
    if value is None and item.kind is not ItemKind.ERROR_SPANS:
        raise ValidationError({"answer": item_refusal(InvalidAnswer(item.key, "required"))})
    score = practice_score(item, entry, value if value is not None else (), language=language)
    stored = PracticeAnswer.objects.create(
        attempt=attempt,
        practice_key=key,
        item_key=item.key,
        position=attempt.answers.count(),
        value=_json(value),
        correct=score.correct,
        measure=score.measure,
        language=language,
    )
    if attempt.answers.count() >= attempt.total:
        _attempt_finish(participant=participant, attempt=attempt)
    return stored


def _json(value: object) -> object:
    if isinstance(value, frozenset):
        return sorted(value)
    if isinstance(value, tuple):
        return [
            {"start": s.start, "end": s.end, "category": s.category, "severity": s.severity} for s in value
        ]
    return value


def _attempt_finish(*, participant: Participant, attempt: QualificationAttempt) -> None:
    rule = rule_of(study=participant.study, flow=attempt.flow, group=attempt.rater_group)
    now = timezone.now()
    correct = attempt.answers.filter(correct=True).count()
    seconds = (now - attempt.started_at).total_seconds()
    if rule is None:  # the team removed the rule during the attempt: the round no longer applies
        outcome = AttemptOutcome(True, correct, attempt.total, attempt.needed, too_fast=False)
    else:
        outcome = attempt_outcome(rule_pass(rule), correct=correct, total=attempt.total, seconds=seconds)
    attempt.finished_at, attempt.correct, attempt.seconds = now, correct, seconds
    attempt.passed, attempt.too_fast = outcome.passed, outcome.too_fast
    attempt.save(update_fields=["finished_at", "correct", "seconds", "passed", "too_fast"])
    verb = "qualification.passed"
    if outcome.passed:
        _state_set(participant, states.PASSED)
    elif rule is not None and may_start(rule=rule, finished=attempt.number):
        verb = "qualification.failed_attempt"
    elif rule is not None and rule.on_fail == QualificationRule.OnFail.SCREEN_OUT:
        _state_set(participant, states.FAILED, screened_out_at=now)
        verb = "qualification.screened_out"
    else:
        _state_set(participant, states.FLAGGED)
        verb = "qualification.flagged"
    activity_record(
        study=participant.study,
        actor=ACTOR,
        verb=verb,
        obj=attempt,
        details={
            "flow": attempt.flow,
            "group": attempt.rater_group,
            "attempt": attempt.number,
            "correct": correct,
            "total": attempt.total,
            "needed": attempt.needed,
            "seconds": round(seconds, 1),
            "too_fast": outcome.too_fast,
        },
    )


def gold_shown(found: PracticeRound, key: str, language: str) -> object:
    pair = found.entry(key)
    if pair is None:
        return None
    entry, item = pair
    return gold_data(entry, item, language)
