"""The Content-Security-Policy middleware that builds the settings' header once per process
(config/csp_header.py) writes what django-csp's own middleware writes, on every kind of response."""

import pytest
from csp.constants import NONCE
from csp.decorators import csp_exempt, csp_update
from csp.middleware import CSPMiddleware
from django.conf import settings
from django.http import HttpResponse
from django.test import RequestFactory, override_settings

from config.csp_header import KeptPolicyCSPMiddleware

ENFORCED = {"DIRECTIVES": {**settings.CSP_DIRECTIVES}}


def plain(request):
    return HttpResponse("ok")


@csp_update({"img-src": ["https://example.org"]})
def updated(request):
    return HttpResponse("ok")


@csp_exempt()
def exempt(request):
    return HttpResponse("ok")


def headers(middleware_class, view, path="/s/x/", **extra):
    request = RequestFactory().get(path)
    response = middleware_class(view)(request)
    return {
        name: response.get(name)
        for name in ("Content-Security-Policy", "Content-Security-Policy-Report-Only")
    }


@pytest.mark.parametrize("view", [plain, updated, exempt])
@pytest.mark.parametrize(
    "policies",
    [
        {"CONTENT_SECURITY_POLICY": ENFORCED, "CONTENT_SECURITY_POLICY_REPORT_ONLY": None},
        {"CONTENT_SECURITY_POLICY": None, "CONTENT_SECURITY_POLICY_REPORT_ONLY": ENFORCED},
        {"CONTENT_SECURITY_POLICY": None, "CONTENT_SECURITY_POLICY_REPORT_ONLY": None},
        {
            "CONTENT_SECURITY_POLICY": {**ENFORCED, "EXCLUDE_URL_PREFIXES": ["/s/"]},
            "CONTENT_SECURITY_POLICY_REPORT_ONLY": None,
        },
    ],
)
def test_same_headers_as_django_csp(view, policies):
    with override_settings(**policies):
        expected = headers(CSPMiddleware, view)
        assert headers(KeptPolicyCSPMiddleware, view) == expected
        assert headers(KeptPolicyCSPMiddleware, view, path="/dashboard/") == headers(
            CSPMiddleware, view, path="/dashboard/"
        )


def test_changed_settings_change_the_kept_header():
    with override_settings(CONTENT_SECURITY_POLICY=ENFORCED, CONTENT_SECURITY_POLICY_REPORT_ONLY=None):
        first = headers(KeptPolicyCSPMiddleware, plain)["Content-Security-Policy"]
    changed = {"DIRECTIVES": {**settings.CSP_DIRECTIVES, "img-src": ["'self'"]}}
    with override_settings(CONTENT_SECURITY_POLICY=changed, CONTENT_SECURITY_POLICY_REPORT_ONLY=None):
        second = headers(KeptPolicyCSPMiddleware, plain)["Content-Security-Policy"]
    assert "data:" in first and "data:" not in second


def test_a_used_nonce_gets_django_csps_own_header():
    def with_nonce(request):
        return HttpResponse(str(request.csp_nonce))

    with_nonces = {"DIRECTIVES": {**settings.CSP_DIRECTIVES, "script-src": ["'self'", NONCE]}}
    with override_settings(CONTENT_SECURITY_POLICY=with_nonces, CONTENT_SECURITY_POLICY_REPORT_ONLY=None):
        request = RequestFactory().get("/")
        response = KeptPolicyCSPMiddleware(with_nonce)(request)
    assert f"'nonce-{response.content.decode()}'" in response["Content-Security-Policy"]
