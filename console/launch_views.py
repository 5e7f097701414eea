"""The console's launch pages: generation and LLM judges for one study, with the admin's forms and
launch services (the same rules: the default backend is one that can run here, an OpenAI-compatible
server is asked before anything is queued). A launch leads to its live batch or run page. Editors
and owners."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from django import forms
from django.contrib import messages
from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotation.access import access_study, researcher_login_required
from annotation.models import Study
from generation.backends.configured import openai_configured
from generation.forms import GenerationBatchForm
from generation.services.batches import generation_batch_create
from judging.forms import JudgeRunForm
from judging.services import judge_run_create
from work.launch_forms import form_launch


def _launch(
    request: HttpRequest,
    slug: str,
    *,
    form_class: type[forms.Form],
    service: Callable[..., Model],
    title: str,
    noun: str,
    page: Callable[[Any], str],
) -> HttpResponse:
    study = access_study(user=request.user, slug=slug, need="edit")
    data = request.POST if request.method == "POST" else None
    form = form_class(data, initial={"study": study.pk})
    # The study is the page's: not a choice.
    cast(forms.ModelChoiceField, form.fields["study"]).queryset = Study.objects.filter(pk=study.pk)
    form.fields["study"].widget = forms.HiddenInput()
    status = 200
    if request.method == "POST":
        if form.is_valid():
            launched = form_launch(form, service, created_by=request.user)
            if launched.batch is not None:
                if launched.warning:
                    messages.warning(request, launched.warning)
                else:
                    messages.success(request, f"{noun} {launched.batch.pk} launched.")
                return redirect(page(launched.batch))
        status = 400
    context = {"study": study, "form": form, "title": title, "openai_configured": openai_configured()}
    return render(request, "console/launch.html", context, status=status)


@researcher_login_required
@require_http_methods(["GET", "POST"])
def launch_generation(request: HttpRequest, slug: str) -> HttpResponse:
    return _launch(
        request,
        slug,
        form_class=GenerationBatchForm,
        service=generation_batch_create,
        title="Generate simplifications",
        noun="Generation batch",
        page=lambda batch: batch.get_absolute_url(),
    )


@researcher_login_required
@require_http_methods(["GET", "POST"])
def launch_judges(request: HttpRequest, slug: str) -> HttpResponse:
    return _launch(
        request,
        slug,
        form_class=JudgeRunForm,
        service=judge_run_create,
        title="Launch LLM judges",
        noun="Judge run",
        page=lambda run: run.get_absolute_url(),
    )
