"""Which judge runs a user may reach: those of the studies they are a researcher of (the study
rule is annotation.access.access_study; another study's run is a 404)."""

from __future__ import annotations

from django.http import Http404

from annotation.access import access_study
from annotation.models import Study
from judging.models import JudgeRun


def access_judge_run(*, user, slug: str, run_id: int, need: str = "view") -> tuple[Study, JudgeRun]:
    study = access_study(user=user, slug=slug, need=need)
    run = JudgeRun.objects.select_related("study").filter(pk=run_id, study=study).first()
    if run is None:
        raise Http404("No such judge run in this study.")
    return study, run
