"""Production hardening: `check --deploy` is clean, HTTPS settings and abuse limits come from the
environment, the API schema needs a login, `manage.py demo` refuses to run, survey tokens never
reach the logs."""

from __future__ import annotations

import io
import json
import logging
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from config.log_filters import RedactSurveyTokens, redact

ROOT = Path(__file__).resolve().parents[1]


def production(*args: str, code: str | None = None, **env: str) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "RADLAY_", "REDIS_URL", "DATABASE_URL"))
    }
    env = {
        **clean,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
        "DJANGO_ALLOWED_HOSTS": "radlay.example.org,testserver",
        "DATABASE_URL": os.environ.get("DATABASE_URL", "sqlite:////tmp/radlay-deploy-check.sqlite3"),
        **env,
    }
    command = [sys.executable, "-c", code] if code else [sys.executable, "manage.py", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.heavy
def test_check_deploy_is_clean_under_production_settings():
    result = production("check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stderr + result.stdout
    assert "no issues" in result.stdout


SHOW = """
import django, json
django.setup()
from django.conf import settings as s
from django.test import Client
print(json.dumps({
    "hsts": s.SECURE_HSTS_SECONDS, "redirect": s.SECURE_SSL_REDIRECT, "cookies": s.SESSION_COOKIE_SECURE,
    "axes": [s.AXES_ENABLED, s.AXES_FAILURE_LIMIT], "join": s.RADLAY_RATE_LIMITS.join_ip,
    "cap": s.RADLAY_MAX_OPEN_ENROLMENTS, "api": s.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
    "schema": Client().get("/api/schema/", secure=True).status_code,
    # Rendered, the docs page needs collectstatic's manifest (the Docker image has it): only its
    # access rule is looked at.
    "docs": None if s.SPECTACULAR_SETTINGS.get("SERVE_PERMISSIONS") is None
    else Client().get("/api/docs/", secure=True).status_code,
    "plain_http": Client().get("/api/schema/").status_code,
}))
"""


@pytest.mark.heavy
def test_production_settings_come_from_the_environment():
    shown = json.loads(production(code=SHOW).stdout.splitlines()[-1])
    assert shown["hsts"] >= 31536000 and shown["redirect"] and shown["cookies"]
    assert shown["axes"] == [True, 10]
    assert shown["schema"] in (401, 403) and shown["docs"] in (401, 403)
    assert shown["plain_http"] == 301
    changed = production(
        code=SHOW,
        DJANGO_HSTS_SECONDS="0",
        DJANGO_SSL_REDIRECT="false",
        DJANGO_SECURE_COOKIES="false",
        RADLAY_LOGIN_LOCKOUT="failures=5",
        RADLAY_RATE_LIMITS="join_ip=5/m,api_user=9/min",
        RADLAY_MAX_OPEN_ENROLMENTS="7",
        RADLAY_PUBLIC_API_SCHEMA="true",
    )
    shown = json.loads(changed.stdout.splitlines()[-1])
    assert (shown["hsts"], shown["redirect"], shown["cookies"]) == (0, False, False)
    assert shown["axes"] == [True, 5] and shown["join"] == "5/m" and shown["cap"] == 7
    assert shown["api"]["user"] == "9/min"
    assert shown["schema"] == 200


@pytest.mark.heavy
def test_demo_refuses_production_settings():
    result = production("demo")
    assert result.returncode != 0
    assert "production settings" in result.stderr


TOKEN = secrets.token_urlsafe(32)


@pytest.mark.parametrize("prefix", ["s", "l", "r"])
def test_tokens_are_redacted_from_logged_paths(prefix):
    assert redact(f"Not Found: /{prefix}/{TOKEN}/sentence/3/original/") == (
        f"Not Found: /{prefix}/[token]/sentence/3/original/"
    )
    assert redact("Not Found: /dashboard/release/") == "Not Found: /dashboard/release/"


def test_the_configured_handler_redacts_django_request_warnings(client, db):
    handler = next(
        h for h in logging.getLogger().handlers if any(isinstance(f, RedactSurveyTokens) for f in h.filters)
    )
    stream = io.StringIO()
    previous = handler.setStream(stream)
    try:
        assert client.get(f"/l/{TOKEN}/consent/").status_code == 404
    finally:
        handler.setStream(previous)
    logged = stream.getvalue()
    assert "/l/[token]/consent/" in logged
    assert TOKEN not in logged


def test_recruiter_ids_are_redacted_from_logged_queries():
    line = f"GET /join/st/?PROLIFIC_PID=5f1a2b3c&STUDY_ID=abc&SESSION_ID=s-1&x=1 HTTP/1.1 /l/{TOKEN}/"
    assert redact(line) == (
        "GET /join/st/?PROLIFIC_PID=[redacted]&STUDY_ID=[redacted]&SESSION_ID=[redacted]&x=1"
        " HTTP/1.1 /l/[token]/"
    )
    assert redact("session_id=abc&PROLIFIC_PID=p") == "session_id=[redacted]&PROLIFIC_PID=[redacted]"
    encoded = "next=%2Fjoin%2Fst%2F%3FPROLIFIC_PID%3D5f1a2b3c"
    assert "5f1a2b3c" not in redact(encoded)


def test_gunicorn_access_log_is_redacted(tmp_path):
    """The logger class the compose file runs gunicorn with: a combined-format access log with the
    redirect's Location added records no token and no recruiter ID."""
    from datetime import timedelta
    from types import SimpleNamespace

    from gunicorn.config import Config

    from config.gunicorn_logging import RedactingLogger

    log = tmp_path / "access.log"
    cfg = Config()
    cfg.set("accesslog", str(log))
    cfg.set("access_log_format", '%(h)s "%(r)s" %(s)s "%(f)s" %(U)s %(q)s {%({location}o)s}')
    logger = RedactingLogger(cfg)
    query = "PROLIFIC_PID=5f1a2b3c4d5e6f7a8b9c0d1e&STUDY_ID=st9&SESSION_ID=se9"
    environ = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": f"/join/recruit/?{query}",
        "PATH_INFO": "/join/recruit/",
        "QUERY_STRING": query,
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "10.0.0.1",
        "HTTP_REFERER": f"https://radlay.example.org/s/{TOKEN}/",
    }
    response = SimpleNamespace(status="302 Found", sent=0, headers=[("Location", f"/l/{TOKEN}/")])
    request = SimpleNamespace(headers=[("REFERER", environ["HTTP_REFERER"])])
    logger.access(response, request, environ, timedelta(seconds=0.01))
    for handler in logger.access_log.handlers:
        handler.flush()
    written = log.read_text()
    assert "/join/recruit/" in written and "/l/[token]/" in written and "/s/[token]/" in written
    for secret in (TOKEN, "5f1a2b3c4d5e6f7a8b9c0d1e", "st9", "se9"):
        assert secret not in written
    assert (
        "--logger-class config.gunicorn_logging.RedactingLogger"
        in (ROOT / "docker" / "compose.yml").read_text()
    )
