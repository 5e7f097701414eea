"""Page-not-found for the whole site that answers API clients in the API's format: a URL under
/api/ that matches no route (e.g. a study slug with characters a slug cannot have) is a JSON 404
like every other API error, not an HTML page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse

from config import errors


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return errors.page_not_found(request, exception)
