"""The floors that bench/survey_load.py compares radlay with: one view that upserts one row into the
configured database, served by the same gunicorn in the same run.

- bare (the default): nothing else: no middleware, no template, no session, no CSRF, no radlay code;
- stack (RADLAY_FLOOR_STACK=1): the same view with radlay's production settings — its installed
  apps, its middleware (security headers, WhiteNoise, sessions, CSRF, authentication, messages,
  CSP, htmx, axes) and its database options — and nothing of radlay's own request code. A POST
  must carry the CSRF token that GET /token/ hands out, as radlay's forms do.

Between bare and stack is what the framework costs per request as radlay configures it; between
stack and radlay, what radlay's own code does (the participant's token, the row lock, validation,
the answer's save and the response).

    DATABASE_URL=postgres://… gunicorn bench.survey_floor:application --workers 3
    RADLAY_FLOOR_STACK=1 DJANGO_SECRET_KEY=… DJANGO_ALLOWED_HOSTS=… DATABASE_URL=… gunicorn …
"""

from __future__ import annotations

import os

import django
import environ
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.urls import path

STACK = os.environ.get("RADLAY_FLOOR_STACK") == "1"

if STACK and not settings.configured:
    from config.settings import production as radlay

    values = {name: getattr(radlay, name) for name in dir(radlay) if name.isupper()}
    settings.configure(**{**values, "ROOT_URLCONF": __name__})
    django.setup()
elif not settings.configured:
    settings.configure(
        DEBUG=False,
        SECRET_KEY="bench-floor",
        ALLOWED_HOSTS=["*"],
        ROOT_URLCONF=__name__,
        MIDDLEWARE=[],
        INSTALLED_APPS=[],
        DATABASES={
            "default": {
                **environ.Env.db_url_config(os.environ["DATABASE_URL"]),
                "CONN_MAX_AGE": 60,
                # The database options radlay runs with (config/settings/base.py): prepared statements.
                "OPTIONS": {"server_side_binding": True, "prepare_threshold": 5},
            }
        },
    )
    django.setup()

TABLE = "bench_floor_answer"


def table_create() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} (participant integer, field varchar(40), value integer, "
            "PRIMARY KEY (participant, field))"
        )


def answer(request: HttpRequest) -> HttpResponse:
    participant, field, value = int(request.POST["p"]), request.POST["f"], int(request.POST["v"])
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {TABLE} (participant, field, value) VALUES (%s, %s, %s) "
            "ON CONFLICT (participant, field) DO UPDATE SET value = EXCLUDED.value",
            [participant, field, value],
        )
    return HttpResponse("ok")


def token(request: HttpRequest) -> HttpResponse:
    """The CSRF cookie and token (stack floor): what a page hands the form it renders."""
    return HttpResponse(get_token(request))


def ready(request: HttpRequest) -> HttpResponse:
    """What bench/survey_load.py asks before a phase, to know the workers are up."""
    return HttpResponse("ok")


urlpatterns = [path("", ready), path("answer/", answer), path("token/", token)]

from django.core.wsgi import get_wsgi_application  # noqa: E402

application = get_wsgi_application()
