"""Server time of the dashboard and of GET /api/studies/<slug>/analysis/, read from the snapshot.

    .venv/bin/python bench/dashboard.py                          # 1 000, 5 000 and 20 000 sources
    .venv/bin/python bench/dashboard.py --sizes 1000 --laypeople 8
    DATABASE_URL=postgres://… .venv/bin/python bench/dashboard.py --use-database-url --sizes 20000

For each size, builds the synthetic study of bench/analyze.py in a throwaway SQLite database
(or, with --use-database-url, in a scratch database on the server of DATABASE_URL, dropped after:
bench/scratch.py), computes its analysis snapshot once (the task's work, timed and reported apart),
then times through Django's test client, in this process (server time, no network):

* dashboard / API, first request after the snapshot landed (the snapshot left the count of the
  data it covers: no check);
* dashboard / API with nothing counted (the shared cache emptied, e.g. restarted): the request
  sends the check of the data to a worker and shows the snapshot meanwhile;
* warm: the median of the next requests;
* after an answer changed and a check counted it: the page shows the old snapshot, "answers
  changed since — recomputing".

Checks and recomputations are sent to a worker this bench does not run; the check's own time
(the aggregate queries over the answer tables, in the worker) is timed and reported apart.

Reference, measured in the same run: the dashboard's login page (a template render and a session
through the same middleware), so the ratio says what reading and rendering the snapshot costs on
top of an empty Django page. Target: ≤ 200 ms server time for the dashboard at every size.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from analyze import synthetic_study  # noqa: E402
from scratch import bench_database  # noqa: E402


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.ALLOWED_HOSTS = ["*"]
    settings.RADLAY_ANALYSIS = replace(settings.RADLAY_ANALYSIS, check_seconds=10)
    call_command("migrate", verbosity=0)


def timed_get(client, url: str, **headers) -> float:
    started = time.perf_counter()
    response = client.get(url, **headers)
    seconds = time.perf_counter() - started
    if response.status_code != 200:
        raise SystemExit(f"GET {url}: HTTP {response.status_code}")
    if hasattr(response, "streaming_content"):
        b"".join(response.streaming_content)
    return seconds


def bench_size(n_sources: int, n_lay: int, repeats: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from django.test import Client
    from django.urls import reverse
    from django.utils import timezone

    from annotation.models import ItemAnswer
    from evaluation import services, tasks

    started = time.perf_counter()
    study = synthetic_study(n_sources=n_sources, n_lay=n_lay, n_radiologists=2, slug=f"bench{n_sources}")
    built = time.perf_counter() - started
    user = get_user_model().objects.create_user(f"r{n_sources}", password="pw")
    study.researchers.add(user)
    started = time.perf_counter()
    services.analysis_snapshot_compute_here(study=study)
    computed = time.perf_counter() - started
    # What the pages send goes to a worker this bench does not run.
    tasks.analysis_snapshot_send = lambda *, study_id: None
    tasks.analysis_coverage_check_send = lambda *, study_id: None

    client = Client()
    client.force_login(user)
    dashboard = reverse("evaluation:study-detail", args=[study.slug])
    api = reverse("api:analysis", args=[study.slug])
    login = reverse("evaluation:login")
    anonymous = Client()
    figures: dict[str, float] = {}
    figures["dashboard, snapshot just landed"] = timed_get(client, dashboard)
    figures["dashboard warm"] = statistics.median(timed_get(client, dashboard) for _ in range(repeats))
    figures["API, snapshot just landed"] = timed_get(client, api)
    figures["API warm"] = statistics.median(timed_get(client, api) for _ in range(repeats))
    cache.clear()
    figures["dashboard, nothing counted"] = timed_get(client, dashboard)
    cache.clear()
    figures["API, nothing counted"] = timed_get(client, api)
    answer = (
        ItemAnswer.objects.filter(participant__study=study, item_key="understanding").order_by("pk").first()
    )
    ItemAnswer.objects.filter(pk=answer.pk).update(
        value=1, score=1.0, updated_at=timezone.now()
    )  # Not at all
    started = time.perf_counter()
    services.analysis_coverage_check_run(study_id=study.pk)
    checked = time.perf_counter() - started
    figures["dashboard after a change"] = timed_get(client, dashboard)
    if "answers changed since" not in client.get(dashboard).content.decode():
        raise SystemExit("the dashboard does not show the change it was told of")
    figures["reference: login page"] = statistics.median(timed_get(anonymous, login) for _ in range(repeats))
    return {"built": built, "computed": computed, "checked": checked, "figures": figures}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,5000,20000", help="comma-separated numbers of sources")
    parser.add_argument("--laypeople", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--use-database-url",
        action="store_true",
        help="use DATABASE_URL (e.g. PostgreSQL), not a temporary SQLite",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        if args.use_database_url:
            where = stack.enter_context(bench_database("dashboard", Path(tmp)))
        else:
            os.environ["DATABASE_URL"] = f"sqlite:///{Path(tmp) / 'dashboard.sqlite3'}"
            where = "a throwaway SQLite file"
        setup_django()
        from django.conf import settings

        # The figures do not depend on how many resamples the snapshot was computed with.
        settings.RADLAY_ANALYSIS_OPTIONS = {
            "n_resamples": 200,
            "correlation_resamples": 100,
            "metric_families": ["readability"],
            "embeddings": False,
        }
        for size in (int(s) for s in args.sizes.split(",")):
            result = bench_size(size, args.laypeople, args.repeats)
            figures = result["figures"]
            reference = figures["reference: login page"]
            print(
                f"{size} sources × {args.laypeople} laypeople in {where} (built in {result['built']:.0f} s; "
                f"snapshot computed in {result['computed']:.1f} s and a check of the data in "
                f"{1000 * result['checked']:.0f} ms, both in a worker, not in any request):"
            )
            for label, seconds in figures.items():
                ratio = (
                    "" if label.startswith("reference") else f"  ({seconds / reference:.1f}× the reference)"
                )
                print(f"  {label:34} {1000 * seconds:8.1f} ms{ratio}")


if __name__ == "__main__":
    main()
