"""A generation batch through a REAL Celery worker and beat and the test Redis, with the worker killed
mid-batch and replaced: the batch finishes by itself (beat's self-healing check re-sends the job the
dead worker held once its heartbeat is stale), nobody resumes anything.

The worker is a subprocess (`celery -A config worker -Q llm,default,gpu,heavy --pool solo`) started with
RADLAY_TEST_REAL_CELERY=1, which turns the test settings' eager mode off for it. It must see the
test database: `transactional_db` commits the test's rows, and the worker gets the test database's
URL in DATABASE_URL. That needs a database another process can open (PostgreSQL, as in `make test`,
or a file SQLite database); pytest-django's in-memory SQLite database is not one, so the test skips
there. LLM calls go to the scripted server over loopback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
import zlib
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection

from annotation.models import Simplification, Study
from config.celery_app import app as celery_app
from generation.models import GenerationBatch, GenerationJob, LLMCallCache
from generation.services import batches
from studies.source_services import source_upsert

# A real worker runs the calls: the studies' data policy approves the scripted server.
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("studies_approve_scripted_llm")]

REPO = Path(__file__).resolve().parents[2]
SOURCES = 6
CALLS_PER_JOB = 5  # generator, radiologist, patient, 2 × processor ("No" at once)


def worker_database_url() -> str | None:
    """The URL of the test database for another process, or None when it cannot open it."""
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = quote(db["USER"] or "", safe="")
        if db["PASSWORD"]:
            auth += ":" + quote(db["PASSWORD"], safe="")
        host = db["HOST"] or "localhost"
        port = f":{db['PORT']}" if db["PORT"] else ""
        return f"postgres://{auth}@{host}{port}/{db['NAME']}"
    if connection.vendor == "sqlite":
        name = str(db["NAME"])
        if name == ":memory:" or "mode=memory" in name:
            return None
        return f"sqlite:///{Path(name).resolve()}"
    return None


def start_worker(tmp_path: Path, env: dict[str, str], name: str) -> subprocess.Popen:
    celery = Path(sys.executable).parent / "celery"
    log = open(tmp_path / f"{name}.log", "wb")  # noqa: SIM115 - the worker writes to it until stopped
    return subprocess.Popen(
        [
            str(celery),
            "-A",
            "config",
            "worker",
            "-Q",
            "llm,default,gpu,heavy",
            "--pool",
            "solo",
            "--concurrency",
            "1",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            "-n",
            f"{name}@%h",
            "--loglevel",
            "INFO",
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def start_beat(tmp_path: Path, env: dict[str, str]) -> subprocess.Popen:
    """Celery beat, which sends the self-healing check every RADLAY_JOB_TIMING.heal_interval."""
    celery = Path(sys.executable).parent / "celery"
    log = open(tmp_path / "beat.log", "ab")  # noqa: SIM115 - beat writes to it until stopped
    return subprocess.Popen(
        [str(celery), "-A", "config", "beat", "-s", str(tmp_path / "beat-schedule"), "--loglevel", "INFO"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def stop(worker: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if worker.poll() is None:
        worker.send_signal(sig)
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(timeout=10)


def wait_for(condition, *, timeout: float, what: str, logs: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    tails = "\n".join(
        f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(logs.glob("*.log"))
    )
    states = list(GenerationJob.objects.values_list("pk", "status", "attempts", "task_id", "error"))
    pytest.fail(f"timed out waiting for {what}\njobs: {states}\n{tails}")


@pytest.fixture
def broker_mode():
    """This process publishes to Redis instead of running tasks in-process."""
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    yield
    celery_app.conf.task_always_eager = eager


def test_a_batch_survives_a_worker_killed_mid_batch(transactional_db, scripted_llm, broker_mode, tmp_path):
    redis_url = os.environ.get("REDIS_URL") or settings.REDIS_URL
    if not redis_url:
        pytest.skip("REDIS_URL is unset: no broker for a real worker")
    database_url = worker_database_url()
    if database_url is None:
        pytest.skip("the test database is in memory; a worker process needs PostgreSQL or a file database")

    scripted_llm.latency = 0.05  # slow enough to kill the worker in the middle of the batch
    for agent in ("generator", "radiologist", "patient"):
        # Answers that depend on the prompt, so that no two calls of the batch are identical.
        scripted_llm.set_fallback(
            agent, lambda r, a=agent: f"{a} {zlib.crc32(r.messages[-1]['content'].encode())}."
        )
    study = Study.objects.create(slug="worker", title="worker")
    for i in range(SOURCES):
        source_upsert(study=study, key=f"s{i}", text=f"Mild cardiomegaly, finding {i}.")

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "RADLAY_TEST_REAL_CELERY": "1",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "OPENAI_BASE_URL": scripted_llm.base_url,
        "OPENAI_API_KEY": "test-key",
        "RADLAY_LLM_CALLS": "timeout=10",
        "PYTHONPATH": str(REPO),
        # Short recovery timings, so that a dead worker is noticed in seconds.
        "RADLAY_JOB_TIMING": "heartbeat=0.5,stale_after=3,dispatch_deadline=6,heal_interval=1",
    }
    celery_app.control.purge()  # nothing left over from an earlier run
    beat = start_beat(tmp_path, env)
    first = start_worker(tmp_path, env, f"radlay-test-{uuid.uuid4().hex[:8]}")
    second = None
    try:
        batch = batches.generation_batch_create(
            study=study,
            systems=["plain_bs", "plain_sc", "cot_bs", "cot_sc"],
            backend="openai",
            model_name="gpt-3.5-turbo",
            concurrency=2,
        )
        jobs = GenerationJob.objects.filter(batch=batch)
        total = SOURCES * 2
        wait_for(
            lambda: jobs.filter(status="succeeded").count() >= 3, timeout=180, what="3 jobs", logs=tmp_path
        )
        stop(first, signal.SIGKILL)  # the worker dies mid-batch, without acknowledging its message
        assert jobs.filter(status="succeeded").count() < total

        second = start_worker(tmp_path, env, f"radlay-test-{uuid.uuid4().hex[:8]}")
        wait_for(
            lambda: GenerationBatch.objects.get(pk=batch.pk).finished_at is not None,
            # Generous: a worker process starts slowly on a loaded 2-core machine.
            timeout=300,
            what="the batch to finish",
            logs=tmp_path,
        )
    finally:
        stop(first, signal.SIGKILL)
        if second is not None:
            stop(second)
        stop(beat, signal.SIGKILL)

    assert list(jobs.values_list("status", flat=True)) == ["succeeded"] * total
    assert Simplification.objects.filter(source__study=study).count() == SOURCES * 4
    assert len(set(Simplification.objects.values_list("source", "system"))) == SOURCES * 4  # each once
    # Calls made before the crash were cached; at most the one in flight when it died is made twice.
    assert LLMCallCache.objects.count() == total * CALLS_PER_JOB
    assert total * CALLS_PER_JOB <= len(scripted_llm.chat_requests()) <= total * CALLS_PER_JOB + 1
    # Every job ran in a worker process (a worker received its task), none in this one. (Not
    # "succeeded": the killed worker may have stored a job and died before logging it.)
    logs = "".join(p.read_text(errors="replace") for p in tmp_path.glob("*.log"))
    for task_id in jobs.values_list("task_id", flat=True):
        assert task_id and f"generation.tasks.generation_job_run_llm[{task_id}] received" in logs
