"""Analysis snapshots: computed by the task, debounced, read by the dashboard and the API without
computing anything in the request."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from annotation import scales
from annotation.models import ItemAnswer, LayItem, Study
from evaluation import services, tasks
from evaluation.models import AnalysisSnapshot
from evaluation.selectors import snapshot_analysis
from surveys.lay import services as lay_answers
from tests.annotation import answers
from tests.evaluation.analysis.test_study_frames import build_answered_study
from tests.generation.test_celery_worker import broker_mode
from work.models import WORKER_HEARTBEAT, WorkerHeartbeat
from work.scheduler import timing_from_settings

__all__ = ["broker_mode"]  # a fixture, for the pages of a deployment with a broker

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_analysis")]


@pytest.fixture
def study():
    return build_answered_study(slug="snap")


@pytest.fixture
def sent(monkeypatch):
    """Record the tasks sent instead of running them (a broker that nobody consumes yet)."""
    calls: list[int] = []
    monkeypatch.setattr(tasks, "analysis_snapshot_send", lambda *, study_id: calls.append(study_id))
    return calls


def change_an_answer(study, understanding: str = "Not at all") -> None:
    answer = (
        ItemAnswer.objects.filter(participant__study=study, phase="assisted", item_key="understanding")
        .order_by("pk")
        .first()
    )
    code = scales.UNDERSTANDING.value_of(understanding)
    ItemAnswer.objects.filter(pk=answer.pk).update(
        value=code, score=float(code), updated_at=timezone.now() + timedelta(seconds=1)
    )


@pytest.mark.heavy
def test_the_snapshot_follows_the_data(study):
    first = services.analysis_snapshot_refresh(study=study)
    assert not first.stale and not first.recomputing
    lay_before = first.snapshot.result["lay"]
    assert first.snapshot.n_answers == (
        len(answers.lay_answers(study=study))
        + len(answers.preferences(study=study))
        + len(answers.ratings(study=study))
        + len(answers.judgements(study=study))
    )
    # Nothing changed: no recomputation.
    computed_at = first.snapshot.computed_at
    assert services.analysis_snapshot_refresh(study=study).snapshot.computed_at == computed_at
    change_an_answer(study)
    second = services.analysis_snapshot_refresh(study=study)
    assert second.snapshot.computed_at > computed_at
    assert second.snapshot.result["lay"] != lay_before


@pytest.mark.heavy
def test_at_most_one_recomputation_is_queued_and_a_change_meanwhile_runs_once_more(study, sent):
    assert services.analysis_snapshot_request(study=study) is True
    assert services.analysis_snapshot_request(study=study) is False
    assert services.analysis_snapshot_request(study=study) is False
    assert sent == [study.pk]
    snapshot = AnalysisSnapshot.objects.get(study=study)
    assert snapshot.status == "queued" and snapshot.dirty
    # The worker runs the queued computation; it was asked again meanwhile, so it sends one more.
    assert services.analysis_snapshot_compute(study_id=study.pk) is True
    assert sent == [study.pk, study.pk]
    snapshot.refresh_from_db()
    assert snapshot.status == "queued" and not snapshot.dirty and snapshot.result is not None
    # A redelivered message of the finished task finds nothing to claim once it has run.
    assert services.analysis_snapshot_compute(study_id=study.pk) is True
    assert services.analysis_snapshot_compute(study_id=study.pk) is False
    assert sent == [study.pk, study.pk]


@pytest.mark.heavy
def test_a_claim_of_a_dead_worker_is_taken_over(study, sent, settings):
    services.analysis_snapshot_request(study=study)
    stale = timezone.now() - timedelta(seconds=timing_from_settings().stale_after + 1)
    # A live lease (a heartbeat within RADLAY_JOB_TIMING.stale_after) is not taken over...
    AnalysisSnapshot.objects.filter(study=study).update(
        status="running", started_at=stale, heartbeat_at=timezone.now(), runner="dead"
    )
    assert services.analysis_snapshot_request(study=study) is False
    assert services.analysis_snapshots_heal() == 0
    # ...one whose heartbeat lapsed is, by the healing check, without waiting for the time limit.
    AnalysisSnapshot.objects.filter(study=study).update(heartbeat_at=stale)
    assert services.analysis_snapshots_heal() == 1
    assert len(sent) == 2
    snapshot = AnalysisSnapshot.objects.get(study=study)
    assert (snapshot.status, snapshot.runner, snapshot.healed) == ("queued", "", 1)
    # The dead worker's task, were it to wake up, no longer holds the lease: it cannot end the new one.
    assert services.analysis_snapshot_compute(study_id=study.pk) is True
    snapshot.refresh_from_db()
    assert snapshot.status in ("idle", "queued") and snapshot.result is not None


def test_a_dead_workers_claim_is_taken_over_by_the_next_request_too(study, sent, settings):
    services.analysis_snapshot_request(study=study)
    stale = timezone.now() - timedelta(seconds=timing_from_settings().stale_after + 1)
    AnalysisSnapshot.objects.filter(study=study).update(
        status="running", started_at=stale, heartbeat_at=stale
    )
    assert services.analysis_snapshot_request(study=study) is True
    assert len(sent) == 2


@pytest.mark.django_db(transaction=True)
def test_a_running_computation_keeps_its_lease(study, settings, monkeypatch):
    """The task stamps its heartbeat while it computes, so a slow analysis is never taken over."""
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, heartbeat=0.05)
    seen: list = []

    def slow(**kwargs):
        time.sleep(0.4)
        seen.append(AnalysisSnapshot.objects.get(study=study).heartbeat_at)
        raise RuntimeError("stop here")

    monkeypatch.setattr(services, "study_analysis_compute", slow)
    AnalysisSnapshot.objects.create(study=study, status="queued", sent_at=timezone.now())
    claimed_at = timezone.now()
    services.analysis_snapshot_compute(study_id=study.pk)
    assert seen and seen[0] > claimed_at + timedelta(seconds=0.1)
    snapshot = AnalysisSnapshot.objects.get(study=study)
    assert (snapshot.status, snapshot.runner, snapshot.heartbeat_at) == ("idle", "", None)


def test_a_failed_send_is_kept_and_sent_again_by_the_healing_check(study, settings, monkeypatch):
    """The broker is down: the page that asked is not a 500, the row says why, and the healing
    check sends it once the broker is back."""
    calls: list[int] = []

    def down(*, study_id):
        raise ConnectionRefusedError("Error 111 connecting to 127.0.0.1:6379")

    monkeypatch.setattr(tasks, "analysis_snapshot_send", down)
    assert services.analysis_snapshot_request(study=study) is True
    snapshot = AnalysisSnapshot.objects.get(study=study)
    assert snapshot.status == "queued" and "ConnectionRefusedError" in snapshot.send_error
    # Within a healing interval of the failure it is not tried again (a page load each time
    # would otherwise wait for the broker's connection timeout).
    assert services.analysis_snapshots_heal() == 0
    AnalysisSnapshot.objects.filter(study=study).update(
        sent_at=timezone.now() - timedelta(seconds=settings.RADLAY_JOB_TIMING.heal_interval + 1)
    )
    monkeypatch.setattr(tasks, "analysis_snapshot_send", lambda *, study_id: calls.append(study_id))
    assert services.analysis_snapshots_heal() == 1
    assert calls == [study.pk]
    snapshot.refresh_from_db()
    assert snapshot.send_error == "" and snapshot.status == "queued"
    # A message sent that no worker started within the dispatch deadline is sent again.
    assert services.analysis_snapshots_heal() == 0
    AnalysisSnapshot.objects.filter(study=study).update(
        sent_at=timezone.now() - timedelta(seconds=settings.RADLAY_JOB_TIMING.dispatch_deadline + 1)
    )
    assert services.analysis_snapshots_heal() == 1
    assert calls == [study.pk, study.pk]


@pytest.mark.heavy
def test_the_healing_check_stamps_the_worker_heartbeat_and_pages_say_when_none_answers(
    client_in, study, settings, broker_mode
):
    services.analysis_snapshot_compute_here(study=study)
    url = reverse("evaluation:study-detail", args=["snap"])
    assert "No worker is running: none has answered yet" in client_in.get(url).content.decode()
    tasks.analysis_snapshots_heal_task.apply(throw=True)
    assert WorkerHeartbeat.objects.get(name=WORKER_HEARTBEAT).seen_at > timezone.now() - timedelta(seconds=5)
    assert "No worker is running" not in client_in.get(url).content.decode()
    long_ago = timezone.now() - timedelta(seconds=settings.RADLAY_JOB_TIMING.worker_silent_after + 5)
    WorkerHeartbeat.objects.update(seen_at=long_ago)
    page = client_in.get(url).content.decode()
    assert f"none has answered since {timezone.localtime(long_ago):%H:%M}" in page
    api = client_in.get(reverse("api:analysis", args=["snap"])).json()["snapshot"]
    assert api["no_worker"] is True and api["no_worker_since"].startswith(f"{long_ago:%Y-%m-%d}")


@pytest.mark.heavy
def test_the_dashboard_says_since_when_it_recomputes_and_that_a_worker_was_lost(
    client_in, study, sent, settings
):
    services.analysis_snapshot_compute_here(study=study)
    asked = timezone.now() - timedelta(minutes=7)
    stale = timezone.now() - timedelta(seconds=timing_from_settings().stale_after + 30)
    AnalysisSnapshot.objects.filter(study=study).update(
        status="running", requested_at=asked, started_at=asked, heartbeat_at=stale
    )
    page = client_in.get(reverse("evaluation:study-detail", args=["snap"])).content.decode()
    assert f"recomputing since {timezone.localtime(asked):%H:%M}" in page
    assert f"stopped answering (last heard at {timezone.localtime(stale):%H:%M})" in page
    api = client_in.get(reverse("api:analysis", args=["snap"])).json()["snapshot"]
    assert api["worker_lost"] is True and api["recomputing"] is True


def test_a_failed_computation_is_kept_and_not_retried_on_the_same_data(study, sent, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("evaluation.analysis.study.study_analysis", broken)
    services.analysis_snapshot_request(study=study)
    assert services.analysis_snapshot_compute(study_id=study.pk) is False
    snapshot = AnalysisSnapshot.objects.get(study=study)
    assert snapshot.status == "idle" and "RuntimeError: boom" in snapshot.error and snapshot.result is None
    services.analysis_snapshot_refresh(study=study)
    assert len(sent) == 1
    change_an_answer(study)
    services.analysis_snapshot_refresh(study=study)
    assert len(sent) == 2


@pytest.mark.heavy
def test_the_beat_task_refreshes_open_studies_whose_data_changed(study, sent):
    study.status = "open"
    study.save()
    services.analysis_snapshot_compute_here(study=study)
    tasks.analysis_snapshots_refresh_task()
    assert sent == []
    change_an_answer(study)
    tasks.analysis_snapshots_refresh_task()
    assert sent == [study.pk]


# --- readers --------------------------------------------------------------------------------------


@pytest.fixture
def client_in(client, study):
    user = get_user_model().objects.create_user("ada", password="pw")
    study.researchers.add(user)
    client.force_login(user)
    return client


@pytest.mark.heavy
def test_the_dashboard_shows_the_last_snapshot_while_a_newer_one_is_computed(client_in, study, sent):
    services.analysis_snapshot_compute_here(study=study)
    url = reverse("evaluation:study-detail", args=["snap"])
    html = client_in.get(url).content.decode()
    assert "Table 1" in html and "recomputing" not in html and 'hx-trigger="every' not in html
    change_an_answer(study)
    html = client_in.get(url).content.decode()
    # The old tables, the freshness line and the polling, and the task was sent, not run here.
    assert "Table 1" in html and "recomputing" in html and 'hx-trigger="every 5s"' in html
    assert sent == [study.pk]
    snapshot = AnalysisSnapshot.objects.get(study=study)
    shown = snapshot.computed_at.isoformat()
    freshness = reverse("evaluation:study-freshness", args=["snap"])
    poll = client_in.get(freshness, {"shown": shown}, HTTP_HX_REQUEST="true")
    assert poll.status_code == 200 and "HX-Refresh" not in poll
    # The worker lands the new snapshot: the next poll reloads the page.
    services.analysis_snapshot_compute(study_id=study.pk)
    poll = client_in.get(freshness, {"shown": shown}, HTTP_HX_REQUEST="true")
    assert poll["HX-Refresh"] == "true"


@pytest.mark.heavy
def test_the_dashboard_neither_computes_nor_loads_a_model(client_in, study, sent, settings, monkeypatch):
    services.analysis_snapshot_compute_here(study=study)
    settings.RADLAY_ANALYSIS_OPTIONS = {**settings.RADLAY_ANALYSIS_OPTIONS, "embeddings": True}

    def forbidden(*args, **kwargs):
        raise AssertionError("the web request computed the analysis or loaded a model")

    monkeypatch.setattr("evaluation.analysis.study.study_analysis", forbidden)
    monkeypatch.setattr("ml.services.embedder_get", forbidden)
    change_an_answer(study)
    for name in ("study-detail", "study-metrics", "study-correlations", "study-analysis", "study-report"):
        response = client_in.get(reverse(f"evaluation:{name}", args=["snap"]))
        assert response.status_code == 200, name
    api = client_in.get(reverse("api:analysis", args=["snap"]))
    assert api.status_code == 200 and api.json()["snapshot"]["stale"] is True


@pytest.mark.heavy
def test_the_dashboard_of_a_fresh_snapshot_costs_a_few_queries(
    client_in, study, django_assert_max_num_queries
):
    services.analysis_snapshot_compute_here(study=study)
    with django_assert_max_num_queries(16):
        assert client_in.get(reverse("evaluation:study-detail", args=["snap"])).status_code == 200


def test_before_the_first_snapshot_pages_say_so(client_in, study, sent):
    html = client_in.get(reverse("evaluation:study-detail", args=["snap"])).content.decode()
    assert "first analysis of this study is being computed" in html
    assert client_in.get(reverse("evaluation:study-analysis", args=["snap"])).status_code == 503
    api = client_in.get(reverse("api:analysis", args=["snap"]))
    assert api.status_code == 202 and api["Retry-After"]


@pytest.mark.heavy
def test_api_fresh_waits_for_a_snapshot_computed_after_the_request(client_in, study):
    services.analysis_snapshot_compute_here(study=study)
    before = AnalysisSnapshot.objects.get(study=study).computed_at
    latest = client_in.get(reverse("api:analysis", args=["snap"])).json()
    assert latest["snapshot"]["computed_at"] == before.isoformat().replace("+00:00", "Z")
    fresh = client_in.get(reverse("api:analysis", args=["snap"]), {"fresh": "1"}).json()
    assert fresh["snapshot"]["computed_at"] > latest["snapshot"]["computed_at"]
    assert fresh["lay"] == latest["lay"] and fresh["snapshot"]["stale"] is False


# --- the check of the study's data, off the request path -----------------------------------------

ANSWER_TABLES = ("annotation_itemanswer",)
# Longer than any computation in the suite takes, however busy the machine: a snapshot that landed
# leaves a count younger than this, so no check is due until a test ages it.
CHECK_SECONDS = 600


@pytest.fixture
def checks(monkeypatch, settings):
    """Readers count the study's data at most every CHECK_SECONDS, and send the count to a
    worker: the checks sent are recorded, not run, until the test runs them."""
    settings.RADLAY_ANALYSIS = replace(settings.RADLAY_ANALYSIS, check_seconds=CHECK_SECONDS)
    cache.clear()
    calls: list[int] = []
    monkeypatch.setattr(tasks, "analysis_coverage_check_send", lambda *, study_id: calls.append(study_id))
    yield calls
    cache.clear()


def counted_tables(captured) -> set[str]:
    return {table for query in captured for table in ANSWER_TABLES if table in query["sql"]}


@pytest.mark.heavy
def test_a_reader_sends_the_check_of_the_data_instead_of_counting(client_in, study, sent, checks):
    services.analysis_snapshot_compute_here(study=study)
    cache.clear()  # nothing counted yet (e.g. the cache was restarted)
    url = reverse("evaluation:study-detail", args=["snap"])
    with CaptureQueriesContext(connection) as captured:
        html = client_in.get(url).content.decode()
    assert counted_tables(captured) == set()
    assert checks == [study.pk] and "checking for new answers" in html and 'hx-trigger="every 5s"' in html
    # One check on its way per study: the next reader does not send another.
    client_in.get(url)
    assert checks == [study.pk]
    # The worker counts: nothing changed, so the page is fresh, and nothing is recomputed.
    services.analysis_coverage_check_run(study_id=study.pk)
    html = client_in.get(url).content.decode()
    assert "checking" not in html and "recomputing" not in html and 'hx-trigger="every' not in html
    assert sent == []
    # An answer changes; once the count is older than the interval, a reader sends a new check,
    # which finds the change and requests the recomputation.
    change_an_answer(study)
    counted = cache.get(f"radlay:analysis-coverage:{study.pk}")
    cache.set(f"radlay:analysis-coverage:{study.pk}", {**counted, "at": counted["at"] - CHECK_SECONDS - 1})
    client_in.get(url)
    assert checks == [study.pk, study.pk]
    services.analysis_coverage_check_run(study_id=study.pk)
    assert sent == [study.pk]
    html = client_in.get(url).content.decode()
    assert "answers changed since" in html and "recomputing" in html


@pytest.mark.heavy
def test_a_landed_snapshot_needs_no_check_and_new_answers_show_once_counted(client_in, study, sent, checks):
    answer = answers.lay_answers(study=study, phase="assisted")[0]
    item = LayItem.objects.get(participant_id=answer.participant_id, source_id=answer.source_id)
    understanding = answer.understanding
    ItemAnswer.objects.filter(
        participant_id=item.participant_id, source_id=item.source_id, phase="assisted"
    ).delete()
    services.analysis_snapshot_compute_here(study=study)
    url = reverse("evaluation:study-detail", args=["snap"])
    with CaptureQueriesContext(connection) as captured:
        html = client_in.get(url).content.decode()
    # The snapshot left the count it was computed from: no count, no check.
    assert counted_tables(captured) == set() and checks == [] and "checking" not in html
    lay_answers.lay_answer_save(item=item, phase="assisted", answers={"understanding": understanding})
    # Until a check counts it, the page shows the snapshot as fresh; the check finds the answer.
    assert "answer since" not in client_in.get(url).content.decode()
    services.analysis_coverage_check_run(study_id=study.pk)
    assert sent == [study.pk]
    html = client_in.get(url).content.decode()
    assert "1 answer since" in html and "recomputing" in html


@pytest.mark.heavy
@pytest.mark.parametrize("n_sources", [2, 6])
def test_the_dashboard_get_costs_the_same_few_queries_at_any_size(
    client, n_sources, sent, checks, django_assert_num_queries
):
    """Session, user, study, snapshot row, its figures, the researcher check, the flows its
    instruments ask (which sections it shows): whatever the study's size and answers, once a
    snapshot landed."""
    study = build_answered_study(slug=f"size{n_sources}", n_sources=n_sources)
    user = get_user_model().objects.create_user(f"ada{n_sources}", password="pw")
    study.researchers.add(user)
    client.force_login(user)
    services.analysis_snapshot_compute_here(study=study)
    url = reverse("evaluation:study-detail", args=[study.slug])
    with django_assert_num_queries(7):
        assert client.get(url).status_code == 200
    assert checks == []


@pytest.mark.heavy
def test_the_api_serves_the_stored_document_as_the_renderer_would(client_in, study, sent):
    """The fast path (the stored JSON text) and DRF's rendering of the decoded snapshot give the
    same document."""
    services.analysis_snapshot_compute_here(study=study)
    snapshot = AnalysisSnapshot.objects.get(study=study)
    assert snapshot.document and snapshot.details["per_simplification"]
    response = client_in.get(reverse("api:analysis", args=["snap"]))
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    served = json.loads(response.content)
    about = served.pop("snapshot")
    reference = json.loads(JSONRenderer().render(snapshot_analysis(snapshot)))
    assert served == reference
    assert about["computed_at"] == snapshot.computed_at.isoformat().replace("+00:00", "Z")
    assert about["stale"] is False and about["checking"] is False
    # Without the stored text (a snapshot from before it was kept) the document is the same.
    AnalysisSnapshot.objects.filter(pk=snapshot.pk).update(document="")
    again = client_in.get(reverse("api:analysis", args=["snap"])).json()
    again.pop("snapshot")
    assert again == reference
    # The browsable API still renders it.
    assert client_in.get(reverse("api:analysis", args=["snap"]), HTTP_ACCEPT="text/html").status_code == 200


@pytest.mark.heavy
def test_the_metrics_section_shows_the_first_rows_per_simplification(client_in, study, sent, monkeypatch):
    from evaluation.pages import context

    monkeypatch.setattr(context, "PER_TEXT_SHOWN", 3)
    services.analysis_snapshot_compute_here(study=study)
    total = len(AnalysisSnapshot.objects.get(study=study).details["per_simplification"])
    assert total > 3
    html = client_in.get(reverse("evaluation:study-metrics", args=["snap"])).content.decode()
    table = html.split("Per simplification", 1)[1]
    assert f"({total})" in table and f"The first 3 of {total}" in table
    assert table.split("<tbody>", 1)[1].split("</tbody>", 1)[0].count("<tr>") == 3
    assert reverse("evaluation:study-metrics-csv", args=["snap"]) in table


@pytest.mark.heavy
def test_a_failed_snapshot_shows_its_reason_and_the_next_answer_retries_it(client_in, study, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("Length of values (50) does not match length of index (51)")

    monkeypatch.setattr("evaluation.analysis.study.study_analysis", broken)
    api = client_in.get(reverse("api:analysis", args=["snap"]))
    assert api.status_code == 202 and api["Location"] == reverse("api:analysis", args=["snap"])
    reason = "ValueError: Length of values (50) does not match length of index (51)"
    assert api.json()["snapshot"]["error"] == reason
    page = client_in.get(reverse("evaluation:study-detail", args=["snap"])).content.decode()
    assert "The last recomputation failed" in page and reason.replace("(", "") in page.replace("(", "")
    monkeypatch.undo()
    change_an_answer(study)
    api = client_in.get(reverse("api:analysis", args=["snap"]))
    assert api.status_code == 200 and api.json()["snapshot"]["error"] == ""


def test_a_batch_page_says_when_no_worker_runs(client, settings, broker_mode):
    from generation.services import batches
    from studies.source_services import source_upsert

    other = Study.objects.create(slug="gen", title="gen")
    source_upsert(study=other, key="s1", text="Small right pleural effusion.")
    # Created in the test's transaction: its jobs are never sent (on_commit does not run).
    batch = batches.generation_batch_create(study=other, systems=["plain_bs"], backend="glossary")
    user = get_user_model().objects.create_user("root", password="pw", is_staff=True, is_superuser=True)
    client.force_login(user)
    url = reverse("generation:batch_detail", args=[batch.pk])
    assert "No worker is running: none has answered yet" in client.get(url).content.decode()
    services.analysis_snapshots_heal(worker="w1@host")
    assert "No worker is running" not in client.get(url).content.decode()


@pytest.mark.heavy
def test_a_lost_computation_with_every_worker_down_is_told_one_way(
    client_in, study, sent, settings, broker_mode
):
    """With no worker running, the page does not promise that another worker takes the lost
    computation within a minute: it says the worker stopped, and that nothing is computed until one
    is started. With a worker answering, it says the computation is sent to it."""
    services.analysis_snapshot_compute_here(study=study)
    stale = timezone.now() - timedelta(seconds=timing_from_settings().stale_after + 30)
    AnalysisSnapshot.objects.filter(study=study).update(
        status="running", requested_at=stale, started_at=stale, heartbeat_at=stale
    )
    url = reverse("evaluation:study-detail", args=["snap"])
    page = client_in.get(url).content.decode()
    assert "stopped answering" in page and "No worker is running" in page
    assert "within a minute" not in page
    services.analysis_snapshots_heal(worker="w1@host")  # a worker answers (and would take it over)
    AnalysisSnapshot.objects.filter(study=study).update(
        status="running", requested_at=stale, started_at=stale, heartbeat_at=stale
    )
    page = client_in.get(url).content.decode()
    assert "it is sent to another worker within a minute" in page and "No worker is running" not in page
