"""Getting into and out of the lay survey: the recruitment link and consent, background
questions, attention checks, and completion.

Completion URL: `Study.completion_redirect_url` is used as given (e.g. Prolific's
`https://app.prolific.com/submissions/complete?cc=ABC123`, whose code the researcher sets on
Prolific); a `{code}` placeholder in it is replaced by the participant's own completion code.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from datetime import timedelta
from typing import Any
from urllib.parse import quote

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation import participant_services
from annotation.models import (
    COMPLETION_CODE_PLACEHOLDER,
    AttentionCheck,
    AttentionCheckResponse,
    Participant,
    Study,
)
from surveys.lay.errors import LayFlowError
from surveys.lay.selectors import lay_background_questions
from surveys.lay.steps import COMPLETE, lay_next_step
from surveys.survey_page import free_text_clean

RECRUITMENT_PARAMS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")
MAX_BACKGROUND_ANSWER = 500
MAX_CHECK_ANSWER = 200
JOIN_RACE_SECONDS = 10


# --- Recruitment link, consent -------------------------------------------------------------------------


def recruitment_clean(params: Mapping[str, Any]) -> dict[str, str]:
    """The recruiter's query parameters (Prolific style); refuses odd values."""
    clean = {}
    for name in RECRUITMENT_PARAMS:
        value = (params.get(name) or "").strip()
        if not value:
            continue
        if len(value) > 200 or not all(ch.isalnum() or ch in "-_.@" for ch in value):
            raise ValidationError({name: _("The link's %(name)s is not valid.") % {"name": name}})
        clean[name] = value
    return clean


def lay_join_existing(*, study: Study, recruitment: Mapping[str, str]) -> Participant | None:
    pid = recruitment.get("PROLIFIC_PID", "")
    if not pid:
        return None
    return Participant.objects.select_related("study").filter(study=study, external_id=pid).first()


def lay_resume_allowed(
    *,
    participant: Participant,
    recruitment: Mapping[str, str],
    started_in_this_browser: bool,
    agreeing: bool = False,
) -> bool:
    """May the holder of this recruitment link take over `participant` (whose PROLIFIC_PID it
    names)? A participant ID is not a secret (it shows in URLs, screenshots and the recruiter's
    records), so it alone never resumes. The browser that started does (its join cookie), and so
    does Prolific's SESSION_ID of the same submission: Prolific appends the same PROLIFIC_PID,
    STUDY_ID and SESSION_ID each time the participant opens the study from their account.

    One exception keeps a double-click working on a link without SESSION_ID: an "I agree"
    (`agreeing`) within JOIN_RACE_SECONDS of the participant's creation is the same person's second
    submission, sent before the first one's answer (and its cookie) arrived."""
    if started_in_this_browser:
        return True
    if agreeing and participant.created_at >= timezone.now() - timedelta(seconds=JOIN_RACE_SECONDS):
        return True
    stored = participant.recruitment or {}
    session = stored.get("SESSION_ID", "")
    return bool(session) and all(
        hmac.compare_digest(recruitment.get(name, "").encode(), stored.get(name, "").encode())
        for name in ("SESSION_ID", "STUDY_ID")
    )


def lay_participant_join(*, study: Study, recruitment: Mapping[str, str]) -> Participant:
    """The participant behind a recruitment link who has just consented: the one with this PID if
    any (resume, never a second participant), else a new one, consented. Simultaneous joins all
    succeed (pseudonyms are numbered under the study row lock); two racing first requests with the
    same PID make one participant (the unique constraint on (study, external_id) decides and the
    loser takes the winner's)."""
    pid = recruitment.get("PROLIFIC_PID", "")
    participant = lay_join_existing(study=study, recruitment=recruitment)
    if participant is None:
        try:
            with transaction.atomic():
                participant = participant_services.participant_create(
                    study=study, role=Participant.Role.LAYPERSON, external_id=pid, recruitment=recruitment
                )
        except IntegrityError:
            participant = lay_join_existing(study=study, recruitment=recruitment)
            if participant is None:
                raise
    if participant.role != Participant.Role.LAYPERSON:
        raise LayFlowError(_("This link is for laypeople; your participant ID belongs to another role."))
    participant_services.participant_consent(participant=participant, accepted=True)
    participant_services.participant_touch(participant=participant)
    return participant


# --- Background questions --------------------------------------------------------------------------------


def lay_background_save(*, participant: Participant, data: Mapping[str, Any]) -> Participant:
    """Store the answers (every question is optional: unanswered ones are stored as "")."""
    answers: dict[str, str] = {}
    for question in lay_background_questions(study=participant.study):
        value = free_text_clean(question.key, data.get(question.key), max_length=MAX_BACKGROUND_ANSWER)
        if question.options and value and value not in question.options:
            raise ValidationError(
                {question.key: _("%(value)r is not one of the options.") % {"value": value}}
            )
        answers[question.key] = value
    participant.background = {**participant.background, **answers}
    participant.save(update_fields=["background"])
    return participant


# --- Attention checks ------------------------------------------------------------------------------------


def _normalized(answer: str) -> str:
    return " ".join(answer.split()).casefold()


def attention_check_answer(
    *, participant: Participant, check: AttentionCheck, answer: str
) -> AttentionCheckResponse:
    """Record an attention-check answer and whether it matches the expected one (case and spacing
    ignored). The participant is not told. Answering again updates the one response."""
    if check.study_id != participant.study_id:
        raise ValidationError("This check belongs to another study.")
    answer = free_text_clean("answer", answer, max_length=MAX_CHECK_ANSWER)
    if not answer:
        raise ValidationError({"answer": _("Please answer this question.")})
    if check.options and answer not in [str(o) for o in check.options]:
        raise ValidationError({"answer": _("%(value)r is not one of the options.") % {"value": answer}})
    passed = _normalized(answer) == _normalized(check.expected_answer)
    try:
        with transaction.atomic():
            response, _created = AttentionCheckResponse.objects.update_or_create(
                participant=participant, check_item=check, defaults={"answer": answer, "passed": passed}
            )
    except IntegrityError:  # two racing first answers: the loser updates the winner's row
        response = AttentionCheckResponse.objects.get(participant=participant, check_item=check)
        response.answer, response.passed = answer, passed
        response.save()
    if not passed:
        participant_screen_out_check(participant=participant)
    return response


def participant_screen_out_check(*, participant: Participant) -> bool:
    """Screen the participant out when the study says so (`Study.screen_out_after_failed_checks`,
    off by default; Prolific's rule is two failed checks) and they have failed that many: their
    survey ends (lay_standing: SCREENED) and their answers are left out of the analysis
    (annotation.selectors.analysed_participants). Returns whether they are screened out."""
    limit = participant.study.screen_out_after_failed_checks
    if participant.screened_out_at is not None:
        return True
    if not limit:
        return False
    failed = AttentionCheckResponse.objects.filter(participant=participant, passed=False).count()
    if failed < limit:
        return False
    now = timezone.now()
    Participant.objects.filter(pk=participant.pk, screened_out_at__isnull=True).update(screened_out_at=now)
    participant.screened_out_at = now
    return True


# --- Completion ------------------------------------------------------------------------------------------


def lay_survey_complete(*, participant: Participant) -> Participant:
    if lay_next_step(participant=participant).kind != COMPLETE:
        raise LayFlowError(_("The survey is not finished yet."))
    return participant_services.participant_complete(participant=participant)


def lay_completion_url(*, participant: Participant) -> str:
    url = participant.study.completion_redirect_url
    return (
        url.replace(COMPLETION_CODE_PLACEHOLDER, quote(participant.completion_code, safe="")) if url else ""
    )
