"""The practice pages of the qualification round, before a flow's first real page: one practice
item a page, then whether the answer was within tolerance, the gold answer and the explanation;
the outcome under the rule (retry, screened out with the recruiter's return link, or on, flagged).
Views parse, call one service or selector, and render."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from annotation import qualification_states as states
from annotation.models import Participant
from qualification import services
from qualification.models import QualificationRule
from qualification.pages import practice_page
from qualification.selectors import FLOW_ENTRY, attempts_of, participant_group, practice_round, rule_of
from surveys.entry import messages_of, survey_participant
from surveys.errors import survey_error_page

TEMPLATE = "qualification/practice.html"

practising = survey_participant(role=None, error=survey_error_page)


@require_http_methods(["GET", "POST"])
@never_cache
@practising
def practice(request: HttpRequest, participant: Participant, flow: str) -> HttpResponse:
    if flow not in FLOW_ENTRY:
        raise Http404("No practice round here.")
    study = participant.study
    group = participant_group(participant)
    found = practice_round(study=study, flow=flow, group=group)
    rule = rule_of(study=study, flow=flow, group=group)
    wanted = translation.get_language() or study.language
    language = found.current.language(wanted) if found.current is not None else wanted
    continue_url = reverse(FLOW_ENTRY[flow], args=[participant.token])
    if request.method == "POST":
        return _post(request, participant, flow, found, language)
    attempts = attempts_of(participant=participant, flow=flow)
    if not attempts and participant.qualification not in states.GATED:
        return redirect(continue_url)
    context = {
        "participant": participant,
        "study": study,
        "flow": flow,
        "rule": rule,
        "round_size": len(found),
        "needed": attempts[-1].needed
        if attempts
        else (services.rule_pass(rule).needed(len(found)) if rule else 0),
        "attempts": attempts,
        "state": participant.qualification,
        "continue_url": continue_url,
        "screen_out_url": (rule.screen_out_redirect_url if rule else "") or study.screened_out_redirect_url,
    }
    last = attempts[-1] if attempts else None
    shown_key = request.GET.get("shown", "")
    if last is not None and shown_key:
        answer = next((a for a in last.answers.all() if a.practice_key == shown_key), None)
        pair = found.entry(shown_key)
        if answer is not None and pair is not None:
            context["page"] = practice_page(
                found, *pair, language=language, number=answer.position + 1, answer=answer
            )
            context["attempt"] = last
            return render(request, TEMPLATE, context)
    if last is not None and last.finished_at is None:
        answered = {a.practice_key for a in last.answers.all()}
        entry, item = next(pair for pair in found.entries if pair[0].key not in answered)
        context["page"] = practice_page(found, entry, item, language=language, number=len(answered) + 1)
        context["attempt"] = last
        return render(request, TEMPLATE, context)
    context["may_retry"] = (
        participant.qualification == states.DUE
        and rule is not None
        and services.may_start(rule=rule, finished=len(attempts))
    )
    context["on_fail"] = rule.on_fail if rule else QualificationRule.OnFail.RETRY
    return render(request, TEMPLATE, context)


def _post(request: HttpRequest, participant: Participant, flow: str, found, language: str) -> HttpResponse:
    here = reverse("qualification:practice", args=[participant.token, flow])
    try:
        attempt = services.attempt_start(participant=participant, flow=flow)
    except ValidationError as refused:
        return survey_error_page(request, " ".join(messages_of(refused)), 409)
    if request.POST.get("action") == "start":
        return redirect(here)
    key = request.POST.get("key", "")
    try:
        services.practice_answer_save(
            participant=participant, attempt=attempt, key=key, data=request.POST, language=language
        )
    except ValidationError as refused:
        pair = found.entry(key)
        if pair is None:
            return survey_error_page(request, " ".join(messages_of(refused)), 400)
        page = practice_page(found, *pair, language=language, number=attempt.answers.count() + 1)
        page.question.errors = messages_of(refused)
        context = {
            "participant": participant,
            "study": participant.study,
            "flow": flow,
            "page": page,
            "attempt": attempt,
            "round_size": len(found),
            "state": participant.qualification,
        }
        return render(request, TEMPLATE, context, status=400)
    return redirect(f"{here}?shown={key}")
