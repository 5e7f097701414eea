"""The one rule for the URLs a participant is sent to at the end of a study (the completion,
decline and screen-out redirects): an absolute http or https URL with a host. The scheme is read
case-insensitively (HTTPS://… is https); a scheme-relative URL (//host/…) or one without a scheme is
refused, never completed by guessing, since a participant would be sent wherever the browser's
page happens to be served from. The completion URL may hold the `{code}` placeholder and no other
braces. The model (Study.clean), the console's settings form and the admin's form all check a URL
here; the lay flow sends the participant to the stored URL as it is."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.core.exceptions import ValidationError

# Replaced in Study.completion_redirect_url by the participant's own completion code
# (surveys/lay/entry.py lay_completion_url); the only placeholder the URL may hold.
COMPLETION_CODE_PLACEHOLDER = "{code}"
SCHEMES = ("https", "http")


def redirect_url_errors(url: str, *, label: str, placeholder: bool = False) -> list[str]:
    """What is wrong with `url` as a redirect (empty: nothing; an empty URL is allowed)."""
    if not url:
        return []
    rest = url.replace(COMPLETION_CODE_PLACEHOLDER, "") if placeholder else url
    if placeholder and ("{" in rest or "}" in rest):
        return [
            f"{label}: the only placeholder it may hold is {COMPLETION_CODE_PLACEHOLDER} (lower case, "
            "single braces), replaced by the participant's completion code."
        ]
    filled = url.replace(COMPLETION_CODE_PLACEHOLDER, "ABC123") if placeholder else url
    try:
        parts = urlsplit(filled)
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme.lower() not in SCHEMES
        or not filled[: len(parts.scheme) + 3].lower().endswith("://")
        or not parts.hostname
        or any(c <= " " or c == "\\" for c in filled)
    ):
        return [f"{label}: it must be a whole web address starting with https:// (or http://) and a host."]
    return []


class RedirectURLField(forms.CharField):
    """A redirect URL on a form: checked by redirect_url_errors, never completed with a guessed
    scheme (Django's URLField would turn //evil.example/ into https://evil.example/)."""

    def __init__(self, *, label_for_errors: str = "Redirect URL", placeholder: bool = False, **kwargs: Any):
        kwargs.pop("assume_scheme", None)
        super().__init__(**kwargs)
        self.label_for_errors, self.placeholder = label_for_errors, placeholder

    def clean(self, value: Any) -> str:
        value = super().clean(value)
        errors = redirect_url_errors(value, label=self.label_for_errors, placeholder=self.placeholder)
        if errors:
            raise ValidationError(errors)
        return value
