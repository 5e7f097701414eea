"""drf-spectacular postprocessing: the error responses every research-API operation can give and
the form of a study slug, so that a client (and Schemathesis) finds in the schema each status it
may receive and each URL that exists."""

from __future__ import annotations

from typing import Any

_ERROR = {
    "type": "object",
    "description": "`detail` for most errors; for a 400, the invalid parameters each with their messages.",
    "additionalProperties": True,
}
_ERRORS = {
    "400": "A parameter is invalid (the body names it).",
    "401": "No or an invalid token or session.",
    "403": "Authenticated, but not allowed.",
    "404": "No such study (or not one of yours), or no such item.",
    "429": "Too many requests: retry after the number of seconds in the Retry-After header.",
}


# Django's `<slug:…>` converter: any other text is no URL of the API at all.
SLUG_PATTERN = "^[-a-zA-Z0-9_]+$"


def add_error_responses(result: dict[str, Any], generator, request, public) -> dict[str, Any]:
    for path, operations in result.get("paths", {}).items():
        if not path.startswith("/api/"):
            continue
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path" and parameter.get("name") == "slug":
                    parameter.setdefault("schema", {})["pattern"] = SLUG_PATTERN
            responses = operation.setdefault("responses", {})
            for code, description in _ERRORS.items():
                responses.setdefault(
                    code,
                    {"description": description, "content": {"application/json": {"schema": _ERROR}}},
                )
    return result
