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


def production_policy(**env: str) -> list:
    environment = {**os.environ, **PRODUCTION_ENV, **env}
    if "DJANGO_CSP" not in env:
        environment.pop("DJANGO_CSP", None)
    done = subprocess.run(
        [sys.executable, "-c", PRINT_POLICY], env=environment, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_production_enforces_a_policy_without_unsafe_inline():
    enforced, report_only = production_policy()
    assert report_only is None
    directives = enforced["DIRECTIVES"]
    assert directives["script-src"] == ["'self'"] and directives["style-src"] == ["'self'"]
    assert "unsafe" not in json.dumps(directives)


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
