"""Every kind of background work heals the same way, on the job layer: generation batches, judge
runs, analysis snapshots, power plans, training jobs and source uploads. Each test runs for the six
kinds.

- A killed worker: the work it held (running, its heartbeat stopped) is sent again by the healing
  check and finishes; a worker lost on the last of RADLAY_JOB_ATTEMPTS is not retried again: the
  work ends failed with the reason.
- A broker outage: a launch while Redis refuses connections is recorded (the work exists, unsent),
  and the healing check sends it once the broker is back; it then finishes.
- A database restart: with a REAL worker and beat, the private PostgreSQL of the test run is
  restarted while the work runs; the work reaches its final state by itself. It needs
  RADLAY_TEST_PG_CTL/RADLAY_TEST_PGDATA pointing at a PostgreSQL of the test's own (`make test` and
  .ci/test.sh set them; never a shared server) and skips without them.

The first two drive the job layer in this process: `runner.send` is replaced by a broker that keeps
the messages (or refuses them), and `deliver` runs what it holds as a worker would, through the
real tasks.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from console import upload_heal, upload_services
from evaluation import services as evaluation_services
from evaluation.models import AnalysisSnapshot
from evaluation.planning import plans
from evaluation.planning.forms import PlanForm
from generation.models import GenerationJob
from generation.services import batches
from judging import services as judging_services
from judging.models import JudgeItem
from ml import services as ml_services
from ml.models import TrainingJob
from tests.annotation.factories import build_study
from tests.evaluation.analysis.test_study_frames import build_answered_study
from tests.evaluation.conftest import FAST_ANALYSIS_OPTIONS
from tests.generation.test_celery_worker import REPO, broker_mode, wait_for, worker_database_url
from tests.generation.test_fault_injection import Services, restart_postgresql
from tests.work.test_job_layer import make_study
from work import runner, scheduler

__all__ = ["broker_mode"]  # a fixture, imported for the tests below

PLAN = {
    "outcome": "understanding",
    "effect": 0.3,
    "simulations": 40,
    "mixed_simulations": 10,
    "points": 2,
    "max_participants": 16,
    "max_sources": 16,
}
TRAINING = {
    "epochs": 1,
    "batch_size": 4,
    "learning_rate": 5e-3,
    "validation_fraction": 0.25,
    "eval_max_new_tokens": 4,
}


def _sources_file(rows: int) -> str:
    lines = [f"s{i},No acute fracture {i}.,No broken bone {i}." for i in range(rows)]
    return "source_key,source_text,plain_bs\n" + "\n".join(lines) + "\n"


class Broker:
    """Stands in for Redis: keeps the messages sent (`up`), or refuses them (`down`)."""

    def __init__(self, real: Callable[..., None]):
        self.real, self.up, self.held = real, True, []

    def send(self, name: str, messages, **options: Any) -> None:
        if not self.up:
            raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        self.held.append((name, [list(m) for m in messages]))

    def drop(self) -> None:
        """The messages a worker took and never acknowledged before it was killed (an acks_late
        message a broker hands out again only after its visibility timeout)."""
        self.held.clear()

    def deliver(self) -> int:
        """Run every message as a worker would (and those they send), with the real tasks."""
        ran = 0
        while self.held:
            name, messages = self.held.pop(0)
            self.real(name, messages)
            ran += 1
        return ran


@pytest.fixture
def broker(monkeypatch) -> Broker:
    held = Broker(runner.send)
    monkeypatch.setattr(runner, "send", held.send)
    return held


@dataclass(frozen=True)
class Kind:
    """One kind of background work as these tests drive it."""

    name: str
    # Make the work (its launch sends its messages); returns its row.
    launch: Callable[[], Any]
    # The rows that a worker runs (a batch's jobs, or the work's own row).
    units: Callable[[Any], Any]
    running: str
    heal: Callable[[], int]
    # The work reached its successful end.
    succeeded: Callable[[Any], bool]
    # The work ended failed, saying that its worker was lost (each unit of it).
    abandoned: Callable[[Any], bool]


def _upload_launch(rows: int = 1):
    editor = get_user_model().objects.create_user("uploader", password="pw")
    study = build_study(slug="upload", n_sources=1, status="draft")
    return upload_services.source_upload_create(
        study=study, uploaded_file=SimpleUploadedFile("s.csv", _sources_file(rows).encode()), user=editor
    )


def _plan_launch(simulations: int = 40):
    form = PlanForm.with_defaults({**PLAN, "simulations": simulations})
    assert form.is_valid(), form.errors
    study = build_answered_study(slug="pilot", n_sources=8, n_lay=8, n_radiologists=2)
    return plans.plan_create(study=study, parameters=form.cleaned_data)


def _snapshot_launch():
    study = build_answered_study(slug="snap")
    assert evaluation_services.analysis_snapshot_request(study=study)
    return AnalysisSnapshot.objects.get(study=study)


def _training_launch(base: str, epochs: int = 1):
    study = build_study(slug="train-me", n_sources=4, systems=("plain_bs", "cot_bs"))
    return ml_services.training_job_create(
        study=study, pair_filter="all", base_model_path=base, hyperparameters={**TRAINING, "epochs": epochs}
    )


def _batch_launch(create: Callable[[], Any]) -> Any:
    try:
        return create()
    except scheduler.TaskQueueUnreachable as refused:
        return refused.batch  # the launch is recorded: the batch exists and says so


def _reloaded(row):
    return type(row).objects.get(pk=row.pk)


def _one(row):
    return type(row).objects.filter(pk=row.pk)


def _all_abandoned(jobs) -> bool:
    """Every job a killed worker held failed, saying so (the scheduler's reason)."""
    return jobs.exists() and all(job.status == "failed" and "stopped answering" in job.error for job in jobs)


# Each kind, with its work made `scale` times as long (the database restart must find it running).
KINDS: dict[str, Callable[[str, int], Kind]] = {
    "generation": lambda base, scale=1: Kind(
        "generation",
        lambda: _batch_launch(
            lambda: batches.generation_batch_create(
                study=make_study(n=3 * scale), systems=["plain_bs"], backend="glossary"
            )
        ),
        lambda batch: GenerationJob.objects.filter(batch=batch),
        "running",
        batches.generation_batches_heal,
        lambda batch: (
            _reloaded(batch).finished_at is not None
            and set(GenerationJob.objects.filter(batch=batch).values_list("status", flat=True))
            == {"succeeded"}
        ),
        lambda batch: _all_abandoned(GenerationJob.objects.filter(batch=batch, attempts__gt=0)),
    ),
    "judging": lambda base, scale=1: Kind(
        "judging",
        lambda: _batch_launch(
            lambda: judging_services.judge_run_create(
                study=make_study(n=3 * scale), backend="glossary", instruments=["radiologist"]
            )
        ),
        lambda run: JudgeItem.objects.filter(run=run),
        "running",
        judging_services.judge_runs_heal,
        lambda run: (
            _reloaded(run).finished_at is not None
            and set(JudgeItem.objects.filter(run=run).values_list("status", flat=True)) == {"succeeded"}
        ),
        lambda run: _all_abandoned(JudgeItem.objects.filter(run=run, attempts__gt=0)),
    ),
    "snapshot": lambda base, scale=1: Kind(
        "snapshot",
        _snapshot_launch,
        _one,
        "running",
        evaluation_services.analysis_snapshots_heal,
        lambda snapshot: (lambda s: s.status == "idle" and s.computed_at is not None and not s.error)(
            _reloaded(snapshot)
        ),
        lambda snapshot: (lambda s: s.status == "idle" and "stopped answering" in s.error)(
            _reloaded(snapshot)
        ),
    ),
    "plan": lambda base, scale=1: Kind(
        "plan",
        lambda: _plan_launch(40 * scale),
        _one,
        "running",
        plans.power_plans_heal,
        lambda plan: _reloaded(plan).status == "done",
        lambda plan: (lambda p: p.status == "failed" and "stopped answering" in p.error)(_reloaded(plan)),
    ),
    "training": lambda base, scale=1: Kind(
        "training",
        lambda: _training_launch(base, epochs=scale),
        _one,
        "running",
        ml_services.training_jobs_heal,
        lambda job: _reloaded(job).status == "succeeded",
        lambda job: (lambda j: j.status == "failed" and "stopped answering" in j.error)(_reloaded(job)),
    ),
    "upload": lambda base, scale=1: Kind(
        "upload",
        lambda: _upload_launch(rows=1 if scale == 1 else 2000 * scale),
        _one,
        "running",
        upload_heal.source_uploads_heal,
        lambda upload: _reloaded(upload).status == "succeeded",
        lambda upload: (lambda u: u.status == "failed" and "interrupted" in u.errors[0]["reason"])(
            _reloaded(upload)
        ),
    ),
}


@pytest.fixture(scope="module")
def tiny_t5_path(tmp_path_factory) -> str:
    from tests.ml.tiny_models import build_tiny_t5  # torch: imported by the worker that runs this

    return str(build_tiny_t5(tmp_path_factory.mktemp("models") / "tiny-t5"))


@pytest.fixture(params=list(KINDS))
def kind(request, settings, tmp_path, tiny_t5_path) -> Kind:
    settings.RADLAY_JUDGING = replace(settings.RADLAY_JUDGING, bootstrap_resamples=20)
    settings.RADLAY_ANALYSIS_OPTIONS = FAST_ANALYSIS_OPTIONS
    settings.RADLAY_MODEL_DIR = tmp_path / "models"
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RADLAY_JOB_ATTEMPTS = 3
    return KINDS[request.param](tiny_t5_path)


def worker_killed(kind: Kind, work: Any, *, attempts: int) -> int:
    """What a worker killed while it ran the work leaves: every unit it had taken running, its
    heartbeat stopped ten minutes ago, and its messages gone with it."""
    long_ago = timezone.now() - timedelta(minutes=10)
    units = kind.units(work)
    taken = units.filter(status__in=("pending", "queued")).exclude(**_unsent(units.model))
    fields = {"status": kind.running, "attempts": attempts, "started_at": long_ago, "heartbeat_at": long_ago}
    task_field = {AnalysisSnapshot: "runner", TrainingJob: "celery_task_id"}.get(units.model, "task_id")
    sent_field = "dispatched_at" if units.model in (GenerationJob, JudgeItem) else "sent_at"
    fields[sent_field] = long_ago  # sent when the worker took it
    return taken.update(**fields, **{task_field: "killed-worker"})


def _unsent(model) -> dict[str, Any]:
    """The units of a batch that the launch did not send (they wait for a free slot)."""
    if model in (GenerationJob, JudgeItem):
        return {"dispatched_at__isnull": True}
    return {"sent_at__isnull": True}


@pytest.mark.heavy
@pytest.mark.django_db(transaction=True)  # committed for real: messages go out at the commit
def test_a_killed_workers_work_is_sent_again_by_the_healing_check_and_finishes(kind, broker):
    work = kind.launch()
    assert broker.held, "the launch sent its messages"
    assert worker_killed(kind, work, attempts=1) >= 1
    broker.drop()

    assert kind.heal() >= 1
    assert broker.held, "the healing check sent the lost work again"
    broker.deliver()
    assert kind.succeeded(work)
    # Nothing is lost any more: a second check sends nothing.
    kind.heal()
    assert not broker.held


@pytest.mark.django_db(transaction=True)
def test_work_whose_worker_was_lost_on_its_last_attempt_is_abandoned(kind, broker, settings):
    work = kind.launch()
    assert worker_killed(kind, work, attempts=settings.RADLAY_JOB_ATTEMPTS) >= 1
    broker.drop()

    kind.heal()
    assert kind.abandoned(work)
    assert not kind.units(work).filter(status=kind.running).exists()
    # Not sent again (a source that kills its worker every time cannot loop for ever): whatever the
    # end of the work sent (a judge run's agreement) leaves it abandoned.
    broker.deliver()
    assert kind.abandoned(work) and not kind.succeeded(work)


@pytest.mark.heavy
@pytest.mark.django_db(transaction=True)
def test_a_launch_while_the_broker_is_down_is_recorded_and_sent_by_the_healing_check(kind, broker, settings):
    # the next check retries a refused send
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, heal_interval=0)
    broker.up = False
    work = kind.launch()
    assert type(work).objects.filter(pk=work.pk).exists(), "the launch is recorded"
    assert not broker.held
    assert not kind.succeeded(work)

    kind.heal()  # the broker is still down: nothing is lost by trying
    assert not kind.succeeded(work)

    broker.up = True
    assert kind.heal() >= 1
    broker.deliver()
    assert kind.succeeded(work)


# --- a database restart, with a real worker and beat ------------------------------------------------

RECOVERY = {
    "RADLAY_JOB_TIMING": "heartbeat=0.5,stale_after=3,dispatch_deadline=6,heal_interval=1,retry_delay=0.2",
    "RADLAY_JUDGING": "bootstrap_resamples=20",
    "RADLAY_ANALYSIS": "refresh_seconds=3600",  # only the healing check sends anything
}
FINAL_WITHIN = 240  # seconds; generous for a loaded 2-core machine


@pytest.fixture
def restartable():
    if not os.environ.get("RADLAY_TEST_PG_CTL") or not os.environ.get("RADLAY_TEST_PGDATA"):
        pytest.skip("RADLAY_TEST_PG_CTL/RADLAY_TEST_PGDATA unset: `make test` sets them to its PostgreSQL")


@pytest.fixture
def real_worker(transactional_db, restartable, broker_mode, tmp_path, settings):
    """A worker and beat of this test (tests/generation/test_fault_injection.py's), on the test
    database and Redis, sharing the media and model directories with this process."""
    database_url = worker_database_url()
    redis_url = os.environ.get("REDIS_URL") or settings.REDIS_URL
    if database_url is None or connection.vendor != "postgresql" or not redis_url:
        pytest.skip("needs the PostgreSQL test database and the Redis that `make test` starts")
    env = {
        **os.environ,
        **RECOVERY,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "RADLAY_TEST_REAL_CELERY": "1",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "DJANGO_MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "RADLAY_MODEL_DIR": str(settings.RADLAY_MODEL_DIR),
        "PYTHONPATH": str(REPO),
    }
    from config.celery_app import app as celery_app

    celery_app.control.purge()  # nothing left over from an earlier test
    services = Services(tmp_path, env)
    yield services
    services.close()


@pytest.mark.integration
@pytest.mark.pg_restart  # restarts the suite's PostgreSQL: runs alone, after the parallel run
def test_a_database_restart_while_the_work_runs_heals_by_itself(kind, real_worker, tiny_t5_path):
    big = KINDS[kind.name](tiny_t5_path, 4)
    real_worker.beat()
    real_worker.worker()
    work = big.launch()
    units = big.units(work)
    wait_for(
        lambda: units.filter(started_at__isnull=False).exists() or big.succeeded(work),
        timeout=FINAL_WITHIN,
        what=f"the {kind.name} to start",
        logs=real_worker.tmp_path,
    )

    restart_postgresql()

    wait_for(
        lambda: big.succeeded(work),
        timeout=FINAL_WITHIN,
        what=f"the {kind.name} to finish by itself after the restart",
        logs=real_worker.tmp_path,
    )
