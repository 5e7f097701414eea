"""The bare-Django floor that bench/survey_load.py compares radlay with: one view that upserts one
row into the configured database, served by the same gunicorn in the same run. Nothing else: no
template, no session, no CSRF, no radlay code.

    DATABASE_URL=postgres://… gunicorn bench.survey_floor:application --workers 3
"""

from __future__ import annotations

import os

import django
import environ
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.urls import path

if not settings.configured:
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


urlpatterns = [path("answer/", answer)]

from django.core.wsgi import get_wsgi_application  # noqa: E402

application = get_wsgi_application()
