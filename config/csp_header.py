"""django-csp's middleware with the Content-Security-Policy header built once per process.

radlay's policy is the settings' (CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY_REPORT_ONLY):
no view changes it with django-csp's decorators and no template asks for a nonce, so every response
gets the same header. django-csp rebuilds that string on every response (two dataclass copies and
the policy's directives joined again), which was the costliest middleware of a survey autosave. A
response that does carry a policy of its own, or a request whose nonce was used, goes through
django-csp's own code unchanged; the kept headers are dropped when a test overrides the settings."""

from __future__ import annotations

import http.client

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject, CSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponseBase

# What a view's @csp, @csp_update, @csp_replace or @csp_exempt leave on a response.
_OWN_POLICY = tuple(
    f"_csp_{what}{suffix}" for what in ("config", "update", "replace", "exempt") for suffix in ("", "_ro")
)
_DEBUG_EXEMPT = (http.client.INTERNAL_SERVER_ERROR, http.client.NOT_FOUND)
# (header, policy, URL prefixes it leaves out) for the enforced and the report-only policy.
_headers: list[tuple[str, str, tuple[str, ...]]] | None = None


def _settings_headers() -> list[tuple[str, str, tuple[str, ...]]]:
    global _headers
    if _headers is None:
        built = []
        for header, name, report_only in (
            (HEADER, "CONTENT_SECURITY_POLICY", False),
            (HEADER_REPORT_ONLY, "CONTENT_SECURITY_POLICY_REPORT_ONLY", True),
        ):
            policy = build_policy(report_only=report_only)
            if policy:
                prefixes = tuple(
                    (getattr(settings, name, None) or {}).get("EXCLUDE_URL_PREFIXES", None) or ()
                )
                built.append((header, policy, prefixes))
        _headers = built
    return _headers


@receiver(setting_changed)
def _settings_changed(*, setting: str, **kwargs) -> None:
    global _headers
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        _headers = None


class KeptPolicyCSPMiddleware(CSPMiddleware):
    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if getattr(request, "_csp_nonce", None) is not None or any(
            hasattr(response, name) for name in _OWN_POLICY
        ):
            return super().process_response(request, response)
        if response.status_code in _DEBUG_EXEMPT and settings.DEBUG:
            return response
        for header, policy, prefixes in _settings_headers():
            if header not in response and not request.path_info.startswith(prefixes):
                response[header] = policy
        # As django-csp does: a nonce asked for after the header was written is an error.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)  # type: ignore[attr-defined]
        return response
