"""The server's CPU for each kind of survey request, in process, under radlay's production settings
and middleware: a radiologist and a layperson walk their surveys the way bench/survey_load.py's
driver does (one htmx autosave per answer, the page or panel submit, the next page), through
Django's test client, and every request's CPU (time.process_time) is added to its kind; a timing
layer between every two middleware splits each request's CPU into what every middleware cost
and what the view did (URL resolving, the view, its response). Python function calls per request
(cProfile) and queries per request are printed beside: they do not depend on what else runs.

A focused complement to survey_load.py: no network, no gunicorn, no other process, so that a
change to the request path shows in milliseconds per request; the database round trips are there
(the CPU the database spends is not: survey_load.py measures that).

    DATABASE_URL=postgres://postgres@127.0.0.1:55432/radlay_bench \\
        .venv/bin/python bench/survey_requests.py [--pages 6] [--profile "radiologist autosave"]

It runs in a database beside the configured one (its name + `_survey_requests`, created or kept).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import sys
import tempfile
import time
from collections import defaultdict
from functools import partial
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# Production settings, as bench/survey_load.py's gunicorn runs them (plain HTTP on loopback).
for _name, _value in {
    "DJANGO_SETTINGS_MODULE": "config.settings.production",
    "DJANGO_SECRET_KEY": "bench-survey-requests-" + "x" * 40,
    "DJANGO_ALLOWED_HOSTS": "testserver,127.0.0.1,localhost",
    "DJANGO_SECURE_COOKIES": "0",
    "DJANGO_SSL_REDIRECT": "0",
    "DJANGO_LOG_LEVEL": "WARNING",
    "RADLAY_RATE_LIMITS": "consent_ip=",
    # The production storage needs the collected files' manifest (collected at each run: only
    # what changed is copied, and a static file renamed since the last run is then in it).
    "DJANGO_STATIC_ROOT": str(Path(tempfile.gettempdir()) / "radlay-survey-requests-static"),
}.items():
    os.environ.setdefault(_name, _value)

FIELD = re.compile(r'data-field="([^"]+)"')
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
STAMP = re.compile(r'name="rendered_at" value="([^"]*)"')
RADIO = re.compile(r'<input[^>]*type="radio"[^>]*name="([^"]+)"[^>]*value="([^"]*)"')
CHECKBOX = re.compile(r'<input[^>]*type="checkbox"[^>]*name="([^"]+)"[^>]*value="([^"]*)"')
SEVERITIES = ("Critical", "Serious", "Moderate", "Mild", "Healthy")


class Ledger:
    """CPU seconds, requests, queries and function calls per request kind, and CPU per layer."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.count: dict[str, int] = defaultdict(int)
        self.queries: dict[str, int] = defaultdict(int)
        self.layers: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.marks: list[tuple[int, str, float]] = []  # (depth, "in"/"out", CPU time) of a request
        self.sql: dict[str, list[str]] = {}  # the last request's statements, per kind


LEDGER = Ledger()


def timing_layer(depth: int):
    """A middleware factory that stamps the CPU clock on the way in and out at `depth`."""

    def factory(get_response):
        def layer(request):
            LEDGER.marks.append((depth, "in", time.process_time()))
            response = get_response(request)
            LEDGER.marks.append((depth, "out", time.process_time()))
            return response

        return layer

    return factory


def _layer_costs(names: list[str]) -> dict[str, float]:
    """What each middleware cost in one request (its time in minus the next layer's), and "view"."""
    stamps = {(depth, way): at for depth, way, at in LEDGER.marks}
    costs = {}
    for depth, name in enumerate(names):
        inner = depth + 1
        if (depth, "in") not in stamps or (depth, "out") not in stamps:
            continue
        if (inner, "in") in stamps and (inner, "out") in stamps:
            own = (stamps[(inner, "in")] - stamps[(depth, "in")]) + (
                stamps[(depth, "out")] - stamps[(inner, "out")]
            )
        else:  # answered before the next layer (a refusal)
            own = stamps[(depth, "out")] - stamps[(depth, "in")]
        costs[name] = own
    last = len(names)
    if (last, "in") in stamps and (last, "out") in stamps:
        costs["view (resolve, view, response)"] = stamps[(last, "out")] - stamps[(last, "in")]
    return costs


def _study(n_sources: int):
    # The same study as bench/survey_pages.py's (imported here: Django is set up by then).
    from bench.survey_pages import bench_study

    return bench_study("requests", n_sources)


class Walker:
    """A test client whose requests are timed and counted under a kind."""

    def __init__(self, names: list[str], counting: bool) -> None:
        from django.test import Client

        self.client = Client(enforce_csrf_checks=True)
        self.names = names
        self.counting = counting
        self.profiles: dict[str, cProfile.Profile] = {}
        self.profiled: dict[str, int] = defaultdict(int)  # requests profiled per kind

    def request(self, kind: str, method: str, url: str, data=None, **headers):
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        if method == "GET":
            send = self.client.get
        else:  # form-encoded, as browsers and survey.js send it (the test client's default is multipart)
            data = urlencode(data or {}, doseq=True)
            send = partial(self.client.post, content_type="application/x-www-form-urlencoded")
        LEDGER.marks.clear()
        if self.counting:
            profile = self.profiles.setdefault(kind, cProfile.Profile(time.process_time))
            self.profiled[kind] += 1
            profile.enable()
            response = send(url, data or {}, headers=headers)
            profile.disable()
            return response
        with CaptureQueriesContext(connection) as queries:
            began = time.process_time()
            response = send(url, data or {}, headers=headers)
            spent = time.process_time() - began
        LEDGER.cpu[kind] += spent
        LEDGER.count[kind] += 1
        LEDGER.queries[kind] += len(queries)
        LEDGER.sql[kind] = [query["sql"] for query in queries.captured_queries]
        for layer, seconds in _layer_costs(self.names).items():
            LEDGER.layers[kind][layer] += seconds
        return response


def radiologist_walk(walker: Walker, study, pages: int, carried: bool = False) -> None:
    """`carried`: each page as static/radlay/survey.js sends it when the answers come faster than
    its saves (bench/survey_load.py at think 0): the first answer's autosave, then the submit,
    which carries the others (timed as "radiologist submit, carrying")."""
    from django.urls import reverse

    from annotation import participant_services
    from annotation.models import Participant

    person = participant_services.participants_invite(
        study=study, role=Participant.Role.RADIOLOGIST, count=1
    )[0]
    response = walker.client.get(reverse("surveys:expert-start", args=[person.token]), follow=True)
    html = response.content.decode()
    walker.client.post(
        reverse("surveys:expert-instructions", args=[person.token]),
        {"csrfmiddlewaretoken": CSRF.search(html)[1]},
    )
    url = reverse("surveys:expert-page", args=[person.token, person.expert_items.order_by("position")[0].pk])
    html = walker.request("radiologist page GET", "GET", url).content.decode()
    for _ in range(pages):
        csrf = CSRF.search(html)[1]
        given: dict[str, str] = {}
        for index, name in enumerate(dict.fromkeys(FIELD.findall(html))):
            if name.endswith("-comment"):
                continue
            value = SEVERITIES[index % 5] if name == "original-severity" else str(index % 5 + 1)
            if carried and given:
                given[name] = value  # waiting while the first one is in flight: the submit carries it
                continue
            response = walker.request(
                "radiologist autosave",
                "POST",
                url,
                {name: value, "elapsed_ms": "1200"},
                HX_Request="true",
                X_CSRFToken=csrf,
            )
            assert response.status_code == 200, (response.status_code, response.content[:300])
            given[name] = value
        data = {**given, "csrfmiddlewaretoken": csrf, "action": "next", "elapsed_ms": "500"}
        kind = "radiologist submit, carrying" if carried else "radiologist submit"
        response = walker.request(kind, "POST", url, data)
        assert response.status_code == 302, response.status_code
        url = response["Location"]
        if "/page/" not in url:
            return
        html = walker.request("radiologist page GET", "GET", url).content.decode()


def lay_walk(walker: Walker, study, sentences: int, carried: bool = False) -> None:
    """`carried`: as radiologist_walk's (the panel's first answer autosaved, the submit carrying
    the others: "lay panel submit, carrying")."""
    from django.urls import reverse

    from annotation import participant_services
    from annotation.models import Participant

    person = participant_services.participants_invite(study=study, role=Participant.Role.LAYPERSON, count=1)[
        0
    ]
    participant_services.participant_consent(participant=person, accepted=True)
    html = walker.client.get(reverse("surveys:lay-instructions", kwargs={"token": person.token})).content
    csrf = CSRF.search(html.decode())[1]
    response = walker.client.post(
        reverse("surveys:lay-instructions", kwargs={"token": person.token}), {"csrfmiddlewaretoken": csrf}
    )
    response = walker.client.get(response["Location"], follow=True)
    url = response.request["PATH_INFO"]
    html = response.content.decode()
    done = 0
    while "/sentence/" in url and done < sentences * 3:
        csrf = CSRF.search(html)[1]
        stamp = STAMP.search(html)[1]
        radios: dict[str, list[str]] = {}
        for name, value in RADIO.findall(html):
            radios.setdefault(name, []).append(value)
        boxes: dict[str, list[str]] = {}
        for name, value in CHECKBOX.findall(html):
            boxes.setdefault(name, []).append(value)
        chosen: list[tuple[str, str]] = []
        for index, (name, values) in enumerate([*radios.items(), *boxes.items()]):
            pick = values[index % len(values)]
            chosen.append((name, pick))
            if carried and len(chosen) > 1:
                continue  # waiting while the first one is in flight: the submit carries it
            data = {"autosave": "1", "rendered_at": stamp, name: pick, "elapsed_ms": "1500"}
            if name in boxes:
                data["fields"] = name
            response = walker.request("lay autosave", "POST", url, data, HX_Request="true", X_CSRFToken=csrf)
            assert response.status_code == 200, (response.status_code, response.content[:300])
        data = {
            "csrfmiddlewaretoken": csrf,
            "rendered_at": stamp,
            **dict(chosen),
            "continue": "1",
            "elapsed_ms": "500",
        }
        response = walker.request(
            "lay panel submit, carrying" if carried else "lay panel submit",
            "POST",
            url,
            data,
            X_Radlay_Navigate="1",
            X_CSRFToken=csrf,
        )
        done += 1
        if response.status_code == 200 and response.get("X-Radlay-Page"):
            url, html = response["X-Radlay-Page"], response.content.decode()
        elif response.status_code in (204, 302):
            location = response.get("X-Radlay-Location") or response["Location"]
            response = walker.request("lay page GET", "GET", location)
            while response.status_code == 302:
                response = walker.request("lay page GET", "GET", response["Location"])
            url, html = location, response.content.decode()
        else:
            raise AssertionError((response.status_code, response.content[:300]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=6, help="radiologist pages walked per round")
    parser.add_argument("--sentences", type=int, default=4, help="lay sentences walked per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sources", type=int, default=60)
    parser.add_argument("--profile", default="", help="a request kind to print a cProfile of")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sql", action="store_true", help="print each kind's statements (its last request)")
    parser.add_argument(
        "--carried",
        action="store_true",
        help="also walk pages as survey.js sends them at think 0: one autosave, then the submit "
        'carrying the other answers ("… submit, carrying")',
    )
    parser.add_argument(
        "--callees", default="", help="with --profile: print what functions matching this call"
    )
    args = parser.parse_args()

    import django
    from django.conf import settings

    names = list(settings.MIDDLEWARE)
    settings.MIDDLEWARE = [
        item for depth, name in enumerate(names) for item in (f"bench.survey_requests.layer_{depth}", name)
    ] + [f"bench.survey_requests.layer_{len(names)}"]
    for depth in range(len(names) + 1):
        globals()[f"layer_{depth}"] = timing_layer(depth)
    sys.modules.setdefault("bench.survey_requests", sys.modules[__name__])  # the layers' one LEDGER
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("collectstatic", "--noinput", verbosity=0)

    connection.settings_dict["TEST"]["NAME"] = f"{connection.settings_dict['NAME']}_survey_requests"
    connection.creation.create_test_db(verbosity=0, keepdb=True)
    from django.conf import settings as live

    live.DEBUG = False
    study = _study(args.sources)
    short = [name.rsplit(".", 1)[-1] for name in names]
    # A warm-up round (templates compiled, statements prepared), timed rounds, then counted rounds.
    radiologist_walk(Walker(short, counting=False), study, 2)
    lay_walk(Walker(short, counting=False), study, 1)
    LEDGER.__init__()
    for _ in range(args.rounds):
        radiologist_walk(Walker(short, counting=False), study, args.pages)
        lay_walk(Walker(short, counting=False), study, args.sentences)
        if args.carried:
            radiologist_walk(Walker(short, counting=False), study, args.pages, carried=True)
            lay_walk(Walker(short, counting=False), study, args.sentences, carried=True)
    counter = Walker(short, counting=True)
    radiologist_walk(counter, study, 2)
    lay_walk(counter, study, 1)
    if args.carried:
        radiologist_walk(counter, study, 2, carried=True)
        lay_walk(counter, study, 1, carried=True)
    calls = {
        kind: pstats.Stats(profile).total_calls / counter.profiled[kind]  # type: ignore[attr-defined]
        for kind, profile in counter.profiles.items()
    }
    kinds = sorted(LEDGER.count)
    print(f"settings {os.environ['DJANGO_SETTINGS_MODULE']}; load {os.getloadavg()[0]:.1f}")
    print(f"{'request':<22} {'n':>5} {'CPU ms/req':>10} {'queries/req':>11} {'calls/req':>9}")
    for kind in kinds:
        n = LEDGER.count[kind]
        per_call = calls.get(kind, float("nan"))
        print(
            f"{kind:<22} {n:>5} {1000 * LEDGER.cpu[kind] / n:>10.3f} {LEDGER.queries[kind] / n:>11.2f} "
            f"{per_call:>9.0f}"
        )
    print()
    layers = [*short, "view (resolve, view, response)"]
    print(f"{'CPU ms/req by layer':<34} " + " ".join(f"{kind[:14]:>14}" for kind in kinds))
    for layer in layers:
        print(
            f"{layer:<34} "
            + " ".join(f"{1000 * LEDGER.layers[kind][layer] / LEDGER.count[kind]:>14.3f}" for kind in kinds)
        )
    if args.sql:
        for kind in kinds:
            print(f"\n{kind}:", *(f"  {sql[:300]}" for sql in LEDGER.sql[kind]), sep="\n")
    if args.profile:
        pstats.Stats(counter.profiles[args.profile]).sort_stats("tottime").print_stats(args.top)
        pstats.Stats(counter.profiles[args.profile]).sort_stats("cumulative").print_stats(args.top)
        if args.callees:
            pstats.Stats(counter.profiles[args.profile]).sort_stats("cumulative").print_callees(args.callees)
    connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0, keepdb=True)


if __name__ == "__main__":
    main()
