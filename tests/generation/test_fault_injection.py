"""Generation under faults, with a REAL Celery worker and beat, real Redis and the test PostgreSQL
(`make test` provides them), and the scripted LLM server injecting bad answers. Every test asserts
that the batch reaches a terminal state by itself (no resume, no --force) within a bounded time,
with every (source, system) stored exactly once. (A worker killed mid-batch: test_celery_worker.py.)

The worker and beat run with short recovery timings (heartbeat 0.5 s, stale after 3 s, a message
lost after 6 s, the periodic check every second), so that each scenario takes seconds. Helpers come
from test_celery_worker.py (the worker subprocess, the database URL it needs)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
import zlib
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from annotation.models import Simplification, Study
from generation.models import GenerationBatch, GenerationJob
from generation.services import batches
from studies.source_services import source_upsert
from tests.generation.test_celery_worker import (
    REPO,
    broker_mode,
    start_beat,
    start_worker,
    stop,
    wait_for,
    worker_database_url,
)

# A real worker runs the calls: the studies' data policy approves the scripted server.
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("studies_approve_scripted_llm")]

__all__ = ["broker_mode"]  # a fixture, imported for the tests below

RECOVERY = {
    "RADLAY_JOB_TIMING": "heartbeat=0.5,stale_after=3,dispatch_deadline=6,heal_interval=1,retry_delay=0.2",
    "RADLAY_JOB_ATTEMPTS": "3",
    "RADLAY_LLM_CALLS": "retries=1,retry_delay=0.05,timeout=10",
}
FINISH_WITHIN = 120  # seconds; generous for a loaded 2-core machine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def distinct_answers(server) -> None:
    """Answers that depend on the prompt, so that no two calls of a batch are identical."""
    for agent in ("generator", "radiologist", "patient"):
        server.set_fallback(
            agent, lambda r, a=agent: f"{a} {zlib.crc32(r.messages[-1]['content'].encode())}."
        )


def make_study(slug: str, count: int) -> Study:
    study = Study.objects.create(slug=slug, title=slug)
    for i in range(count):
        source_upsert(study=study, key=f"s{i}", text=f"Mild cardiomegaly, finding {i}.")
    return study


class Services:
    """The worker, beat and (optionally) a Redis of this test, stopped at the end."""

    def __init__(self, tmp_path: Path, env: dict[str, str]):
        self.tmp_path, self.env = tmp_path, env
        self.processes: list[subprocess.Popen] = []
        self.redis: subprocess.Popen | None = None

    def worker(self) -> subprocess.Popen:
        process = start_worker(self.tmp_path, self.env, f"radlay-fault-{uuid.uuid4().hex[:8]}")
        self.processes.append(process)
        return process

    def beat(self) -> subprocess.Popen:
        process = start_beat(self.tmp_path, self.env)
        self.processes.append(process)
        return process

    def start_redis(self, port: int) -> None:
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=open(self.tmp_path / "redis.log", "ab"),  # noqa: SIM115
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.05)
        pytest.fail("redis-server did not start")

    def stop_redis(self) -> None:
        if self.redis is not None:
            self.redis.kill()  # no shutdown save: what it held is gone, as after a crash
            self.redis.wait(timeout=10)
            self.redis = None

    def close(self) -> None:
        for process in self.processes:
            stop(process, signal.SIGKILL)
        self.stop_redis()


@pytest.fixture
def fault_env(transactional_db, scripted_llm, tmp_path):
    database_url = worker_database_url()
    if database_url is None or connection.vendor != "postgresql":
        pytest.skip("needs the PostgreSQL test database that `make test` starts")
    redis_url = os.environ.get("REDIS_URL") or settings.REDIS_URL
    if not redis_url:
        pytest.skip("REDIS_URL is unset: no broker for a real worker")
    env = {
        **os.environ,
        **RECOVERY,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "RADLAY_TEST_REAL_CELERY": "1",
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "OPENAI_BASE_URL": scripted_llm.base_url,
        "OPENAI_API_KEY": "test-key",
        "PYTHONPATH": str(REPO),
    }
    services = Services(tmp_path, env)
    yield services
    services.close()


def restart_postgresql() -> None:
    """Restart the test PostgreSQL (RADLAY_TEST_PG_CTL/RADLAY_TEST_PGDATA: `make test`'s own). A test
    that calls it is marked pg_restart: it runs alone, after the parallel run."""
    pg_ctl, pgdata = os.environ["RADLAY_TEST_PG_CTL"], os.environ["RADLAY_TEST_PGDATA"]
    connection.close()
    log = os.environ.get("RADLAY_TEST_PG_LOG", os.devnull)
    restart = [pg_ctl, "-D", pgdata, "-l", log, "-m", "fast", "-w", "restart"]
    if os.geteuid() == 0:
        restart = ["runuser", "-u", "postgres", "--", *restart]
    subprocess.run(restart, check=True, capture_output=True, timeout=60)


def finished(batch: GenerationBatch, services: Services, within: float = FINISH_WITHIN) -> GenerationBatch:
    wait_for(
        lambda: GenerationBatch.objects.get(pk=batch.pk).finished_at is not None,
        timeout=within,
        what=f"batch {batch.pk} to finish by itself",
        logs=services.tmp_path,
    )
    return GenerationBatch.objects.get(pk=batch.pk)


def assert_each_once(study: Study, systems: int) -> None:
    pairs = list(Simplification.objects.filter(source__study=study).values_list("source__key", "system__key"))
    assert len(pairs) == len(set(pairs)) == study.sources.count() * systems


def test_redis_down_at_launch_and_mid_batch(fault_env, scripted_llm):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    fault_env.env["REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
    scripted_llm.latency = 0.1
    distinct_answers(scripted_llm)
    study = make_study("redis", 6)
    manage = [sys.executable, str(REPO / "manage.py"), "generate", "--study", "redis", "--backend", "openai"]
    manage += ["--model", "gpt-3.5-turbo", "--systems", "plain_bs", "--concurrency", "2"]

    # Launch while Redis is down: the command says so, in one line, and the batch exists.
    launch = subprocess.run(manage, cwd=REPO, env=fault_env.env, capture_output=True, text=True, timeout=120)
    batch = GenerationBatch.objects.get(study=study)
    assert launch.returncode == 2, launch.stderr
    assert f"batch {batch.pk} was created and will start when it is back" in launch.stderr
    assert "Traceback" not in launch.stderr and "is not reachable" in launch.stderr
    assert not batch.jobs.filter(dispatched_at__isnull=False).exists()

    # Redis comes up: worker and beat start the batch by themselves.
    fault_env.start_redis(port)
    fault_env.beat()
    fault_env.worker()
    jobs = GenerationJob.objects.filter(batch=batch)
    wait_for(
        lambda: jobs.filter(status="succeeded").count() >= 2,
        timeout=90,
        what="2 jobs",
        logs=fault_env.tmp_path,
    )

    # Redis dies mid-batch (its queue with it) and comes back 2 s later.
    fault_env.stop_redis()
    time.sleep(2)
    fault_env.start_redis(port)

    batch = finished(batch, fault_env)
    assert set(jobs.values_list("status", flat=True)) == {"succeeded"}
    assert_each_once(study, 1)


@pytest.mark.pg_restart
def test_a_postgresql_restart_mid_batch(fault_env, scripted_llm, broker_mode):
    pg_ctl, pgdata = os.environ.get("RADLAY_TEST_PG_CTL"), os.environ.get("RADLAY_TEST_PGDATA")
    if not pg_ctl or not pgdata:
        pytest.skip("RADLAY_TEST_PG_CTL/RADLAY_TEST_PGDATA unset: `make test` sets them to its PostgreSQL")
    from config.celery_app import app as celery_app

    celery_app.control.purge()
    scripted_llm.latency = 0.1
    distinct_answers(scripted_llm)
    study = make_study("pg", 6)
    fault_env.beat()
    fault_env.worker()
    batch = batches.generation_batch_create(
        study=study,
        systems=["plain_bs", "plain_sc"],
        backend="openai",
        model_name="gpt-3.5-turbo",
        concurrency=2,
    )
    jobs = GenerationJob.objects.filter(batch=batch)
    wait_for(
        lambda: jobs.filter(status="succeeded").count() >= 2,
        timeout=90,
        what="2 jobs",
        logs=fault_env.tmp_path,
    )

    restart_postgresql()

    batch = finished(batch, fault_env)
    assert set(jobs.values_list("status", flat=True)) == {"succeeded"}
    assert_each_once(study, 2)


def test_bad_answers_and_a_poisoned_source_end_job_by_job(fault_env, scripted_llm, broker_mode):
    from config.celery_app import app as celery_app

    celery_app.control.purge()
    poisoned = "Poisoned finding 3."

    def generator(request):
        if poisoned in request.messages[-1]["content"]:
            return ""  # this source always gets an empty answer
        return f"generator {zlib.crc32(request.messages[-1]['content'].encode())}."

    scripted_llm.set_fallback("generator", generator)
    study = make_study("bad", 8)
    source_upsert(study=study, key="s3", text=poisoned)
    # One of each fault, early in the batch; each is retried and the job goes on.
    scripted_llm.garble_next("html")
    scripted_llm.garble_next("invalid-json")
    scripted_llm.garble_next("truncated")
    scripted_llm.garble_next("empty")
    scripted_llm.fail_next(429, headers={"Retry-After": "1"}, times=2)
    fault_env.beat()
    fault_env.worker()
    batch = batches.generation_batch_create(
        study=study, systems=["plain_bs"], backend="openai", model_name="gpt-3.5-turbo", concurrency=3
    )

    batch = finished(batch, fault_env)
    statuses = dict(batch.jobs.values_list("source__key", "status"))
    assert statuses == {f"s{i}": "failed" if i == 3 else "succeeded" for i in range(8)}
    error = batch.jobs.get(source__key="s3").error
    assert "the server at http://127.0.0.1:" in error and "an empty message" in error
    assert batch.jobs.get(source__key="s3").attempts == 3
    pairs = list(Simplification.objects.filter(source__study=study).values_list("source__key", flat=True))
    assert sorted(pairs) == [f"s{i}" for i in range(8) if i != 3]
