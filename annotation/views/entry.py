"""The front door: the home page and `/s/<token>/`, which sends a participant to their role's flow."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from annotation.access import SurveyClosed, access_participant
from annotation.models import Participant


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "annotation/home.html")


def participant_entry(request: HttpRequest, token: str) -> HttpResponse:
    try:
        participant = access_participant(token=token)
    except SurveyClosed as closed:
        return study_unavailable(request, closed.study)
    if participant.role == Participant.Role.RADIOLOGIST:
        return redirect("annotation:expert-start", token=token)
    return redirect("annotation:lay-start", token=token)


def study_unavailable(request: HttpRequest, study) -> HttpResponse:
    return render(request, "annotation/study_unavailable.html", {"study": study}, status=403)
