"""The console's upload page: a sources file (the shapes of `manage.py import_study`) uploaded in
the browser, imported by a task, its progress polled by htmx, its refusal shown as a table of
file, row, column and reason. Editors and owners."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation.access import access_study, researcher_login_required
from annotation.models import SourceUpload
from console.upload_selectors import upload_progress
from console.upload_services import source_upload_create, upload_is_stalled

POLL_SECONDS = 1
RECENT = 10


class SourceUploadForm(forms.Form):
    file = forms.FileField(
        label="Sources file",
        help_text="CSV (wide: source_key, source_text[, reference_severity], one column per system; "
        "long: source_key, source_text, system, text) or JSONL with the long columns; or whole reports "
        "from a hospital system: a FHIR R4 Bundle of DiagnosticReports (.json, .ndjson) or HL7 v2 "
        "ORU^R01 messages (.hl7).",
    )
    split_sentences = forms.BooleanField(
        label="Split each report into sentences",
        required=False,
        help_text="FHIR and HL7 files only: one source per sentence, each keeping which report it came from.",
    )


@researcher_login_required
@require_http_methods(["GET", "POST"])
def upload(request: HttpRequest, slug: str) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    form = SourceUploadForm(request.POST, request.FILES) if request.method == "POST" else SourceUploadForm()
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                created = source_upload_create(
                    study=study,
                    uploaded_file=form.cleaned_data["file"],
                    user=request.user,
                    split_sentences=form.cleaned_data["split_sentences"],
                )
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, errors)
            else:
                return redirect("console:upload-detail", slug=study.slug, upload_id=created.pk)
        status = 400
    context = {
        "study": study,
        "form": form,
        "uploads": SourceUpload.objects.filter(study=study)[:RECENT],
        "sources": study.sources.count(),
    }
    return render(request, "console/upload.html", context, status=status)


@researcher_login_required
@require_http_methods(["GET"])
def upload_detail(request: HttpRequest, slug: str, upload_id: int) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    found = SourceUpload.objects.filter(study=study, pk=upload_id).select_related("uploaded_by").first()
    if found is None:
        raise Http404("No such upload in this study.")
    context = {
        "study": study,
        "upload": found,
        "finished": found.status in (SourceUpload.Status.SUCCEEDED, SourceUpload.Status.FAILED),
        "stalled": upload_is_stalled(upload=found),
        "progress": upload_progress(upload=found),
        "poll_seconds": POLL_SECONDS,
        "form": SourceUploadForm(),
    }
    template = "console/upload_detail.html"
    return render(request, f"{template}#progress" if request.htmx else template, context)  # type: ignore[attr-defined]
