"""Analysis snapshots under faults, with a REAL Celery worker and beat, a Redis of the test's own (it
is stopped and started again) and the test PostgreSQL: after the fault the snapshot reaches a final
state by itself, without anyone pressing "recompute now".

The worker and beat run with short lease timings (heartbeat 0.5 s, lapsed after 3 s, the healing
check every second), so each scenario takes well under two minutes. Helpers come from the
generation fault tests (the worker/beat subprocesses, the private Redis)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from evaluation.models import AnalysisSnapshot
from tests.evaluation.analysis.test_study_frames import build_answered_study
from tests.evaluation.test_snapshots import change_an_answer
from tests.generation.test_celery_worker import wait_for, worker_database_url
from tests.generation.test_fault_injection import Services, free_port
from work.models import WORKER_HEARTBEAT, WorkerHeartbeat

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
LEASE = {
    "RADLAY_JOB_TIMING": "heartbeat=0.5,stale_after=3,heal_interval=1,dispatch_deadline=20",
    "RADLAY_ANALYSIS": "refresh_seconds=3600",  # only the healing check sends anything
    "CELERY_BROKER_CONNECTION_TIMEOUT": "1",
}
FINAL_WITHIN = 120  # seconds; generous for a loaded 2-core machine


@pytest.fixture
def snapshot_faults(transactional_db, tmp_path):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    database_url = worker_database_url()
    if database_url is None or connection.vendor != "postgresql":
        pytest.skip("needs the PostgreSQL test database that `make test` starts")
    port = free_port()
    env = {
        **os.environ,
        **LEASE,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "RADLAY_TEST_REAL_CELERY": "1",
        "DATABASE_URL": database_url,
        "REDIS_URL": f"redis://127.0.0.1:{port}/0",
        "PYTHONPATH": str(REPO),
    }
    services = Services(tmp_path, env)
    services.redis_port = port
    services.start_redis(port)
    yield services
    services.close()


def request_snapshot(services: Services, slug: str) -> None:
    """What a page does: ask for a recomputation, from a process that publishes to the test's Redis."""
    code = (
        "import django; django.setup()\n"
        "from annotation.models import Study\n"
        "from evaluation.services import analysis_snapshot_request\n"
        f"print(analysis_snapshot_request(study=Study.objects.get(slug={slug!r})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=services.env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]


def snapshot_of(study) -> AnalysisSnapshot:
    return AnalysisSnapshot.objects.get(study=study)


def computed(services: Services, study, *, after=None, what: str) -> AnalysisSnapshot:
    """Wait until the study's snapshot was computed (later than `after`) and nothing runs."""

    def landed() -> bool:
        snapshot = snapshot_of(study)
        return (
            snapshot.status == "idle"
            and snapshot.computed_at is not None
            and (after is None or snapshot.computed_at > after)
        )

    wait_for(landed, timeout=FINAL_WITHIN, what=what, logs=services.tmp_path)
    return snapshot_of(study)


def test_a_snapshot_whose_worker_is_killed_finishes_on_another(snapshot_faults):
    study = build_answered_study(slug="killed")
    first = snapshot_faults.worker()
    snapshot_faults.beat()
    request_snapshot(snapshot_faults, "killed")
    # The first computation of a worker imports the scientific stack: seconds to kill it in.
    wait_for(
        lambda: snapshot_of(study).status == "running",
        timeout=FINAL_WITHIN,
        what="running",
        logs=snapshot_faults.tmp_path,
    )
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=20)
    assert snapshot_of(study).computed_at is None
    snapshot_faults.worker()  # what the supervisor (compose restart:, systemd Restart=) starts
    snapshot = computed(snapshot_faults, study, what="the snapshot to be computed by another worker")
    assert snapshot.healed >= 1 and snapshot.result is not None and snapshot.error == ""
    seen = WorkerHeartbeat.objects.get(name=WORKER_HEARTBEAT).seen_at
    assert timezone.now() - seen < timedelta(seconds=30)


def test_a_rerun_asked_while_the_broker_is_down_is_sent_when_it_returns(snapshot_faults):
    study = build_answered_study(slug="brokerless")
    snapshot_faults.worker()
    snapshot_faults.beat()
    request_snapshot(snapshot_faults, "brokerless")
    first = computed(snapshot_faults, study, what="the first snapshot")

    snapshot_faults.stop_redis()
    change_an_answer(study)
    request_snapshot(snapshot_faults, "brokerless")  # answers (no exception) although nothing is sent
    queued = snapshot_of(study)
    assert queued.status == "queued" and queued.send_error, (queued.status, queued.send_error)

    snapshot_faults.start_redis(snapshot_faults.redis_port)  # empty: what it held is gone
    workers = [p for p in snapshot_faults.processes if p.poll() is None]
    if len(workers) < 2:
        # A worker that exited on the outage is restarted, as its supervisor would.
        snapshot_faults.worker()
    again = computed(
        snapshot_faults,
        study,
        after=first.computed_at,
        what="the rerun to be sent and computed once Redis is back",
    )
    assert again.n_answers == first.n_answers and again.coverage != first.coverage and again.send_error == ""
