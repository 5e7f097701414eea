"""`Cache-Control: no-store` on every response radlay renders (static files are served by
WhiteNoise before this middleware and keep their long cache headers).

Every dynamic page holds a study's data or a participant's answers: the dashboard, exports, the
API, the admin, the survey. Without the header a browser keeps them on disk and shows them again
from its history after logout, and a proxy on a hospital network may store and serve them to
someone else. One middleware instead of a decorator per view, so that no new view is forgotten; a
view that sets its own Cache-Control (the survey's never_cache) keeps it."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import patch_cache_control


class NoStoreMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if not response.has_header("Cache-Control"):
            patch_cache_control(response, no_store=True, private=True)
        return response
