"""The console's import of a study archive: upload the zip, see what its manifest says it holds
(rows per table, the tables left out and why), choose the copy's slug and confirm; the import is
all or nothing (console/archive_services.py, the service of `manage.py import_study_archive`).
Researchers who may create studies only (access_study_create)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation.access import access_study_create, researcher_login_required
from console.archive_services import archive_stage, free_slug, staged_import, staged_manifest

SESSION_KEY = "console_archive_imports"
TEMPLATE = "console/study_import.html"


class ArchiveUploadForm(forms.Form):
    file = forms.FileField(
        label="Study archive",
        help_text="The .zip of a study's “Study archive” download or of manage.py export_study_archive.",
    )


class ArchiveConfirmForm(forms.Form):
    token = forms.CharField(widget=forms.HiddenInput, max_length=32)
    slug = forms.SlugField(
        label="Slug of the copy",
        max_length=80,
        help_text="The imported study's address; it must be free here.",
    )


def _put_errors(form: forms.Form, exc: ValidationError) -> None:
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


def _remember(request: HttpRequest, token: str) -> None:
    tokens = [t for t in request.session.get(SESSION_KEY, []) if t != token][-4:]
    request.session[SESSION_KEY] = [*tokens, token]


def _context(manifest, confirm, upload, refusal: str = "") -> dict:
    return {"manifest": manifest, "confirm": confirm, "upload": upload, "refusal": refusal}


def _refused(request: HttpRequest, refusal: str) -> HttpResponse:
    """Back to the upload step, with why the confirmation could not go on."""
    return render(request, TEMPLATE, _context(None, None, ArchiveUploadForm(), refusal), status=400)


@researcher_login_required
@require_http_methods(["GET", "POST"])
def study_import(request: HttpRequest) -> HttpResponse:
    """Step one: the upload; a readable archive leads to step two, its manifest and the confirm form."""
    access_study_create(user=request.user)
    upload = ArchiveUploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and upload.is_valid():
        try:
            token, manifest = archive_stage(uploaded_file=upload.cleaned_data["file"])
        except ValidationError as exc:
            _put_errors(upload, exc)
        else:
            _remember(request, token)
            confirm = ArchiveConfirmForm(
                initial={"token": token, "slug": free_slug(manifest.study or "imported")}
            )
            return render(request, TEMPLATE, _context(manifest, confirm, None))
    status = 400 if upload.is_bound else 200
    return render(request, TEMPLATE, _context(None, None, upload), status=status)


@researcher_login_required
@require_http_methods(["POST"])
def study_import_confirm(request: HttpRequest) -> HttpResponse:
    """Step two: import the archive this session uploaded under the chosen slug."""
    access_study_create(user=request.user)
    confirm = ArchiveConfirmForm(request.POST)
    token = request.POST.get("token", "")
    if token not in request.session.get(SESSION_KEY, []):
        return _refused(request, "This upload is not yours or has expired: upload the archive again.")
    try:
        manifest = staged_manifest(token=token)
    except ValidationError as exc:
        return _refused(request, " ".join(exc.messages))
    if confirm.is_valid():
        try:
            study = staged_import(token=token, slug=confirm.cleaned_data["slug"], user=request.user)
        except ValidationError as exc:
            _put_errors(confirm, exc)
        else:
            request.session[SESSION_KEY] = [t for t in request.session.get(SESSION_KEY, []) if t != token]
            rows = sum(manifest.counts.values())
            messages.success(
                request, f"Study {study.slug} imported from the archive of {manifest.study} ({rows} rows)."
            )
            return redirect("console:study-setup", slug=study.slug)
    return render(request, TEMPLATE, _context(manifest, confirm, None), status=400)
