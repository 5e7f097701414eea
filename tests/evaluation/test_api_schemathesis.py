"""Schemathesis against the research API's own OpenAPI schema (/api/schema/), in-process through
the WSGI application: every operation (studies, answers, analysis, exports, plans, judges, the
token), with generated parameters valid and invalid, must answer without a server error, with a
status code, content type and body that the schema documents. A researcher's token calls every
operation; launching a judge run needs staff, so that one operation is called by a staff
researcher of the study (a plain researcher only ever gets its 403)."""

from __future__ import annotations

import os
import zlib

import pytest
import schemathesis
from django.contrib.auth import get_user_model
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.evaluation.analysis.test_study_frames import build_answered_study

# Examples per operation; the whole run stays within about two minutes on two cores.
# RADLAY_SCHEMATHESIS_RANDOM=1 draws new examples on every run instead of the fixed set.
EXAMPLES = int(os.environ.get("RADLAY_SCHEMATHESIS_EXAMPLES", "60"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

application = get_wsgi_application()
# Generating the schema reads no database, so it is loaded when the module is collected.
schema = schemathesis.openapi.from_wsgi("/api/schema/", application)


@pytest.fixture
def tokens(db, fast_analysis, settings) -> dict[str, str]:
    """Tokens of two researchers of the study "fuzz", one of them staff; the WSGI application is
    kept from closing the test's database connection after each request (as Django's own test
    client does)."""
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": []}
    study = build_answered_study(slug="fuzz", n_sources=2, n_lay=2)
    users = {
        "researcher": get_user_model().objects.create_user("fuzz", password="pw-fuzz-123"),
        "staff": get_user_model().objects.create_user("fuzz-staff", password="pw-fuzz-123", is_staff=True),
    }
    study.researchers.add(*users.values())
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield {role: Token.objects.create(user=user).key for role, user in users.items()}
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def _token_for(method: str, path: str, tokens: dict[str, str]) -> str:
    staff_only = method.upper() == "POST" and path.endswith("/judges/")
    return tokens["staff" if staff_only else "researcher"]


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    # The same examples on every run, so that CI is reproducible.
    derandomize=not os.environ.get("RADLAY_SCHEMATHESIS_RANDOM"),
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_api_conforms_to_its_schema(case, tokens):
    if "slug" in (case.path_parameters or {}) and zlib.crc32(str(case.path_parameters).encode()) % 4:
        # Mostly the researcher's own study, so that the operation itself runs; sometimes the
        # generated slug (a 404 the schema documents).
        case.path_parameters["slug"] = "fuzz"
    token = _token_for(case.method, case.path, tokens)
    case.call_and_validate(headers={"Authorization": f"Token {token}"}, checks=CHECKS)


# JSON bodies that are not an object: generated data rarely holds them, and they once ended the
# plans endpoint with a 500 (AttributeError).
NOT_OBJECTS = ["[null, null]", "[]", "1", '"x"', "true", "null", "{"]


@pytest.mark.parametrize("body", NOT_OBJECTS)
def test_every_operation_with_a_body_answers_a_json_body_that_is_not_an_object_with_400(tokens, body):
    from rest_framework.test import APIClient

    operations = [
        (method, path)
        for path, methods in schema.raw_schema["paths"].items()
        for method, operation in methods.items()
        if "requestBody" in operation
    ]
    assert {("post", "/api/studies/{slug}/plans/"), ("post", "/api/studies/{slug}/judges/")} <= set(
        operations
    )
    for method, path in operations:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {_token_for(method, path, tokens)}")
        response = getattr(client, method)(
            path.replace("{slug}", "fuzz"), body, content_type="application/json"
        )
        assert response.status_code == 400, (method, path, response.status_code, response.content[:300])
