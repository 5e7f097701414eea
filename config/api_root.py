"""GET /api/: where the research API's endpoints are, so the address answers instead of 404."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

PER_STUDY = (
    "study-detail",
    "source-list",
    "system-list",
    "simplification-list",
    "progress",
    "answer-list",
    "analysis",
    "audit",
)
# The slug converter accepts only slug characters, so the "{slug}" template is filled in afterwards.
SLUG_MARK = "slug-placeholder"


@extend_schema(exclude=True)
@api_view(["GET"])
@permission_classes([AllowAny])  # only addresses: every endpoint listed checks its own access
def api_root(request: Request) -> Response:
    def url(name: str, **kwargs) -> str:
        return reverse(name, kwargs=kwargs or None, request=request).replace(SLUG_MARK, "{slug}")

    return Response(
        {
            "docs": url("api-docs"),
            "schema": url("api-schema"),
            "token": url("api:token"),
            "studies": url("api:study-list"),
            "study": {name: url(f"api:{name}", slug=SLUG_MARK) for name in PER_STUDY},
            "exports": url("api:export", slug=SLUG_MARK, file_format="csv").replace("/csv/", "/{format}/"),
        }
    )
