"""The answers to the surveys' autosaves: small fragments (the "Saved" mark, the page's "n answers
to go") whose HTML is decided by a few values and the active language, rendered once per process
for each such key and then reused. An autosave is the surveys' busiest request (one per answer);
rendering its fragment through the template engine, with the request's context processors, was
about a tenth of its server time, for one of a handful of different strings.

A fragment is reused only when the caller names everything its template reads in `key` (the values,
not the objects): tests/surveys/test_survey_fragments.py renders each one afresh and compares.
With settings.DEBUG templates may be edited while the server runs, so nothing is kept then."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from django.conf import settings
from django.http import HttpResponse
from django.template.loader import render_to_string
from django.utils import translation

# A bound on the kept fragments: the keys are few (a page's completion and how many answers it
# lacks, per language), so this is only a guard against a caller that keys on something unbounded.
MAX_KEPT = 1024
_kept: dict[tuple[str, str, Hashable], str] = {}


def fragment_html(template: str, context: Mapping[str, Any], *, key: Hashable) -> str:
    """`template` rendered with `context` (no request: a fragment reads no context processor and
    no CSRF token), kept under (template, active language, `key`). `key` must determine everything
    the template reads from `context`."""
    kept_as = (template, translation.get_language() or "", key)
    html = _kept.get(kept_as)
    if html is None:
        html = render_to_string(template, dict(context))
        if not settings.DEBUG:
            if len(_kept) >= MAX_KEPT:
                _kept.clear()
            _kept[kept_as] = html
    return html


def fragment_response(template: str, context: Mapping[str, Any], *, key: Hashable) -> HttpResponse:
    """An HTML response of `fragment_html` (status 200)."""
    return HttpResponse(fragment_html(template, context, key=key))
