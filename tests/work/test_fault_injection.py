"""Judge runs and the `--wait` commands under faults (a lost worker, a broker outage, a database
outage), with a REAL Celery worker and beat, Redis and the test PostgreSQL, as
tests/generation/test_fault_injection.py does for generation batches (its fixtures and helpers are
reused). Each test asserts that the work reaches its final state by itself, without a manual step.

The PostgreSQL restarts need RADLAY_TEST_PG_CTL/RADLAY_TEST_PGDATA (`make test` and .ci/test.sh set
them to their own throwaway PostgreSQL); never point them at a shared server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from generation.models import GenerationJob
from judging import services as judging_services
from judging.models import JudgeItem, JudgeRun
from tests.annotation.factories import build_study
from tests.generation.conftest import (  # noqa: F401 - fixtures of these tests
    scripted_llm,
    studies_approve_scripted_llm,
)
from tests.generation.test_celery_worker import REPO, stop, wait_for
from tests.generation.test_fault_injection import (  # noqa: F401 - fixtures of these tests
    broker_mode,
    distinct_answers,
    fault_env,
    restart_postgresql,
)
from tests.judging.conftest import add_radiologist, valid_answer

# A real worker runs the calls: the studies' data policy approves the scripted server.
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("studies_approve_scripted_llm")]

# Added to fault_env's short recovery timings (RECOVERY: heartbeat 0.5 s, stale after 3 s, healing
# every second, retries after 0.2 s), which a RADLAY_JOB_TIMING here would replace whole: the
# default timings made a killed worker's agreement wait a minute to be healed.
JUDGE_RECOVERY = {"RADLAY_JUDGING": "bootstrap_resamples=50"}
FINISH_WITHIN = 120


@pytest.fixture
def restartable():
    if not os.environ.get("RADLAY_TEST_PG_CTL") or not os.environ.get("RADLAY_TEST_PGDATA"):
        pytest.skip("RADLAY_TEST_PG_CTL/RADLAY_TEST_PGDATA unset: `make test` sets them to its PostgreSQL")


@pytest.fixture
def judged(fault_env, scripted_llm):  # noqa: F811
    """A study with a radiologist's ratings, a scripted judge answering validly, the worker's
    recovery timings."""
    fault_env.env.update(JUDGE_RECOVERY)
    for agent in ("radiologist", "patient"):
        scripted_llm.set_fallback(agent, valid_answer)
    study = build_study(slug="judged", n_sources=4)
    add_radiologist(study, "R1")
    return study


def run_finished(run: JudgeRun, fault_env, within: float = FINISH_WITHIN) -> JudgeRun:  # noqa: F811
    wait_for(
        lambda: JudgeRun.objects.get(pk=run.pk).finished_at is not None,
        timeout=within,
        what=f"judge run {run.pk} to finish by itself",
        logs=fault_env.tmp_path,
    )
    return JudgeRun.objects.get(pk=run.pk)


@pytest.mark.pg_restart
def test_judge_items_survive_a_postgresql_restart(judged, fault_env, scripted_llm, broker_mode, restartable):  # noqa: F811
    from config.celery_app import app as celery_app

    celery_app.control.purge()
    scripted_llm.latency = 0.1
    fault_env.beat()
    fault_env.worker()
    run = judging_services.judge_run_create(
        study=judged, backend="openai", model_name="gpt-3.5-turbo", instruments=["radiologist"], concurrency=2
    )
    items = JudgeItem.objects.filter(run=run)
    wait_for(
        lambda: items.filter(status="succeeded").count() >= 2,
        timeout=90,
        what="2 items",
        logs=fault_env.tmp_path,
    )

    restart_postgresql()

    run = run_finished(run, fault_env)
    # No item took the restart for a permanent failure: no --retry-failed needed.
    assert set(items.values_list("status", flat=True)) == {"succeeded"}, list(
        items.values_list("status", "error")
    )
    wait_for(
        lambda: JudgeRun.objects.get(pk=run.pk).agreement_computed_at is not None,
        timeout=60,
        what="the agreement",
        logs=fault_env.tmp_path,
    )


def test_the_agreement_is_healed_after_its_worker_is_killed(judged, fault_env, broker_mode):  # noqa: F811
    from config.celery_app import app as celery_app

    celery_app.control.purge()
    # A bootstrap long enough to kill the worker in the middle of it.
    fault_env.env["RADLAY_JUDGING"] = "bootstrap_resamples=4000"
    worker = fault_env.worker()
    run = judging_services.judge_run_create(study=judged, backend="glossary", instruments=["radiologist"])
    wait_for(
        lambda: JudgeRun.objects.get(pk=run.pk).agreement_heartbeat_at is not None,
        timeout=90,
        what="the agreement to start",
        logs=fault_env.tmp_path,
    )
    stop(worker, signal.SIGKILL)  # its message stays unacknowledged: Redis would keep it for an hour
    assert JudgeRun.objects.get(pk=run.pk).agreement_computed_at is None

    fault_env.env["RADLAY_JUDGING"] = "bootstrap_resamples=50"
    fault_env.beat()
    fault_env.worker()
    wait_for(
        lambda: JudgeRun.objects.get(pk=run.pk).agreement_computed_at is not None,
        timeout=90,
        what="the agreement to be computed again by itself",
        logs=fault_env.tmp_path,
    )
    run = JudgeRun.objects.get(pk=run.pk)
    assert (
        run.agreement.get("per_field")
        and run.agreement_sent_at is None
        and run.agreement_heartbeat_at is None
    )


@pytest.mark.pg_restart
@pytest.mark.parametrize("command", ["generate", "judge"])
def test_wait_commands_survive_a_postgresql_restart(command, judged, fault_env, scripted_llm, restartable):  # noqa: F811
    from config.celery_app import app as celery_app

    celery_app.control.purge()
    scripted_llm.latency = 0.5  # the batch outlasts the restart
    if command == "generate":
        distinct_answers(scripted_llm)
    fault_env.beat()
    fault_env.worker()
    arguments = [
        sys.executable,
        str(REPO / "manage.py"),
        command,
        "--study",
        judged.slug,
        "--backend",
        "openai",
    ]
    arguments += ["--model", "gpt-3.5-turbo", "--concurrency", "1", "--wait", "--poll", "0.2"]
    arguments += (
        # The study's texts of plain_bs and plain_sc were uploaded: the command replaces them only
        # when told to.
        ["--systems", "plain_bs,plain_sc", "--replace-uploaded"]
        if command == "generate"
        else ["--instruments", "radiologist"]
    )
    waiting = subprocess.Popen(
        arguments, cwd=REPO, env=fault_env.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    jobs = GenerationJob.objects.all() if command == "generate" else JudgeItem.objects.all()
    wait_for(
        lambda: jobs.filter(status="succeeded").exists(), timeout=60, what="a job", logs=fault_env.tmp_path
    )
    assert waiting.poll() is None and jobs.exclude(status="succeeded").exists()  # launched and waiting
    restart_postgresql()
    out, err = waiting.communicate(timeout=FINISH_WITHIN)
    assert waiting.returncode == 0, err[-3000:]
    assert "Traceback" not in err
    assert "the database is unreachable" in err, out[-3000:]
    assert "finished" in out or "agreement of" in out
