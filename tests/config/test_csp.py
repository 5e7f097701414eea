"""Content-Security-Policy: production enforces one without 'unsafe-inline' (configurable), and the
pages radlay serves carry it."""

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.test import override_settings

from tests.annotation.factories import build_study

PRODUCTION_ENV = {
    "DJANGO_SETTINGS_MODULE": "config.settings.production",
    "DJANGO_SECRET_KEY": "x" * 50,
    "DJANGO_ALLOWED_HOSTS": "radlay.example.org",
}
PRINT_POLICY = (
    "import json, django; django.setup(); from django.conf import settings; "
    "print(json.dumps([settings.CONTENT_SECURITY_POLICY, settings.CONTENT_SECURITY_POLICY_REPORT_ONLY]))"
)


def in_production(code: str, **env: str) -> list:
    """What `code` prints (JSON, on its last line) under production settings and `env`."""
    environment = {**os.environ, **PRODUCTION_ENV, **env}
    if "DJANGO_CSP" not in env:
        environment.pop("DJANGO_CSP", None)
    done = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def production_policy(**env: str) -> list:
    return in_production(PRINT_POLICY, **env)


def test_production_enforces_a_policy_without_unsafe_inline():
    enforced, report_only = production_policy()
    assert report_only is None
    directives = enforced["DIRECTIVES"]
    assert directives["script-src"] == ["'self'"] and directives["style-src"] == ["'self'"]
    assert "unsafe" not in json.dumps(directives)


@pytest.mark.heavy
def test_production_policy_is_configurable():
    enforced, report_only = production_policy(DJANGO_CSP="report-only", DJANGO_CSP_REPORT_URI="/csp-report/")
    assert enforced is None and report_only["DIRECTIVES"]["report-uri"] == ["/csp-report/"]
    assert production_policy(DJANGO_CSP="off") == [None, None]


@pytest.mark.django_db
def test_pages_carry_the_policy(client):
    build_study(slug="csp", n_sources=1)
    with override_settings(CONTENT_SECURITY_POLICY={"DIRECTIVES": settings.CSP_DIRECTIVES}):
        for url in ("/", "/s/unknown/", "/api/"):
            header = client.get(url)["Content-Security-Policy"]
            assert "script-src 'self'" in header and "unsafe-inline" not in header, url


BROWSER_GET_API = (
    "import json, django; django.setup(); from django.test import Client; "
    "r = Client().get('/api/studies/', HTTP_ACCEPT='text/html,application/xhtml+xml,*/*;q=0.8', "
    "HTTP_HOST='radlay.example.org', secure=True); "
    "print(json.dumps([r.status_code, r['Content-Type'], r.get('Content-Security-Policy', ''), "
    "r.content.decode()[:200]]))"
)


PRINT_RENDERERS = (
    "import json, django; django.setup(); from django.conf import settings; "
    "print(json.dumps(settings.REST_FRAMEWORK['DEFAULT_RENDERER_CLASSES']))"
)


@pytest.mark.heavy
def test_production_serves_the_api_as_json_not_the_browsable_html():
    """DRF's browsable API uses inline styles the enforced CSP refuses; production answers a
    browser with JSON (here the 401/403 of an anonymous request), under the policy."""
    status, content_type, policy, body = in_production(BROWSER_GET_API)
    assert status in (401, 403) and content_type == "application/json"
    assert "style-src 'self'" in policy and json.loads(body)["detail"]
    # An operator can switch it back on (and should then run the CSP as report-only).
    renderers = in_production(PRINT_RENDERERS, RADLAY_BROWSABLE_API="true")
    assert renderers == [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ]


def test_the_browsable_api_is_on_outside_production(client):
    assert settings.REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"][-1].endswith("BrowsableAPIRenderer")
