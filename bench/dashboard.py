"""Server time of the dashboard and of GET /api/studies/<slug>/analysis/, read from the snapshot.

    .venv/bin/python bench/dashboard.py                          # 1 000, 5 000 and 20 000 sources
    .venv/bin/python bench/dashboard.py --sizes 1000 --laypeople 8

For each size, builds the synthetic study of bench/analyze.py in a throwaway SQLite database
(or the database of DATABASE_URL with --use-database-url), computes its analysis snapshot once
(the task's work, timed and reported apart), then times through Django's test client, in this
process (server time, no network):

* cold: the first request after the snapshot landed (the freshness check runs its aggregate
  queries), and a request after an answer changed (the page shows the old snapshot and sends the
  recomputation, which this bench does not run);
* warm: the median of the next requests (the freshness check is cached for
  RADLAY_ANALYSIS_CHECK_SECONDS).

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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from analyze import synthetic_study  # noqa: E402


def setup_django(database: Path | None) -> None:
    if database is not None:
        os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.ALLOWED_HOSTS = ["*"]
    settings.RADLAY_ANALYSIS_CHECK_SECONDS = 10
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

    from annotation.models import LayAnswer
    from evaluation import services, tasks

    started = time.perf_counter()
    study = synthetic_study(n_sources=n_sources, n_lay=n_lay, n_radiologists=2, slug=f"bench{n_sources}")
    built = time.perf_counter() - started
    user = get_user_model().objects.create_user(f"r{n_sources}", password="pw")
    study.researchers.add(user)
    started = time.perf_counter()
    services.analysis_snapshot_compute_here(study=study)
    computed = time.perf_counter() - started
    # Recomputations the pages ask for are sent to a worker this bench does not run.
    tasks.analysis_snapshot_send = lambda *, study_id: None

    client = Client()
    client.force_login(user)
    dashboard = reverse("evaluation:study-detail", args=[study.slug])
    api = reverse("api:analysis", args=[study.slug])
    login = reverse("evaluation:login")
    anonymous = Client()
    figures: dict[str, float] = {}
    cache.clear()
    figures["dashboard cold"] = timed_get(client, dashboard)
    figures["dashboard warm"] = statistics.median(timed_get(client, dashboard) for _ in range(repeats))
    cache.clear()
    figures["API cold"] = timed_get(client, api)
    figures["API warm"] = statistics.median(timed_get(client, api) for _ in range(repeats))
    answer = LayAnswer.objects.filter(item__participant__study=study).order_by("pk").first()
    LayAnswer.objects.filter(pk=answer.pk).update(understanding="Not at all", updated_at=timezone.now())
    cache.clear()
    figures["dashboard after a change"] = timed_get(client, dashboard)
    figures["reference: login page"] = statistics.median(timed_get(anonymous, login) for _ in range(repeats))
    return {"built": built, "computed": computed, "figures": figures}


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
    with tempfile.TemporaryDirectory() as tmp:
        setup_django(None if args.use_database_url else Path(tmp) / "dashboard.sqlite3")
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
                f"{size} sources × {args.laypeople} laypeople (built in {result['built']:.0f} s; snapshot "
                f"computed in {result['computed']:.1f} s, not in any request):"
            )
            for label, seconds in figures.items():
                ratio = (
                    "" if label.startswith("reference") else f"  ({seconds / reference:.1f}× the reference)"
                )
                print(f"  {label:28} {1000 * seconds:8.1f} ms{ratio}")


if __name__ == "__main__":
    main()
