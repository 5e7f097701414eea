"""Benchmark: a generation batch of N sources × 4 systems (plain_bs, plain_sc, cot_bs, cot_sc) against
the scripted OpenAI-compatible server with a fixed latency per call, then a rerun of the same batch.

Prints the wall time against the ideal (calls × latency ÷ concurrency: every slot of the batch's
concurrency window busy with a call all the time) and the number of calls the rerun made (0 when the
call cache works).

How concurrency is achieved: a real Celery worker runs inside this process (celery.contrib.testing's
embedded worker) with the `threads` pool and as many threads as the batch's concurrency, consuming
an in-memory broker (kombu's memory transport, polled every 10 ms). The batch goes through the same
code as in production: batches.generation_batch_create sends the first N jobs, each finished job
sends the next, each task claims its job in the database. The database is a temporary SQLite file
in WAL mode with IMMEDIATE transactions (concurrent writers queue up instead of failing). The
scripted server runs in a child process so that it does not share this process's GIL.

    .venv/bin/python bench/generation.py                      # 1000 sources, latency 0.1 s, concurrency 32
    .venv/bin/python bench/generation.py --sources 200 --concurrency 8
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import sys
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SYSTEMS = ["plain_bs", "plain_sc", "cot_bs", "cot_sc"]


def _prompt_answer(agent: str):
    def answer(request) -> str:
        return f"{agent} {zlib.crc32(request.messages[-1]['content'].encode())}."

    return answer


def serve(conn, latency: float) -> None:
    """The scripted server's process. Answers depend on the prompt, so that no two calls of a batch
    are identical: each one is a real call the first time."""
    from tests.generation.scripted_llm_server import ScriptedLLMServer

    with ScriptedLLMServer() as server:
        for agent in ("generator", "radiologist", "patient"):
            server.set_fallback(agent, _prompt_answer(agent))
        server.latency = latency
        conn.send(server.base_url)
        while (command := conn.recv()) != "stop":
            if command == "count":
                conn.send(len(server.chat_requests(status=None)))


class ServerProcess:
    def __init__(self, latency: float) -> None:
        self.conn, child = multiprocessing.Pipe()
        context = multiprocessing.get_context("spawn")
        self.process = context.Process(target=serve, args=(child, latency), daemon=True)
        self.base_url = ""

    def __enter__(self) -> ServerProcess:
        self.process.start()
        self.base_url = self.conn.recv()
        return self

    def requests(self) -> int:
        self.conn.send("count")
        return self.conn.recv()

    def __exit__(self, *exc: object) -> None:
        self.conn.send("stop")
        self.process.join(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the server takes per call")
    parser.add_argument("--concurrency", type=int, default=32, help="batch window = worker threads")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="radlay-bench-generation-"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.test"
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ.pop("REDIS_URL", None)  # the in-memory broker

    import django
    from django.conf import settings

    settings.DATABASES["default"]["OPTIONS"] = {
        "timeout": 120,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    django.setup()

    from celery.contrib.testing.worker import start_worker
    from django.core.management import call_command

    from annotation.models import Source, Study
    from config.celery_app import app as celery_app
    from generation.models import GenerationBatch, LLMCallCache
    from generation.services import batches

    call_command("migrate", verbosity=0)
    celery_app.conf.task_always_eager = False
    celery_app.conf.broker_transport_options = {"polling_interval": 0.01}

    study = Study.objects.create(slug="bench", title="bench")
    Source.objects.bulk_create(
        [
            Source(study=study, key=f"s{i:05d}", text=f"Mild cardiomegaly, finding {i}.", position=i)
            for i in range(args.sources)
        ]
    )

    def run_batch(server: ServerProcess) -> tuple[float, int, GenerationBatch]:
        before = server.requests()
        started = time.perf_counter()
        batch = batches.generation_batch_create(
            study=study,
            systems=SYSTEMS,
            backend="openai",
            model_name="gpt-3.5-turbo",
            concurrency=args.concurrency,
        )
        total = batch.jobs.count()
        last = time.perf_counter()
        while True:
            batch.refresh_from_db()
            if batch.finished_at is not None:
                break
            time.sleep(0.05)
            if time.perf_counter() - last > 10:
                done = batch.jobs.filter(status__in=["succeeded", "failed"]).count()
                print(f"  … {done}/{total} jobs, {time.perf_counter() - started:.0f} s", flush=True)
                last = time.perf_counter()
        wall = time.perf_counter() - started
        failed = batch.jobs.filter(status="failed")
        if failed.exists():
            print(f"  {failed.count()} job(s) failed, e.g.: {failed.first().error}")
        return wall, server.requests() - before, batch

    with ServerProcess(args.latency) as server:
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = "bench"
        worker = start_worker(
            celery_app,
            pool="threads",
            concurrency=args.concurrency,
            perform_ping_check=False,
            loglevel="WARNING",
            shutdown_timeout=60,
        )
        with worker:
            # The embedded worker set Celery's logging up: quiet it again (a line per task and call).
            for name in ("", "celery", "celery.app.trace", "httpx", "openai"):
                logging.getLogger(name).setLevel(logging.WARNING)
            print(
                f"{args.sources} sources × {len(SYSTEMS)} systems = {2 * args.sources} jobs, "
                f"latency {args.latency} s/call, concurrency {args.concurrency} (worker threads)"
            )
            wall, calls, batch = run_batch(server)
            ideal = calls * args.latency / args.concurrency
            print(
                f"first run: {calls} calls in {wall:.1f} s; ideal {ideal:.1f} s "
                f"(calls × latency ÷ concurrency); wall/ideal = {wall / ideal:.2f}"
            )
            print(
                f"  jobs succeeded: {batch.jobs.filter(status='succeeded').count()}/{batch.jobs.count()}, "
                f"cache entries: {LLMCallCache.objects.count()}"
            )
            rerun_wall, rerun_calls, rerun = run_batch(server)
            succeeded = rerun.jobs.filter(status="succeeded").count()
            print(f"rerun: {rerun_calls} calls in {rerun_wall:.1f} s ({succeeded} jobs succeeded)")
    print(f"(database: {workdir / 'bench.sqlite3'})")


if __name__ == "__main__":
    main()
