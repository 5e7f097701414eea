"""The PostgreSQL backend (config/postgresql): prepared statements for the survey's small queries,
and statements with more parameters than PostgreSQL's protocol takes still run."""

from __future__ import annotations

import pytest
from django.db import connection

from annotation.models import Source, Study
from config.postgresql.base import MAX_PARAMETERS

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's backend"),
]


def test_small_statements_are_bound_on_the_server():
    assert connection.features.uses_server_side_binding
    connection.ensure_connection()
    assert connection.connection.prepare_threshold == 5


def test_a_statement_with_more_parameters_than_postgresql_takes_still_runs():
    study = Study.objects.create(slug="many", title="Many")
    sources = Source.objects.bulk_create(  # 6 columns × 12,000 rows: 72,000 parameters
        [Source(study=study, key=f"s{i}", text=f"Sentence {i}.", position=i) for i in range(12_000)]
    )
    ids = [s.pk for s in sources] + list(range(10**9, 10**9 + MAX_PARAMETERS))
    assert Source.objects.filter(pk__in=ids).count() == 12_000
    streamed = Source.objects.filter(pk__in=ids).values_list("pk", flat=True).iterator(chunk_size=1000)
    assert sorted(streamed) == sorted(s.pk for s in sources)
