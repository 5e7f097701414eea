"""The site's front page: it introduces the whole tool, so it lives with the project, not in one of
its apps (the survey app links to none of the researcher pages)."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html")
