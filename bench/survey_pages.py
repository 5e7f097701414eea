"""The server's CPU for one survey page GET, in process: the radiologist page and the three lay panels
of a study like bench/survey_load.py's, rendered through Django's test client in a loop, with the
queries each GET costs. A focused complement to survey_load.py (which measures a whole gunicorn
server under load): no network, no other process, so that a change to the page's rendering shows in
milliseconds per GET. CPU time (time.process_time) is read, not wall time; on a loaded machine it
still varies by tens of per cent between runs (shared caches and cores), so the Python function
calls per GET (cProfile) are printed too: they do not depend on what else runs.

    DATABASE_URL=postgres://postgres@127.0.0.1:55432/radlay_bench \\
        .venv/bin/python bench/survey_pages.py --gets 200 [--profile radiologist] [--html DIR]

It runs in a database beside the configured one (its name + `_survey_pages`, created or kept) under
config.settings.test, and works on older trees of radlay too (for a before/after on one machine).
`--html DIR` writes each page's HTML (tokens, stamps and ids blanked) to compare trees.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

PANEL1 = {"understanding": "Some parts of it", "confidence": "With low confidence", "severity_guess": "Mild"}
PANEL2 = {**PANEL1, "helpfulness": "I understand much better"}
# What differs between two runs of the same page: the CSRF token, the render stamp, the participant's
# token, the rows' ids, and which sentence and text order the participant was dealt.
_VOLATILE = (
    (re.compile(r"Sentence \w+: a \w+ mm"), "Sentence N: a N mm"),
    (re.compile(r"A small spot \w+ \([abc]\)"), "A small spot N (X)"),
    (re.compile(r'(name="(?:csrfmiddlewaretoken|rendered_at)" value=")[^"]*"'), r'\1"'),
    (re.compile(r'("X-CSRFToken": ")[^"]*"'), r'\1"'),
    (re.compile(r"/([rl])/[A-Za-z0-9_-]{20,}/"), r"/\1/TOKEN/"),
    (re.compile(r"\d{2,}"), "N"),
)


def _stable(html: str) -> str:
    for pattern, replacement in _VOLATILE:
        html = pattern.sub(replacement, html)
    return html


def bench_study(slug: str, n_sources: int):
    """An open study of `n_sources` sentences x 3 systems, bulk-inserted (bench/survey_requests.py
    uses it too)."""
    from annotation.models import Simplification, SimplificationText, Source, Study, System, text_hash

    study = Study.objects.create(
        slug=f"{slug}-{time.time_ns()}", title="Page timing", status=Study.Status.OPEN
    )
    systems = [System.objects.create(study=study, key=k, label=k, position=i) for i, k in enumerate("abc")]
    sources = Source.objects.bulk_create(
        [
            Source(
                study=study,
                key=f"s{i}",
                position=i,
                text=f"Sentence {i}: a {i % 30 + 2} mm nodule in the right upper lobe, unchanged.",
            )
            for i in range(n_sources)
        ]
    )
    texts = SimplificationText.objects.bulk_create(
        [
            SimplificationText(source=s, text=t, text_hash=text_hash(t))
            for s in sources
            for y in systems
            for t in [f"A small spot {s.pk} ({y.key})."]
        ]
    )
    shown = iter(texts)
    Simplification.objects.bulk_create(
        [Simplification(source=s, system=y, shown_text=next(shown)) for s in sources for y in systems]
    )
    return study


def _services():
    try:
        from annotation import participant_services
    except ImportError:  # trees before the services were split by subject
        from annotation import services as participant_services  # type: ignore[no-redef]
    return participant_services


def _pages(study) -> dict[str, str]:
    """The URL of each page to time, with a participant standing on it."""
    from django.test import Client
    from django.urls import reverse

    from annotation.models import Participant

    services = _services()
    client = Client()
    urls = {}
    radiologist = services.participants_invite(study=study, role=Participant.Role.RADIOLOGIST, count=1)[0]
    client.get(reverse("surveys:expert-start", args=[radiologist.token]), follow=True)
    client.post(reverse("surveys:expert-instructions", args=[radiologist.token]))
    item = radiologist.expert_items.order_by("position").first()
    urls["radiologist"] = reverse("surveys:expert-page", args=[radiologist.token, item.pk])
    for panel in ("original", "assisted", "preference"):
        person = services.participants_invite(study=study, role=Participant.Role.LAYPERSON, count=1)[0]
        services.participant_consent(participant=person, accepted=True)
        client.post(reverse("surveys:lay-instructions", kwargs={"token": person.token}))
        item = person.lay_items.order_by("position").first()
        url = reverse(
            "surveys:lay-panel", kwargs={"token": person.token, "item_id": item.pk, "panel": "original"}
        )
        if panel != "original":
            assert client.post(url, {**PANEL1, "continue": "1"}).status_code == 302
            url = url.replace("/original/", "/assisted/")
            client.get(url)  # shown: panel 1 locks
        if panel == "preference":
            assert client.post(url, {**PANEL2, "continue": "1"}).status_code == 302
            url = url.replace("/assisted/", "/preference/")
        urls[f"lay {panel}"] = url
    return urls


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gets", type=int, default=200, help="timed GETs per page (after 20 warm-up GETs)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of --gets per page; the median is printed"
    )
    parser.add_argument("--sources", type=int, default=20)
    parser.add_argument("--profile", default="", help="a page's name to profile (cProfile)")
    parser.add_argument("--sort", default="cumulative", help="the profile's order (pstats)")
    parser.add_argument("--top", type=int, default=25, help="the profile's rows")
    parser.add_argument("--html", default="", help="a folder to write each page's HTML to")
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection
    from django.template import Template
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment

    rendering = Template._render
    setup_test_environment()
    Template._render = rendering  # as served: without the test runner's signal on every template
    # A database of its own (kept between runs), beside the test suite's test_<name>.
    connection.settings_dict["TEST"]["NAME"] = f"{connection.settings_dict['NAME']}_survey_pages"
    connection.creation.create_test_db(verbosity=0, keepdb=True)
    study = bench_study("page-timing", args.sources)
    urls = _pages(study)
    client = Client()
    print(f"{'page':<16} {'CPU ms/GET':>10} {'rounds':>24} {'calls/GET':>9} {'queries':>8} {'bytes':>7}")
    for name, url in urls.items():
        for _ in range(20):
            response = client.get(url)
            assert response.status_code == 200, (name, response.status_code)
        with CaptureQueriesContext(connection) as queries:
            html = client.get(url).content.decode()
        queried = len(queries)  # now: every request clears the connection's query log
        if args.html:
            folder = Path(args.html)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{name.replace(' ', '_')}.html").write_text(_stable(html), encoding="utf-8")
        # Python function calls per GET: what the page's code does, whatever else runs on the machine.
        counting = cProfile.Profile()
        counting.enable()
        for _ in range(20):
            client.get(url)
        counting.disable()
        calls = pstats.Stats(counting).total_calls / 20  # type: ignore[attr-defined]
        rounds = []
        for _ in range(args.rounds):
            began = time.process_time()
            for _ in range(args.gets):
                client.get(url)
            rounds.append((time.process_time() - began) * 1000 / args.gets)
        shown = " / ".join(f"{r:.2f}" for r in rounds)
        print(
            f"{name:<16} {statistics.median(rounds):>10.2f} {shown:>24} {calls:>9.0f} {queried:>8}",
            f"{len(html):>7}",
        )
        if args.profile == name:
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(args.gets):
                client.get(url)
            profile.disable()
            pstats.Stats(profile).sort_stats(args.sort).print_stats(args.top)
    connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0, keepdb=True)


if __name__ == "__main__":
    main()
