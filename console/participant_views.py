"""The console's participants page: invite either role in bulk (labels R001…/L001…, names and
e-mails for radiologists), each participant's status, progress, last activity and link, the links
as CSV, a new link for one participant, withdrawing one (their answers deleted after a confirmation
that counts them), and the open recruitment link with Prolific's parameters. Editors and owners
(the page shows links, names and e-mails: identifying, never for viewers)."""

from __future__ import annotations

from typing import cast

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.access import access_study, researcher_login_required
from annotation.models import Participant, Study
from annotation.participant_services import (
    LINK_COLUMNS,
    MAX_INVITES,
    invite_contacts_parse,
    participant_answer_counts,
    participant_link_regenerate,
    participant_links_export,
    participant_withdraw,
)
from console.participant_selectors import participants_table, recruitment_link
from evaluation.exports import csv as csv_exporter
from evaluation.services import analysis_snapshot_request
from studies.rater_groups import default_group, invite_group, invite_groups


class InviteForm(forms.Form):
    role = forms.ChoiceField(
        choices=Participant.Role.choices,
        label="Rater group",
        help_text="The groups the study's instruments ask, with how many each has.",
    )
    count = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_INVITES, help_text="How many links to create."
    )
    contacts = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        label="Names and e-mails (radiologists, optional)",
        help_text="One radiologist per line: “Name, e-mail”, a name or an e-mail. One link is created per "
        "line; leave the count empty.",
    )

    def __init__(self, *args, study: Study, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # A list, never free text: the rater groups of the study's instruments (annotation/
        # rater_groups.py), each with its count; a group that is not a role says which role it is.
        role = cast(forms.ChoiceField, self.fields["role"])
        role.choices = [(g.value, g.label) for g in invite_groups(study=study)]

    def clean(self):
        super().clean()
        data = self.cleaned_data
        if not self.errors and not data.get("count") and not (data.get("contacts") or "").strip():
            self.add_error("count", "Give how many to invite, or their names and e-mails.")
        return data


def _link(request: HttpRequest, token: str) -> str:
    return request.build_absolute_uri(reverse("surveys:entry", args=[token]))


def _page(request: HttpRequest, study: Study, form: InviteForm, *, status: int = 200) -> HttpResponse:
    context = {
        "study": study,
        "form": form,
        "rows": participants_table(study=study, link_of=lambda token: _link(request, token)),
        "recruitment_link": recruitment_link(study=study, absolute=request.build_absolute_uri),
    }
    return render(request, "console/participants.html", context, status=status)


def _participant(study: Study, participant_id: int) -> Participant:
    found = Participant.objects.filter(study=study, pk=participant_id).select_related("study").first()
    if found is None:
        raise Http404("No such participant in this study.")
    return found


@researcher_login_required
@require_GET
def participants(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    return _page(request, study, InviteForm(study=study, initial={"role": default_group(study=study)}))


@researcher_login_required
@require_POST
def participants_invite(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    form = InviteForm(request.POST, study=study)
    if form.is_valid():
        try:
            contacts = invite_contacts_parse(form.cleaned_data["contacts"] or "")
            invited = invite_group(
                study=study,
                value=form.cleaned_data["role"],
                count=form.cleaned_data["count"] or 0,
                contacts=contacts,
                actor=request.user,
            )
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            labels = ", ".join(p.pseudonym for p in invited)
            messages.success(request, f"{len(invited)} invited: {labels}.")
            return redirect("console:participants", slug=study.slug)
    return _page(request, study, form, status=400)


@researcher_login_required
@require_GET
def participants_links_csv(request: HttpRequest, slug: str) -> StreamingHttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    rows = participants_table(study=study, link_of=lambda token: _link(request, token))
    lines = participant_links_export(study=study, rows=rows, actor=request.user)
    response = StreamingHttpResponse(
        csv_exporter.stream(lines, LINK_COLUMNS), content_type=csv_exporter.CONTENT_TYPE
    )
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-participant-links.csv"'
    return response


@researcher_login_required
@require_POST
def participant_link(request: HttpRequest, slug: str, participant_id: int) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    participant = _participant(study, participant_id)
    if participant.withdrawn_at is not None:
        messages.error(request, f"{participant.pseudonym} was withdrawn: no new link.")
        return redirect("console:participants", slug=study.slug)
    participant_link_regenerate(participant=participant, actor=request.user)
    messages.success(request, f"{participant.pseudonym} has a new link; the old one no longer works.")
    return redirect("console:participants", slug=study.slug)


@researcher_login_required
@require_http_methods(["GET", "POST"])
def participant_withdrawal(request: HttpRequest, slug: str, participant_id: int) -> HttpResponse:
    """GET: what withdrawing deletes, counted per kind; POST: withdraw."""
    study = access_study(user=request.user, slug=slug, need="edit")
    participant = _participant(study, participant_id)
    if request.method == "POST":
        try:
            counts = participant_withdraw(participant=participant, actor=request.user)
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
            return redirect("console:participants", slug=study.slug)
        # The snapshot no longer covers the study's answers: recomputed now rather than at the
        # next check (after the withdrawal's commit: the service's transaction has ended).
        analysis_snapshot_request(study=study)
        deleted = sum(counts.values())
        messages.success(request, f"{participant.pseudonym} withdrawn: {deleted} answer(s) deleted.")
        return redirect("console:participants", slug=study.slug)
    context = {
        "study": study,
        "participant": participant,
        "counts": participant_answer_counts(participant=participant),
    }
    return render(request, "console/participant_withdraw.html", context)
