"""The rate-each-pair flow in the browser (docs/guide/rate-each-pair-flow.md). Views parse the
request, call one function of surveys/rate_each_pair/, and render.

Every answer is saved as it is given (autosave of static/radlay/survey.js, the controls that
changed) and the page form works without JavaScript (a plain POST saves the whole page). A closed
study, another flow's token, a text not in the participant's survey and bad values all get a 4xx
page or fragment, never a 500."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from annotation import participant_services
from annotation.access import WrongFlow
from annotation.models import Participant
from annotation.qualification_gate import practice_first, practice_on_entry
from surveys.entry import activity_touch, messages_of, survey_participant
from surveys.errors import survey_error_page
from surveys.lay.entry import lay_completion_url
from surveys.rate_each_pair import pages
from surveys.rate_each_pair import selectors as design
from surveys.survey_page import page_elapsed_ms, render_stamp

TEMPLATES = "surveys/rate_each_pair/"
STAMP_SALT = "radlay.pairs.page"

# radlay's own wording (no paper publishes one), shown when the study has no consent text of its
# own for the participant's role; in the participant's language (the catalogue has it whole).
PAIRS_CONSENT_DEFAULT = gettext_lazy(
    """\
You are invited to take part in a research study on making medical texts easier to understand.

What you will do: on each page you will read a text and the text it was made from (or a reference \
text), and answer the questions shown about them.

Your answers: they are stored under a random code, not your name, and are reported as group \
results or under that code.

Taking part is voluntary. You may stop at any time without giving a reason. If you have questions \
about the study, please contact the research team that invited you.

By choosing "I agree" you confirm that you have read this information and agree to take part."""
)


def _autosave(request: HttpRequest) -> bool:
    # django-htmx's HtmxMiddleware sets `htmx` on the request; HttpRequest's type does not declare it.
    return bool(getattr(request, "htmx", False))


def _error(request: HttpRequest, message: str, status: int) -> HttpResponse:
    if not _autosave(request):
        return survey_error_page(request, message, status)
    return render(request, "surveys/_error_fragment.html", {"message": message}, status=status)


def _in_pairs_flow(participant: Participant) -> Participant:
    if not design.pairs_participant(participant):
        raise WrongFlow(participant, WrongFlow.PAIRS_FLOW)
    return participant


# Activity is recorded by the saves (and consent), never by a GET: reading a page writes nothing.
pairs_flow = survey_participant(role=None, error=_error, refused=(pages.PairsFlowError,))


def _consent_text(participant: Participant) -> str:
    study = participant.study
    own = study.expert_consent_text if participant.is_radiologist else study.lay_consent_text
    return own.strip() or str(PAIRS_CONSENT_DEFAULT)


def _page_url(participant: Participant, pair: design.Pair) -> str:
    return reverse("surveys:pairs-page", args=[participant.token, pair.shown_text_id])


def _resume(participant: Participant, *, missing: bool = False) -> HttpResponse:
    pair = pages.pairs_resume(participant=participant)
    if pair is None:
        return redirect("surveys:pairs-done", token=participant.token)
    return redirect(_page_url(participant, pair) + ("?missing=1" if missing else ""))


@require_GET
@never_cache
@pairs_flow
def pairs_start(request: HttpRequest, participant: Participant) -> HttpResponse:
    """The invite link lands here: consent first, then the first page not finished."""
    _in_pairs_flow(participant)
    if participant.consented_at is None or participant.declined_at is not None:
        return redirect("surveys:pairs-consent", token=participant.token)
    if practising := practice_first(participant, flow="pairs"):
        return practising
    return _resume(participant)


@require_http_methods(["GET", "POST"])
@never_cache
@pairs_flow
def pairs_consent(request: HttpRequest, participant: Participant) -> HttpResponse:
    _in_pairs_flow(participant)
    study = participant.study
    if request.method == "POST":
        if request.POST.get("choice") == "decline":
            participant_services.participant_consent(participant=participant, accepted=False)
            return render(request, TEMPLATES + "declined.html", {"participant": participant, "study": study})
        pages.pairs_consent_accept(participant=participant)
        if practising := practice_on_entry(participant, flow="pairs"):
            return practising
        return _resume(participant)
    items = design.pairs_page_items(study=study, group=design.rater_group(participant))
    instruments = {page_item.asked.instrument.key: page_item.asked.instrument for page_item in items}
    descriptions = [
        design.worded(i.description, design.participant_language(participant, i), i.default_language)
        for i in instruments.values()
    ]
    context = {
        "participant": participant,
        "study": study,
        "consent_text": _consent_text(participant),
        "instructions": (
            study.expert_instructions if participant.is_radiologist else study.lay_instructions
        ).strip(),
        "descriptions": [d for d in descriptions if d],
        "citations": sorted({design.citation_short(i.citation) for i in instruments.values()}),
        "progress": pages.pairs_progress(participant=participant),
    }
    return render(request, TEMPLATES + "consent.html", context)


def _pair(participant: Participant, text_id: int) -> design.Pair:
    pair = design.pair_of(participant=participant, shown_text_id=text_id)
    if pair is None:
        raise Http404(_("This text is not part of your survey."))
    return pair


def _render_page(
    request: HttpRequest,
    participant: Participant,
    pair: design.Pair,
    *,
    posted=None,  # noqa: ANN001 - the refused QueryDict
    errors: dict[str, list[str]] | None = None,
    status: int = 200,
) -> HttpResponse:
    state = pages.pair_page_get(participant=participant, pair=pair, posted=posted, errors=errors)
    context = {
        "participant": participant,
        "study": participant.study,
        "state": state,
        "progress": pages.pairs_progress(participant=participant),
        "errors": errors or {},
        "show_missing": request.GET.get("missing") == "1" or bool(errors),
        "stamp": render_stamp(salt=STAMP_SALT, page={"text": pair.shown_text_id}),
        "lists_field": pages.LISTS_FIELD,
        "citations": state.citations,
    }
    return render(request, TEMPLATES + "page.html", context, status=status)


@require_http_methods(["GET", "POST"])
@never_cache
@pairs_flow
def pairs_page(request: HttpRequest, participant: Participant, text_id: int) -> HttpResponse:
    """One pair: GET shows it; an autosave POST stores the answers it carries; a plain POST stores
    the whole page and moves on (or shows what is missing)."""
    _in_pairs_flow(participant)
    if participant.consented_at is None or participant.declined_at is not None:
        if request.method == "POST":
            raise pages.PairsFlowError(_("Please read and agree to the study information first."))
        return redirect("surveys:pairs-consent", token=participant.token)
    if practising := practice_first(participant, flow="pairs"):
        return practising
    pair = _pair(participant, text_id)
    if request.method == "GET":
        return _render_page(request, participant, pair)
    elapsed = page_elapsed_ms(
        salt=STAMP_SALT,
        page={"text": pair.shown_text_id},
        stamp=request.POST.get("rendered_at", ""),
        client_ms=request.POST.get("elapsed_ms"),
    )
    whole_page = not _autosave(request)
    activity_touch(participant)
    try:
        pages.pair_answers_save(
            participant=participant,
            pair=pair,
            data=request.POST,
            time_spent_ms=elapsed,
            whole_page=whole_page,
        )
    except pages.PairsFlowError:
        raise
    except ValidationError as exc:
        if _autosave(request):
            return render(request, "surveys/_error_fragment.html", {"messages": messages_of(exc)}, status=400)
        errors = exc.message_dict if hasattr(exc, "error_dict") else {"page": exc.messages}
        return _render_page(request, participant, pair, posted=request.POST, errors=errors, status=400)
    if _autosave(request):
        progress = pages.pairs_progress(participant=participant)
        return render(request, TEMPLATES + "_saved.html", {"progress": progress, "oob": True})
    return _after_submit(request, participant, pair)


def _after_submit(request: HttpRequest, participant: Participant, pair: design.Pair) -> HttpResponse:
    state = pages.pair_page_get(participant=participant, pair=pair)
    action = request.POST.get("action", "next")
    if action == "previous" and state.previous_id is not None:
        return redirect("surveys:pairs-page", token=participant.token, text_id=state.previous_id)
    if action == "skip" and state.following_id is not None:
        return redirect("surveys:pairs-page", token=participant.token, text_id=state.following_id)
    if not state.complete:
        return redirect(_page_url(participant, pair) + "?missing=1")
    if state.following_id is not None:
        return redirect("surveys:pairs-page", token=participant.token, text_id=state.following_id)
    return _resume(participant, missing=True)


@require_GET
@never_cache
@pairs_flow
def pairs_done(request: HttpRequest, participant: Participant) -> HttpResponse:
    _in_pairs_flow(participant)
    if participant.consented_at is None:
        return redirect("surveys:pairs-consent", token=participant.token)
    if practising := practice_first(participant, flow="pairs"):
        return practising
    if pages.pairs_resume(participant=participant) is not None:
        return _resume(participant, missing=True)
    participant_services.participant_complete(participant=participant)
    context = {
        "participant": participant,
        "study": participant.study,
        "progress": pages.pairs_progress(participant=participant),
        "completion_url": lay_completion_url(participant=participant),
    }
    return render(request, TEMPLATES + "done.html", context)
