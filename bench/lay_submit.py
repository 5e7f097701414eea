"""What the lay panel's in-place submit saves: CPU per sentence, the two kinds of submit side by side.

    DATABASE_URL=postgres://postgres@127.0.0.1:55432/radlay_bench .venv/bin/python bench/lay_submit.py
    … --sentences 150 --runs 3      # the defaults

A lay panel submitted from the page (static/radlay/survey.js `navigate`, header X-Radlay-Navigate)
is answered with the next panel itself; without JavaScript it is a submit, a redirect and the next
page's GET. One layperson (C = 1) takes sentences against one gunicorn sync worker, alternating the
two kinds sentence by sentence, so that whatever else the machine is doing falls on both alike
(closed-loop runs at C = 20 or 50, bench/survey_load.py, vary more from run to run on a shared
2-core machine than this difference). Each sentence: one autosave per question, as survey.js sends
it, then the panel submit, for all three panels. The CPU of each sentence is read from /proc
(Linux) for the server (gunicorn's master and worker), the database (the local PostgreSQL's
processes) and this driver, and summed per kind; the table gives ms per sentence and the ratio of
in place to plain. Setup as bench/survey_load.py (its study, `--sources` × 3 systems)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from urllib.parse import urljoin

from survey_load import LAY_PANEL, ROOT, SETUP, cpu_sample, cpu_spent, environment, form_of, gunicorn

KINDS = ("plain", "in place")


async def _enter(session, base: str, token: str) -> tuple[str, str]:
    """Consent, background and instructions with their first options: the first panel's page."""
    async with session.get(f"{base}/l/{token}/") as response:
        html, url = await response.text(), str(response.url)
    while not LAY_PANEL.search(url):
        form = form_of(html)
        if form.action is None:
            raise SystemExit(f"no form on {url}")
        data = [*form.hidden, *[(name, values[0]) for name, values in form.radios.items()]]
        data += [form.buttons[0]] if form.buttons else []
        async with session.post(urljoin(url, form.action), data=data, headers={"Referer": url}) as response:
            html, url = await response.text(), str(response.url)
    return html, url


async def _sentence(session, html: str, url: str, in_place: bool) -> tuple[str, str, int]:
    """The three panels of the sentence on `url`; the next sentence's first page and the requests."""
    item, requests = LAY_PANEL.search(url)[1], 0
    while (match := LAY_PANEL.search(url)) is not None and match[1] == item:
        form = form_of(html)
        action = urljoin(url, form.action or url)
        hidden = dict(form.hidden)
        chosen = []
        for index, (name, values) in enumerate([*form.radios.items(), *form.checkboxes.items()]):
            chosen.append((name, values[index % len(values)] if name in form.checkboxes else values[0]))
            data = [("autosave", "1"), ("rendered_at", hidden.get("rendered_at", "")), chosen[-1]]
            data += [("fields", name)] if name in form.checkboxes else []
            headers = {"HX-Request": "true", "X-CSRFToken": hidden["csrfmiddlewaretoken"], "Referer": url}
            async with session.post(
                action, data=[*data, ("elapsed_ms", "1500")], headers=headers
            ) as response:
                await response.read()
                assert response.status == 200, (url, response.status)
            requests += 1
        headers = {"X-CSRFToken": hidden["csrfmiddlewaretoken"], "Referer": url}
        headers.update({"X-Radlay-Navigate": "1"} if in_place else {})
        data = [*form.hidden, *chosen, ("continue", "1"), ("elapsed_ms", "500")]
        async with session.post(action, data=data, headers=headers, allow_redirects=False) as response:
            text, page = await response.text(), response.headers.get("X-Radlay-Page")
            location = response.headers.get("X-Radlay-Location") or response.headers.get("Location")
        requests += 1
        if in_place and response.status == 200 and page:
            html, url = text, urljoin(url, page)
            continue
        assert response.status in (204, 302) and location, (url, response.status)
        async with session.get(urljoin(url, location)) as response:
            html, url = await response.text(), str(response.url)
        requests += 1
    return html, url, requests


async def _run(base: str, token: str, sentences: int, server_pid: int) -> dict[str, dict[str, float]]:
    import aiohttp

    totals = {kind: {"server": 0.0, "database": 0.0, "driver": 0.0, "requests": 0} for kind in KINDS}
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        html, url = await _enter(session, base, token)
        html, url, _ = await _sentence(session, html, url, True)  # warm-up
        for n in range(2 * sentences):
            kind = KINDS[n % 2]
            before = cpu_sample(server_pid)
            html, url, requests = await _sentence(session, html, url, kind == "in place")
            for what, seconds in cpu_spent(before, cpu_sample(server_pid)).items():
                totals[kind][what] += seconds
            totals[kind]["requests"] += requests
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sentences", type=int, default=150, help="sentences of each kind per run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sources", type=int, default=2000)
    args = parser.parse_args()
    database_url = os.environ.get("DATABASE_URL", "")
    if not database_url.startswith("postgres"):
        raise SystemExit("Set DATABASE_URL to a PostgreSQL database (see bench/survey_load.py).")
    if not os.path.isdir("/proc"):
        raise SystemExit("Needs /proc (Linux) to read the CPU of each process.")
    if 2 * args.sentences + 2 > args.sources:  # each layperson's sentences, the warm-up and one more
        raise SystemExit(f"--sources must be at least {2 * args.sentences + 2} (a source per sentence).")
    with tempfile.TemporaryDirectory() as static_root:
        env = environment(database_url, static_root)
        out = subprocess.run(
            [sys.executable, "-c", SETUP, str(args.sources), str(args.runs), f"submit-{int(time.time())}"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        laypeople = json.loads(out.stdout.strip().splitlines()[-1])["layperson"]
        print(f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; {args.sources} sources × 3 systems")
        columns = (
            ("run", 3),
            ("submit", 8),
            ("req/sent.", 9),
            ("server", 7),
            ("db", 6),
            ("driver", 7),
            ("all", 6),
        )
        print(" ".join(f"{name:>{width}}" for name, width in columns), " ms per sentence")
        server, base = gunicorn("config.wsgi:application", env, 1)
        try:
            for run, (_, token) in enumerate(laypeople, start=1):
                totals = asyncio.run(_run(base, token, args.sentences, server.pid))
                all_cpu = {}
                for kind in KINDS:
                    per = {
                        what: 1000 * totals[kind][what] / args.sentences
                        for what in ("server", "database", "driver")
                    }
                    all_cpu[kind] = sum(per.values())
                    requests = totals[kind]["requests"] / args.sentences
                    print(
                        f"{run:>3} {kind:>8} {requests:>9.1f} {per['server']:>7.1f} "
                        f"{per['database']:>6.1f} {per['driver']:>7.1f} {all_cpu[kind]:>6.1f}"
                    )
                print(
                    f"{run:>3} ratio in place / plain, all CPU: {all_cpu['in place'] / all_cpu['plain']:.2f}"
                )
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
