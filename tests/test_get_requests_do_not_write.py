"""No GET request writes: every URL pattern of the project (the admin aside) is resolved,
its arguments built from one small world (a study with answers, a running generation batch and a
running judge run each with a lost job, a power plan, participants of both flows), and requested
with GET as a superuser, as a researcher of the study and anonymously; no row of any table may
change (each table's rows, hashed, before and after).

The exceptions are named: a radiologist's page records the participant's last activity
(SURVEY_WRITES), and a download is recorded in the study's append-only activity log (the
audit log: who exported what, when) — only as appended "export.downloaded" events. The study's
analysis snapshot is computed before the sweep: a missing or stale one is filled when first read
(evaluation's derived cache, not the job layer's). Everything else a researcher or the API reads
is read-only; lost jobs are re-sent by the healing check or a POST (Resume), never by reading a
page."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone

from annotation import participant_services
from annotation.models import (
    ActivityEvent,
    AttentionCheck,
    LayItem,
    Participant,
    Simplification,
    SourceUpload,
)
from evaluation.models import PowerPlan
from evaluation.services import analysis_snapshot_compute_here
from generation.services import batches
from judging import services as judging_services
from surveys.compare_two.services import pairwise_instrument_attach, pairwise_tasks_prepare
from surveys.radiologist import services as expert_answers
from surveys.rate_each_pair.services import study_instrument_attach
from tests.annotation.factories import build_study
from work import runner

pytestmark = pytest.mark.django_db

# Survey pages that write on GET on purpose (not the job layer's to change); everything else may not.
SURVEY_WRITES = {
    # A radiologist's page records the participant's last activity
    # (annotation.participant_services.participant_touch).
    "surveys:expert-page",
    # So does a pairwise comparison page (surveys/compare_two/views.py).
    "surveys:pairwise-task",
}


# The audit log: a download appends its "export.downloaded" event (checked below), nothing more.
AUDIT_LOG = ActivityEvent._meta.db_table


def url_patterns(patterns=None, prefix: str = "", namespace: str | None = None):
    """(route, name) of every URL pattern outside the admin."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace == "admin":
                continue
            yield from url_patterns(
                pattern.url_patterns, prefix + str(pattern.pattern), pattern.namespace or namespace
            )
        elif isinstance(pattern, URLPattern):
            name = f"{namespace}:{pattern.name}" if namespace and pattern.name else pattern.name or ""
            yield prefix + str(pattern.pattern), name


def database_fingerprint() -> dict[str, str]:
    """Every table's rows, hashed (small test tables: a full read is cheap and misses nothing). On
    PostgreSQL one query hashes every table's rows (each row as its text, in order of primary
    key) in the server; elsewhere each table is read and hashed here."""
    if connection.vendor == "postgresql":
        return _fingerprint_in_one_query()
    fingerprint = {}
    for model in apps.get_models():
        rows = model.objects.order_by("pk").values_list()
        fingerprint[model._meta.db_table] = hashlib.sha256(repr(list(rows)).encode()).hexdigest()
    return fingerprint


def _fingerprint_in_one_query() -> dict[str, str]:
    # Hundreds of requests × every table: one round trip per request instead of one per table.
    quote = connection.ops.quote_name
    tables = {model._meta.db_table: model._meta.pk.column for model in apps.get_models()}
    rows = "md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t.{}), ''))"
    parts = [f"SELECT %s, {rows.format(quote(pk))} FROM {quote(table)} t" for table, pk in tables.items()]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), list(tables))
        return dict(cursor.fetchall())


@pytest.fixture
def world(monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr(
        runner, "send", lambda *args, **kwargs: None
    )  # workers that never come: jobs get lost
    study = build_study(slug="sweep", n_sources=2)
    researcher = get_user_model().objects.create_user("researcher", password="pw")
    study.researchers.add(researcher)
    superuser = get_user_model().objects.create_superuser("root", password="pw")
    batch = batches.generation_batch_create(study=study, systems=["plain_bs"], backend="glossary")
    run = judging_services.judge_run_create(study=study, backend="glossary", instruments=["radiologist"])
    long_ago = timezone.now() - timedelta(hours=1)
    # A lost job in each: a GET that healed would send it again (a write).
    batch.jobs.update(dispatched_at=long_ago)
    run.items.update(dispatched_at=long_ago)
    plan = PowerPlan.objects.create(study=study, outcome="severity", parameters={"outcome": "severity"})
    expert = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    with transaction.atomic():
        expert_item = expert_answers.expert_items_create(
            participant=expert, source_ids=list(study.sources.values_list("pk", flat=True)), first_position=0
        )[0]
    lay = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    simplification = Simplification.objects.filter(source__study=study).first()
    lay_item = LayItem.objects.create(
        participant=lay,
        source=simplification.source,
        position=0,
        assigned_system=simplification.system,
        shown_text=simplification.shown_text,
    )
    # The study's analysis snapshot is up to date, as after its task ran: a stale or missing one is
    # computed when first read (evaluation's derived cache, outside the job layer).
    analysis_snapshot_compute_here(study=study)
    # A pairwise study's consented rater with their pages drawn (the one write of their first visit).
    pairwise_study = build_study(slug="sweep-pairwise", n_sources=2, systems=("a", "b"))
    comparer = participant_services.participant_create(
        study=pairwise_study, role=Participant.Role.RADIOLOGIST
    )
    participant_services.participant_consent(participant=comparer, accepted=True)
    pairwise_task = pairwise_tasks_prepare(
        participant=comparer, instrument=pairwise_instrument_attach(study=pairwise_study)
    )[0]
    check = AttentionCheck.objects.create(
        study=study, position=1, prompt="Pick B", options=["A", "B"], expected_answer="B"
    )
    # A consented rater of the pairs flow (a study of its own: seed 002's instrument).
    pairs_study = build_study(slug="sweep-pairs", n_sources=1, systems=("lay",))
    study_instrument_attach(study=pairs_study, preset_name="medlaybench_002", actor="test")
    rater = participant_services.participant_create(study=pairs_study, role=Participant.Role.RADIOLOGIST)
    participant_services.participant_consent(participant=rater, accepted=True)
    pair_text = Simplification.objects.get(source__study=pairs_study).shown_text_id
    upload = SourceUpload.objects.create(study=study, original_name="sources.csv")
    return {
        "users": {"superuser": superuser, "researcher": researcher, "anonymous": None},
        "values": {
            "slug": study.slug,
            "batch_id": batch.pk,
            "run_id": run.pk,
            "plan_id": plan.pk,
            "file_format": "csv",
            "check_id": check.pk,
            "panel": "original",
            "text_id": pair_text,
            "upload_id": upload.pk,
            "participant_id": lay.pk,
            "role": "layperson",  # the console's preview (a POST; its GET must write nothing)
            "task_id": pairwise_task.pk,
            "key": "protocol_003_radiologist",  # the console's instrument editor
            "item_key": "correctness",
            "unit": "1.correctness.1.1.",  # an adjudication unit (none here: its page is a 404)
            "flow": "expert",  # the qualification round's practice page
            # The de-identification page's actions (POST only: their GET answers 405).
            "finding_id": 1,
            "source_id": study.sources.first().pk,
        },
        "tokens": {
            "q": expert.token,
            "r": expert.token,
            "l": lay.token,
            "s": lay.token,
            "p": rater.token,
            "c": comparer.token,
        },
        "items": {"r": expert_item, "l": lay_item.pk},
    }


def concrete(route: str, world) -> str:
    """The route with its converters filled from the world."""
    flow = route.split("/", 1)[0]

    def value(match: re.Match) -> str:
        name = match.group(2)
        if name == "token":
            return world["tokens"].get(flow, world["tokens"]["l"])
        if name == "item_id":
            return str(world["items"].get(flow, world["items"]["l"]))
        return str(world["values"][name])

    return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", value, route)


@pytest.mark.heavy
def test_no_get_request_writes(client, world):
    routes = [(route, name) for route, name in url_patterns() if not route.startswith("^")]
    assert len(routes) > 40  # the sweep reaches the whole project
    checked, writes = [], []
    for who, user in world["users"].items():
        for route, name in routes:
            if name in SURVEY_WRITES:
                continue
            client.logout()
            if user is not None:
                client.force_login(user)
            before = database_fingerprint()
            events = list(ActivityEvent.objects.order_by("pk").values_list())
            response = client.get(concrete(route, world))
            after = database_fingerprint()
            changed = sorted(table for table in before if before[table] != after[table])
            if AUDIT_LOG in changed:
                now = list(ActivityEvent.objects.order_by("pk").values_list())
                appended = now[len(events) :]
                verbs = {ActivityEvent.objects.get(pk=row[0]).verb for row in appended}
                # Only appended, and only download records: the log's own rows stay as they were.
                if now[: len(events)] == events and verbs == {"export.downloaded"}:
                    changed.remove(AUDIT_LOG)
            if changed:
                writes.append(f"GET {route} ({name}) as {who} ({response.status_code}) wrote to {changed}")
            assert response.status_code != 500, f"GET {route} as {who}"
            checked.append(route)
    assert not writes, "\n".join(writes)
    assert any("generation/batches/" in route for route in checked)
    assert any("/runs/" in route for route in checked)
