"""The radiologist survey flow (seed 003 Figure 5) in the browser. Views parse the request, call one
function of surveys/radiologist/, and render; access goes through annotation/access.py.

Every answer is saved the moment it is given (htmx autosave, one field per request) and the same
page form works without JavaScript (a plain POST saves the whole page). A closed study, the other
role's token, someone else's page and bad values all get a 4xx page or fragment, never a 500."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.utils import translation
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from annotation import answer_writes, participant_services, protocol_texts, scales
from annotation.access import access_expert_page
from annotation.models import ExpertItem, Participant
from annotation.qualification_gate import practice_first, practice_on_entry
from annotation.wording import protocol_wording
from surveys.entry import messages_of, survey_participant
from surveys.errors import survey_error_page
from surveys.radiologist import assignment, pages
from surveys.radiologist import selectors as progress
from surveys.survey_fragments import fragment_response

TEMPLATES = "surveys/radiologist/"


def _error(request: HttpRequest, message: str, status: int) -> HttpResponse:
    # An htmx autosave swaps its answer into the row's status, so it gets a fragment, not a page.
    if not request.htmx:
        return survey_error_page(request, message, status)
    return render(request, "surveys/_error_fragment.html", {"message": message}, status=status)


def _taking_part(participant: Participant) -> bool:
    # A radiologist takes part from "Begin" on (or from the first page they open).
    return participant.started_at is not None


def _elapsed_ms(request: HttpRequest, item_id: int) -> int:
    """A save's time: with JavaScript the ms since the page's last save (autosaves and submits send
    it); without, the time since the page was rendered (its signed stamp)."""
    if request.htmx or request.POST.get("elapsed_ms"):  # type: ignore[attr-defined]
        return pages.elapsed_ms_clean(request.POST.get("elapsed_ms"))
    return pages.page_stamp_elapsed_ms(
        item=ExpertItem(pk=int(item_id)), stamp=request.POST.get("rendered_at", "")
    )


@contextmanager
def _page_of(request: HttpRequest, *, token: str, item_id: int, require_open: bool) -> Iterator[ExpertItem]:
    """A page URL's page, resolved with its token in one query. A save's (a POST: an autosave or
    the submit) is its first statement: the save's transaction begins here and the look-up locks
    the page and adds the save's time (pages.expert_page_for_save); the view saves in that
    transaction, and what it answers after reading more (the submit's next page or its errors)
    it answers once the transaction ended (a deferred answer, surveys/entry.py)."""
    if request.method != "POST":
        yield access_expert_page(token=token, item_id=item_id, require_open=require_open)
        return
    added_ms = _elapsed_ms(request, item_id)
    with transaction.atomic():
        yield pages.expert_page_for_save(
            token=token, item_id=item_id, added_ms=added_ms, require_open=require_open
        )


# Resolve `token` to a radiologist of an open study and pass the participant on.
radiologist_flow = survey_participant(role=Participant.Role.RADIOLOGIST, error=_error, active=_taking_part)
# The same for a page URL: the token and the page in one query.
radiologist_page = survey_participant(
    role=Participant.Role.RADIOLOGIST, error=_error, active=_taking_part, page=_page_of
)


# Why a redirect landed on a page: the page then says so, with that page's own numbers.
WHY_FINISH = "finish"  # "Save and finish" while an earlier sentence is incomplete
WHY_RESUME = "resume"  # back from the instructions (or the invite link) to where the work is


def _redirect_resume(participant: Participant, *, why: str = "") -> HttpResponse:
    item = progress.expert_resume_item(participant=participant)
    if item is None:
        return redirect("surveys:expert-done", token=participant.token)
    url = reverse("surveys:expert-page", args=[participant.token, item.pk])
    if why == WHY_RESUME and progress.expert_progress(participant=participant).done == 0:
        why = ""  # a first start needs no explanation
    return redirect(f"{url}?why={why}" if why else url)


@require_GET
@never_cache
@radiologist_flow
def expert_start(request: HttpRequest, participant: Participant) -> HttpResponse:
    """The invite link lands here: instructions until the first page was opened, then the first
    incomplete page (resume), or the end page when all are done."""
    assignment.expert_pages_prepare(participant=participant)
    if participant.started_at is None:
        return redirect("surveys:expert-instructions", token=participant.token)
    if practising := practice_first(participant, flow="expert"):
        return practising
    return _redirect_resume(participant, why=WHY_RESUME)


@require_http_methods(["GET", "POST"])
@never_cache
@radiologist_flow
def expert_instructions(request: HttpRequest, participant: Participant) -> HttpResponse:
    study = participant.study
    # Every radiologist sees a consent text: the study's own, or radlay's default.
    consent_text = study.expert_consent_text.strip() or protocol_wording(
        "expert_consent", translation.get_language()
    )
    if request.method == "POST":
        if participant.consented_at is None:
            participant_services.participant_consent(participant=participant, accepted=True)
        participant_services.participant_touch(participant=participant)
        assignment.expert_pages_prepare(participant=participant)
        if practising := practice_on_entry(participant, flow="expert"):
            return practising
        return _redirect_resume(participant, why=WHY_RESUME)
    context = {
        "participant": participant,
        "study": study,
        "custom_instructions": study.expert_instructions.strip(),
        "consent_text": consent_text,
        "texts": protocol_texts,
        "severity_levels": scales.SEVERITY.levels,
        "progress": progress.expert_progress(participant=participant),
    }
    return render(request, TEMPLATES + "instructions.html", context)


def _page_context(participant: Participant, item: ExpertItem, page: pages.ExpertPage) -> dict:
    place = progress.expert_page_place(item=item)
    return {
        "participant": participant,
        "study": participant.study,
        "page": page,
        "item": item,
        "place": place,
        "progress": place.progress,
        "entry": progress.IndexEntry(
            item_id=item.pk, position=item.position, number=place.number, complete=page.complete
        ),
        "current": item.pk,
        "texts": protocol_texts,
        # The scales' points as the study's instrument words them, in the study's language.
        "likert_levels": page.wording.likert_levels,
        "severity_levels": page.wording.severity_levels,
    }


def _render_page(
    request: HttpRequest,
    participant: Participant,
    item: ExpertItem,
    *,
    errors: dict[str, list[str]] | None = None,
    show_missing: bool = False,
    status: int = 200,
) -> HttpResponse:
    page = pages.expert_page_get(item=item)
    why = request.GET.get("why", "") if not page.complete else ""
    # Rows are flagged after a submit attempt ("finish", ?missing=1) or when the rater left some
    # (back on a page begun earlier), never on a page the rater has not started.
    flagged = why == WHY_FINISH or (why == WHY_RESUME and page.started)
    context = _page_context(participant, item, page) | {
        "stamp": pages.page_stamp(item=item),
        "errors": sorted((errors or {}).items()),
        "show_missing": show_missing or flagged,
        "why": why,
        "comment_max_length": answer_writes.COMMENT_MAX_LENGTH,
    }
    return render(request, TEMPLATES + "page.html", context, status=status)


@require_http_methods(["GET", "POST"])
@never_cache
@radiologist_page
def expert_page(
    request: HttpRequest, participant: Participant, item: ExpertItem
) -> HttpResponse | Callable[[], HttpResponse]:
    """One source: GET shows it; an htmx POST autosaves the answers it carries; a plain POST
    saves the whole form and moves on (or shows what is missing)."""
    if practising := practice_first(participant, flow="expert"):
        if request.method == "POST":
            transaction.set_rollback(True)  # nothing saved: not the time the page's lock added either
        return practising
    if participant.started_at is None:
        participant_services.participant_touch(participant=participant)
    if request.method == "GET":
        return _render_page(request, participant, item, show_missing=request.GET.get("missing") == "1")
    if request.htmx:
        return _autosave(request, participant, item)
    return _submit(request, participant, item)


def _autosave(request: HttpRequest, participant: Participant, item: ExpertItem) -> HttpResponse:
    # The page is locked and its time added (_page_of); a refusal rolls that back with the rest.
    elapsed = _elapsed_ms(request, item.pk)
    try:
        page = pages.expert_page_save(
            participant=participant, item=item, data=request.POST, time_spent_ms=elapsed, locked=True
        )
    except ValidationError as exc:
        return render(request, "surveys/_error_fragment.html", {"messages": messages_of(exc)}, status=400)
    # Progress and the index entry change only with the page's completion; the save counted them
    # then (page.progress is None otherwise, and the fragment leaves them as they are: its HTML is
    # then decided by the page's completion and its missing answers alone, rendered once).
    if page.progress is None:
        return fragment_response(
            TEMPLATES + "_saved.html", {"page": page}, key=(page.complete, len(page.missing))
        )
    assert page.number is not None  # set with the progress
    context = {
        "page": page,
        "progress": page.progress,
        "entry": progress.IndexEntry(
            item_id=item.pk, position=item.position, number=page.number, complete=page.complete
        ),
        "current": item.pk,
        "page_base": _page_base(participant),
    }
    return render(request, TEMPLATES + "_saved.html", context)


def _submit(request: HttpRequest, participant: Participant, item: ExpertItem) -> Callable[[], HttpResponse]:
    """Save the whole form in the transaction that locked the page (_page_of); where to go next,
    or the page with what was refused, is answered once that transaction ended (committed, or
    rolled back by the refusal: nothing of the page was saved)."""
    try:
        page = pages.expert_page_save(
            participant=participant,
            item=item,
            data=request.POST,
            time_spent_ms=_elapsed_ms(request, item.pk),
            locked=True,
        )
    except ValidationError as exc:
        errors = exc.message_dict if hasattr(exc, "error_dict") else {"page": exc.messages}
        return lambda: _render_page(request, participant, item, errors=errors, status=400)
    return lambda: _after_submit(request, participant, item, page)


def _after_submit(
    request: HttpRequest, participant: Participant, item: ExpertItem, page: pages.ExpertPage
) -> HttpResponse:
    place = progress.expert_page_place(item=item)
    action = request.POST.get("action", "next")
    if action == "previous" and place.previous_id is not None:
        return redirect("surveys:expert-page", token=participant.token, item_id=place.previous_id)
    if action == "skip" and place.following_id is not None:
        return redirect("surveys:expert-page", token=participant.token, item_id=place.following_id)
    if not page.complete:
        # Post/redirect/get, so a reload of the "what is missing" page does not re-post the form.
        suffix = "?missing=1" if action == "next" else ""
        return redirect(reverse("surveys:expert-page", args=[participant.token, item.pk]) + suffix)
    if place.following_id is not None:
        return redirect("surveys:expert-page", token=participant.token, item_id=place.following_id)
    return _redirect_resume(participant, why=WHY_FINISH)


def _page_base(participant: Participant) -> str:
    # One reverse for every link of the index: the page URL of item 0 without the "0/".
    return reverse("surveys:expert-page", args=[participant.token, 0])[:-2]


def _index_context(participant: Participant, start: int) -> dict:
    total = progress.expert_progress(participant=participant).total
    size = progress.INDEX_PAGE_SIZE
    start = max(0, min(start - start % size, max(0, total - 1) // size * size))
    return {
        "index": progress.expert_index(participant=participant, start=start, count=size),
        "index_earlier": start - size if start > 0 else None,
        "index_later": start + size if start + size < total else None,
        "index_total": total,
        "page_base": _page_base(participant),
    }


@require_GET
@never_cache
@radiologist_flow
def expert_index(request: HttpRequest, participant: Participant) -> HttpResponse:
    """The list of all sentences, 200 at a time: loaded into a rating page when its "All sentences"
    box is opened (htmx), or a page of its own without JavaScript."""
    try:
        start = int(request.GET.get("from", 0))
    except ValueError:
        start = 0
    current = request.GET.get("current", "")
    context = _index_context(participant, start) | {
        "participant": participant,
        "study": participant.study,
        "current": int(current) if current.isdigit() else None,
        "lazy_links": bool(request.htmx),
        "texts": protocol_texts,
    }
    template = TEMPLATES + ("index.html#entries" if request.htmx else "index.html")
    return render(request, template, context)


@require_GET
@never_cache
@radiologist_flow
def expert_done(request: HttpRequest, participant: Participant) -> HttpResponse:
    assignment.expert_pages_prepare(participant=participant)
    if progress.expert_resume_item(participant=participant) is not None:
        return _redirect_resume(participant, why=WHY_FINISH)
    participant_services.participant_complete(participant=participant)
    context = _index_context(participant, 0) | {
        "participant": participant,
        "study": participant.study,
        "progress": progress.expert_progress(participant=participant),
        "current": None,
        "texts": protocol_texts,
    }
    return render(request, TEMPLATES + "done.html", context)


# --- Radiologists with accounts ----------------------------------------------------------------------

expert_login = auth_views.LoginView.as_view(
    template_name=TEMPLATES + "login.html",
    next_page=reverse_lazy("surveys:expert-studies"),
    redirect_authenticated_user=True,
)
expert_logout = auth_views.LogoutView.as_view(next_page=reverse_lazy("surveys:expert-login"))


@require_GET
@never_cache
@login_required(login_url=reverse_lazy("surveys:expert-login"))
def expert_studies(request: HttpRequest) -> HttpResponse:
    participations = progress.expert_participations(user=request.user)
    return render(request, TEMPLATES + "studies.html", {"participations": participations})
