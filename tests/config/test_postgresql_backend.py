"""The PostgreSQL backend (config/postgresql): prepared statements for the survey's small queries,
statements with more parameters than PostgreSQL's protocol takes still run, and an integer outside
its column's type is refused, never stored wrapped into its width."""

from __future__ import annotations

import pytest
from django.db import DataError, connection, transaction
from django.db.models import Value

from annotation.models import Source, Study
from annotation.prepared_queries import PreparedQuery, PreparedUpdate
from config.postgresql.base import MAX_PARAMETERS, MAX_PREPARED_PARAMETERS

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's backend"),
]


def test_small_statements_are_bound_on_the_server():
    assert connection.features.uses_server_side_binding
    connection.ensure_connection()
    assert connection.connection.prepare_threshold == 5


@pytest.mark.heavy
def test_a_statement_with_more_parameters_than_postgresql_takes_still_runs():
    study = Study.objects.create(slug="many", title="Many")
    sources = Source.objects.bulk_create(  # 6 columns × 12,000 rows: 72,000 parameters
        [Source(study=study, key=f"s{i}", text=f"Sentence {i}.", position=i) for i in range(12_000)]
    )
    ids = [s.pk for s in sources] + list(range(10**9, 10**9 + MAX_PARAMETERS))
    assert Source.objects.filter(pk__in=ids).count() == 12_000
    streamed = Source.objects.filter(pk__in=ids).values_list("pk", flat=True).iterator(chunk_size=1000)
    assert sorted(streamed) == sorted(s.pk for s in sources)


def _prepared_statements_naming(marker: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return sum(marker in statement for (statement,) in cursor.fetchall())


@pytest.mark.parametrize(("keys", "prepared"), [(3, True), (MAX_PREPARED_PARAMETERS + 1, False)])
def test_a_statement_with_many_parameters_is_planned_for_its_values_not_prepared(keys, prepared):
    # A generic plan of `key IN ($1, …, $n)` compares each row with all n parameters in turn.
    study = Study.objects.create(slug="batch", title="Batch")
    Source.objects.create(study=study, key="k0", text="Sentence.", position=0)
    marker = f"prepared_{keys}"
    for _ in range(8):  # past prepare_threshold
        found = Source.objects.filter(key__in=[f"k{i}" for i in range(keys)]).annotate(**{marker: Value(1)})
        assert [s.key for s in found] == ["k0"]
    assert (_prepared_statements_naming(marker) == 1) is prepared


# Values that psycopg packed into 4 bytes: 99999999999 mod 2**32 = 1215752191, 4294967304 = 8.
OUT_OF_INT4 = [99_999_999_999, 4_294_967_304, 2**31, -(2**31) - 1]


@pytest.mark.parametrize("value", OUT_OF_INT4)
def test_an_integer_outside_int4_is_refused_not_wrapped_by_a_prepared_update(value):
    study = Study.objects.create(slug="wrap", title="Wrap")
    for sources in range(1, 8):  # past prepare_threshold: the UPDATE is a prepared statement
        Study.objects.filter(pk=study.pk).update(lay_sources_per_participant=sources)
    with pytest.raises(DataError, match="out of range for a database integer"), transaction.atomic():
        Study.objects.filter(pk=study.pk).update(lay_sources_per_participant=value)
    study.refresh_from_db()
    assert study.lay_sources_per_participant == 7


def test_an_integer_outside_int4_is_refused_on_insert_and_the_row_is_not_stored():
    study = Study.objects.create(slug="wrap", title="Wrap")
    with pytest.raises(DataError), transaction.atomic():
        Source.objects.create(study=study, key="s", text="Sentence.", position=4_294_967_304)
    assert not Source.objects.filter(study=study).exists()


def test_the_edges_of_int4_are_stored_exactly():
    study = Study.objects.create(slug="edge", title="Edge", lay_sources_per_participant=2**31 - 1)
    source = Source.objects.create(study=study, key="s", text="Sentence.", position=2**31 - 1)
    study.refresh_from_db()
    source.refresh_from_db()
    assert (study.lay_sources_per_participant, source.position) == (2**31 - 1, 2**31 - 1)


def test_a_prepared_update_of_radlay_refuses_an_out_of_range_argument():
    # annotation/prepared_queries.py binds a real argument as a plain int, which psycopg sends as
    # int8 when it needs to: PostgreSQL's own assignment to the integer column refuses it.
    study = Study.objects.create(slug="wrap", title="Wrap")
    update = PreparedUpdate(
        lambda study_id, n: (Study.objects.filter(pk=study_id), {"lay_sources_per_participant": n})
    )
    for sources in range(1, 8):
        assert update.run(study_id=study.pk, n=sources) == 1
    with pytest.raises(DataError), transaction.atomic():
        update.run(study_id=study.pk, n=99_999_999_999)
    study.refresh_from_db()
    assert study.lay_sources_per_participant == 7


def test_a_prepared_read_with_an_out_of_range_argument_finds_nothing_and_does_not_fail():
    # As the ORM's lookups do (IntegerFieldOverflow): no row can hold such a value.
    study = Study.objects.create(slug="wrap", title="Wrap", lay_sources_per_participant=3)
    read = PreparedQuery(lambda n: Study.objects.filter(lay_sources_per_participant=n).values_list("pk"))
    for _ in range(7):
        assert read.rows(n=3) == [(study.pk,)]
    assert read.rows(n=99_999_999_999) == []
    assert read.rows(n=3) == [(study.pk,)]
