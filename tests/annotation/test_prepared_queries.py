"""PreparedQuery runs the ORM's own SQL with new arguments: the same rows as the QuerySet it was
built from, whatever the arguments, and a loud refusal for what cannot be a placeholder."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.db.models import Count, F, FilteredRelation, Max, Min, Q
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from annotation import participant_services
from annotation.models import ExpertItem, Participant, SimplificationText, Source
from annotation.prepared_queries import Joined, PreparedAggregate, PreparedQuery, PreparedUpdate
from surveys.radiologist import assignment
from surveys.radiologist import services as expert_answers
from tests.annotation.factories import build_study
from tests.annotation.sqlite_run import run_on_sqlite


@pytest.fixture
def pages(db):
    study = build_study(slug="prepared", n_sources=4, systems=("a", "b", "c"))
    participants = [
        participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
        for _ in range(2)
    ]
    sources = list(Source.objects.filter(study=study).order_by("pk").values_list("pk", flat=True))
    for participant in participants:
        expert_answers.expert_items_create(participant=participant, source_ids=sources, first_position=0)
    return list(ExpertItem.objects.select_related("participant__study", "source").order_by("pk"))


def texts_with_ratings(text_ids, participant_id):
    return (
        SimplificationText.objects.filter(pk__in=text_ids)
        .annotate(
            mine=FilteredRelation("item_answers", condition=Q(item_answers__participant_id=participant_id))
        )
        .values_list("pk", "text", "mine__pk", "mine__value")
        .order_by("pk")
    )


def test_rows_equal_the_querysets_for_every_argument_and_shape(pages):
    item = pages[0]
    participant = item.participant
    expert_answers.expert_rating_save(
        participant=participant,
        shown_text=SimplificationText.objects.get(pk=item.text_order[1]),
        scores={"correctness": 2},
    )
    built = []

    def build(**arguments):
        built.append(arguments)
        return texts_with_ratings(**arguments)

    prepared = PreparedQuery(build)
    other = pages[-1]
    cases = [
        (tuple(item.text_order), item.participant_id),
        (tuple(item.text_order), other.participant_id),
        (tuple(other.text_order), item.participant_id),
        (tuple(item.text_order[:2]), item.participant_id),  # another length: another SQL
        ((item.text_order[0],), other.participant_id),
        ((), item.participant_id),
    ]
    for text_ids, participant_id in cases:
        expected = list(texts_with_ratings(text_ids, participant_id))
        assert prepared.rows(text_ids=text_ids, participant_id=participant_id) == expected
    assert any(
        row[3] == 2
        for row in prepared.rows(text_ids=tuple(item.text_order), participant_id=item.participant_id)
    )
    # Compiled once per shape (tuple length), not once per call.
    assert len(built) == 4


def test_rows_are_converted_as_values_list_converts_them(pages):
    prepared = PreparedQuery(
        lambda item_id: ExpertItem.objects.filter(pk=item_id).values_list("text_order", "completed_at")
    )
    item = pages[1]
    moment = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    ExpertItem.objects.filter(pk=item.pk).update(completed_at=moment)
    assert prepared.rows(item_id=item.pk) == [(item.text_order, moment)]
    assert isinstance(prepared.rows(item_id=item.pk)[0][0], list)  # JSON decoded, not a string


def test_one_query_per_call(pages, django_assert_num_queries):
    prepared = PreparedQuery(lambda item_id: ExpertItem.objects.filter(pk=item_id).values_list("pk"))
    prepared.rows(item_id=pages[0].pk)
    with django_assert_num_queries(1):
        assert prepared.rows(item_id=pages[2].pk) == [(pages[2].pk,)]


def test_a_read_is_sorted_only_as_it_asks(pages):
    """A model's default ordering is left out: ExpertItem's sorts by its participant's, which sorts
    by the study's, so a lookup by key would join both tables only to sort one row."""
    by_key = PreparedQuery(lambda item_id: ExpertItem.objects.filter(pk=item_id).values_list("pk"))
    ordered = PreparedQuery(
        lambda participant_id: (
            ExpertItem.objects.filter(participant_id=participant_id).order_by("-position").values_list("pk")
        )
    )
    participant = pages[0].participant
    with CaptureQueriesContext(connection) as seen:
        assert by_key.rows(item_id=pages[1].pk) == [(pages[1].pk,)]
        rows = ordered.rows(participant_id=participant.pk)
    assert "ORDER BY" not in seen[0]["sql"] and "JOIN" not in seen[0]["sql"]
    expected = ExpertItem.objects.filter(participant=participant).order_by("-position").values_list("pk")
    assert rows == list(expected) and len(rows) == 4


def test_an_argument_the_orm_rewrites_cannot_be_a_placeholder(pages):
    prepared = PreparedQuery(lambda word: Source.objects.filter(text__icontains=word).values_list("pk"))
    with pytest.raises(ImproperlyConfigured, match="word"):
        prepared.rows(word="liver")


def test_only_ints_strings_aware_datetimes_and_their_tuples_are_placeholders(pages):
    prepared = PreparedQuery(
        lambda since: ExpertItem.objects.filter(completed_at__gte=since).values_list("pk")
    )
    with pytest.raises(ImproperlyConfigured, match="since"):
        prepared.rows(since=dt.datetime(2026, 1, 1))  # naive
    with pytest.raises(ImproperlyConfigured, match="since"):
        prepared.rows(since=dt.date(2026, 1, 1))


def test_a_comparison_with_a_positive_integer_column_is_prepared(pages):
    # Django rewrites a comparison with a value outside the column's range: placeholders are in it.
    prepared = PreparedQuery(
        lambda participant_id, position: ExpertItem.objects.filter(
            participant_id=participant_id, position__lte=position
        ).values_list("pk")
    )
    item = pages[0]
    for position in (0, 1, 2, 10):
        expected = list(
            ExpertItem.objects.filter(participant_id=item.participant_id, position__lte=position).values_list(
                "pk"
            )
        )
        assert prepared.rows(participant_id=item.participant_id, position=position) == expected
    assert len(prepared.rows(participant_id=item.participant_id, position=1)) == 2


def test_a_prepared_aggregate_equals_aggregate_also_over_no_rows(pages):
    def aggregates(position):
        return {
            "total": Count("pk"),
            "before": Count("pk", filter=Q(position__lt=position)),
            "previous": Max("position", filter=Q(position__lt=position)),
            "following": Min("position", filter=Q(position__gt=position)),
        }

    prepared = PreparedAggregate(
        lambda participant_id, position: (
            ExpertItem.objects.filter(participant_id=participant_id),
            "participant_id",
            aggregates(position),
        )
    )
    participant_id = pages[0].participant_id
    for position in (0, 1, 3, 9):
        expected = ExpertItem.objects.filter(participant_id=participant_id).aggregate(**aggregates(position))
        assert prepared.values(participant_id=participant_id, position=position) == expected
    nobody = ExpertItem.objects.filter(participant_id=-5).aggregate(**aggregates(1))
    assert nobody == {"total": 0, "before": 0, "previous": None, "following": None}
    assert prepared.values(participant_id=-5, position=1) == nobody


def test_datetimes_and_none_select_the_rows_the_queryset_selects(pages):
    early, late = (dt.datetime(2026, 1, day, 12, 0, 0, 250_000, tzinfo=dt.UTC) for day in (2, 9))
    ExpertItem.objects.filter(pk=pages[0].pk).update(completed_at=early)
    ExpertItem.objects.filter(pk=pages[1].pk).update(completed_at=late)

    def build(since, done):
        items = ExpertItem.objects.order_by("pk")
        if done is None:  # not done yet, or done since
            return items.filter(Q(completed_at__isnull=True) | Q(completed_at__gte=since)).values_list("pk")
        return items.filter(completed_at__gte=since).values_list("pk", "completed_at")

    prepared = PreparedQuery(build)
    for since, done in [
        (early, True),
        (late, True),
        (late + dt.timedelta(microseconds=1), True),
        (early, None),
    ]:
        assert prepared.rows(since=since, done=done) == list(build(since, done))
    assert prepared.rows(since=early, done=True) == [(pages[0].pk, early), (pages[1].pk, late)]


def test_a_prepared_update_changes_what_update_changes(pages):
    def build(item_id, added, completed_at):
        changes = {"time_spent_ms": F("time_spent_ms") + added, "completed_at": completed_at}
        return ExpertItem.objects.filter(pk=item_id), changes

    prepared = PreparedUpdate(build)
    moment = dt.datetime(2026, 3, 4, 5, 6, 7, 891_011, tzinfo=dt.UTC)
    assert prepared.run(item_id=pages[0].pk, added=1500, completed_at=moment) == 1
    assert prepared.run(item_id=pages[0].pk, added=250, completed_at=moment) == 1
    assert prepared.run(item_id=pages[1].pk, added=7, completed_at=None) == 1
    assert prepared.run(item_id=-1, added=7, completed_at=None) == 0
    assert ExpertItem.objects.filter(pk=pages[0].pk).values_list("time_spent_ms", "completed_at").get() == (
        1750,
        moment,
    )
    assert ExpertItem.objects.filter(pk=pages[1].pk).values_list("time_spent_ms", "completed_at").get() == (
        7,
        None,
    )
    untouched = [item.pk for item in pages[2:]]
    assert set(ExpertItem.objects.filter(pk__in=untouched).values_list("time_spent_ms", flat=True)) == {0}


SQLITE_SCRIPT = r"""
import datetime as dt, json
import django
django.setup()
from django.core.management import call_command
from django.db.models import F
call_command("migrate", verbosity=0)
from annotation import participant_services
from surveys.radiologist import services as expert_answers
from surveys.radiologist import assignment
from annotation.models import ExpertItem, Participant, Source
from annotation.prepared_queries import PreparedQuery, PreparedUpdate
from tests.annotation.factories import build_study

study = build_study(slug="lite", n_sources=3, systems=("a", "b"))
rater = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
ids = expert_answers.expert_items_create(
    participant=rater, source_ids=list(Source.objects.values_list("pk", flat=True)), first_position=0)
items = list(ExpertItem.objects.filter(pk__in=ids).order_by("pk"))
update = PreparedUpdate(lambda item_id, at: (ExpertItem.objects.filter(pk=item_id), {"completed_at": at}))
def done_since(since):
    return ExpertItem.objects.filter(completed_at__gte=since).order_by("pk").values_list("pk", "completed_at")
read = PreparedQuery(done_since)
moment = dt.datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=dt.UTC)
later = moment + dt.timedelta(days=1)
changed = [update.run(item_id=items[0].pk, at=moment), update.run(item_id=items[1].pk, at=later)]
since = moment + dt.timedelta(microseconds=1)
got, orm = read.rows(since=since), list(done_since(since))
stored = ExpertItem.objects.get(pk=items[0].pk).completed_at
print(json.dumps({"changed": changed, "same": got == orm, "rows": len(got),
                  "second": got[0][0] == items[1].pk, "stored": stored == moment}))
"""


@pytest.mark.heavy
def test_prepared_reads_and_updates_adapt_datetimes_on_sqlite(tmp_path):
    outcome = run_on_sqlite(SQLITE_SCRIPT, tmp_path)
    assert outcome == {"changed": [1, 1], "same": True, "rows": 1, "second": True, "stored": True}


@pytest.mark.skipif(not connection.features.has_select_for_update, reason="the database has no row locks")
@pytest.mark.django_db(transaction=True)
def test_a_locking_read_needs_a_transaction():
    study = build_study(slug="locking", n_sources=1, systems=("a",))
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    (item,) = assignment.expert_items_ensure(participant=participant)
    prepared = PreparedQuery(
        lambda item_id: ExpertItem.objects.select_for_update().filter(pk=item_id).values_list("pk")
    )
    with pytest.raises(TransactionManagementError):
        prepared.rows(item_id=item.pk)
    with transaction.atomic():
        assert prepared.rows(item_id=item.pk) == [(item.pk,)]


def test_joined_builds_the_instances_select_related_builds(pages, django_assert_num_queries):
    joined = Joined(ExpertItem, "participant", "participant__study", "source")
    prepared = PreparedQuery(
        lambda item_id: ExpertItem.objects.filter(pk=item_id).values_list(*joined.columns())
    )
    for expected in pages[:2] + pages[-1:]:
        (row,) = prepared.rows(item_id=expected.pk)
        with django_assert_num_queries(0):
            item = joined.instances(row)
            assert (item.pk, item.position, item.text_order, item.source_id) == (
                expected.pk,
                expected.position,
                expected.text_order,
                expected.source_id,
            )
            assert (
                item.participant == expected.participant
                and item.participant.token == expected.participant.token
            )
            assert item.participant.study.slug == expected.participant.study.slug
            assert item.participant.study.is_open == expected.participant.study.is_open
            assert item.source.text == expected.source.text
        assert not item._state.adding and item._state.db == "default"


def _pages_of(item_id, token, added):
    return ExpertItem.objects.filter(pk=item_id, participant__token=token).values_list(
        "pk", "time_spent_ms", "participant__token", "source__text"
    )


def _pages_locked(item_id, token, added):
    return ExpertItem.objects.filter(pk=item_id, participant__token=token), {
        "time_spent_ms": F("time_spent_ms") + added
    }


@pytest.mark.skipif(connection.vendor != "postgresql", reason="an UPDATE in a WITH: PostgreSQL")
def test_a_locking_read_updates_its_rows_and_reads_them_as_updated(pages, django_assert_num_queries):
    prepared = PreparedQuery(_pages_of, locking=_pages_locked)
    first, other = pages[0], pages[-1]
    token = first.participant.token
    with transaction.atomic(), django_assert_num_queries(1):
        assert prepared.rows(item_id=first.pk, token=token, added=1500) == [
            (first.pk, 1500, token, first.source.text)
        ]
    with transaction.atomic():
        (row,) = prepared.rows(item_id=first.pk, token=token, added=250)
        assert row[1] == 1750  # the row as this statement's UPDATE left it
        # Another participant's page, or a token that is not its own: no row read, none changed.
        assert prepared.rows(item_id=other.pk, token=token, added=9) == []
        assert prepared.rows(item_id=first.pk, token="nobody", added=9) == []
    assert ExpertItem.objects.get(pk=first.pk).time_spent_ms == 1750
    assert ExpertItem.objects.get(pk=other.pk).time_spent_ms == 0


@pytest.mark.skipif(connection.vendor != "postgresql", reason="an UPDATE in a WITH: PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_a_locking_read_takes_its_lock_in_a_transaction_only():
    study = build_study(slug="locked-read", n_sources=1, systems=("a",))
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    (item,) = assignment.expert_items_ensure(participant=participant)
    prepared = PreparedQuery(_pages_of, locking=_pages_locked)
    with pytest.raises(TransactionManagementError):
        prepared.rows(item_id=item.pk, token=participant.token, added=5)
    assert ExpertItem.objects.get(pk=item.pk).time_spent_ms == 0


def test_joined_instances_are_whole_saved_as_usual_and_signalled_when_listened_to(pages):
    from django.db.models.signals import post_init

    joined = Joined(ExpertItem, "participant", "participant__study", "source")
    prepared = PreparedQuery(
        lambda item_id: ExpertItem.objects.filter(pk=item_id).values_list(*joined.columns())
    )
    (row,) = prepared.rows(item_id=pages[0].pk)
    item = joined.instances(row)
    assert not item.get_deferred_fields() and not item.participant.get_deferred_fields()
    item.time_spent_ms = 4321
    item.save(update_fields=["time_spent_ms"])
    assert ExpertItem.objects.get(pk=item.pk).time_spent_ms == 4321
    seen: list = []

    def receiver(sender, instance, **kwargs) -> None:
        seen.append(instance)

    post_init.connect(receiver, sender=ExpertItem)
    try:
        assert joined.instances(row).pk == pages[0].pk
    finally:
        post_init.disconnect(receiver, sender=ExpertItem)
    assert [instance.pk for instance in seen] == [pages[0].pk]  # built by from_db, as Django builds it
