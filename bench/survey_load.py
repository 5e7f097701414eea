"""Closed-loop load on the radiologist survey, against gunicorn + PostgreSQL, with a bare-Django floor.

    # a PostgreSQL to run against (the way .ci/test.sh starts one, but with fsync on):
    pg=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1); mkdir -p /tmp/pg && chown postgres /tmp/pg
    runuser -u postgres -- $pg/initdb -D /tmp/pg/data -U postgres -A trust
    runuser -u postgres -- $pg/pg_ctl -D /tmp/pg/data -l /tmp/pg/log -w \
        -o "-p 55432 -k /tmp/pg -c listen_addresses=127.0.0.1 -c max_connections=300" start
    runuser -u postgres -- psql -h 127.0.0.1 -p 55432 -c "create database radlay_bench"

    DATABASE_URL=postgres://postgres@127.0.0.1:55432/radlay_bench .venv/bin/python bench/survey_load.py
    … --concurrency 1,20 --duration 10 --warmup 3 --think 0      # a short run

What it does, in this order:

1. migrates the database, collects static files, and creates a study of `--sources` sources × 3
   systems (bulk inserts) with enough radiologist invites, under `config.settings.production`;
2. starts gunicorn with `--workers` sync workers (3, as docker/compose.yml) on a free port;
3. for every C in `--concurrency` and every mean think time in `--think`: C participants, each one
   aiohttp session with its own cookie jar, do what the page does in a browser — open the invite
   link (following redirects), press Begin on the instructions, then on each page answer one
   question after another, each after an exponential think time of that mean, and submit. Two
   paces: `acknowledged` (the default) clicks each answer once the save before it came back, so
   every answer is one autosave POST (`HX-Request`, `X-CSRFToken`, the answer and `elapsed_ms`)
   whatever the think time: the server's cost per answer, the figure the floor ratio is about;
   `page` clicks after the think time whatever the saves do and sends as static/radlay/survey.js
   sends (`PageSaver`: one request in flight per page, the answers clicked meanwhile coalesced
   into the next one, the submit waiting for the request in flight only and carrying the rest),
   so at think 0 a page is one autosave and the submit — what a browser sends for answers given
   faster than their saves, not a per-answer cost. Then the whole page form (`action=next`) and
   the redirect to the next page. One page at a time per participant (closed loop). After
   `--warmup` seconds
   (`--think-warmup` with think time, so that page loads fall into the window), requests that end
   in the next `--duration` seconds are measured; an answer counts once, when the first request
   that carried it (an autosave, or the submit) was acknowledged;
4. checks storage row by row: for every answer the server acknowledged (HTTP 200), the database
   holds that participant's last acknowledged value for that field;
5. runs the same closed loop against a bare Django view that upserts one row into the same database
   (bench/survey_floor.py, same gunicorn settings) at the same concurrencies, without think time;
6. prints one table: acknowledged answers per second, latency percentiles of saves, page loads and
   submits, errors, lost answers, and radlay's answers/s as a fraction of the floor's upserts/s;
   and a second one (Linux): the CPU each measured window cost, from /proc, per HTTP request, per
   answer and per lay sentence, split into the server (gunicorn), the database (the processes of
   DATABASE_URL's PostgreSQL) and this driver, and the "CPU ratio": the bare floor's CPU per upsert
   ÷ the flow's CPU per answer, the answers/s ratio that CPU alone allows (on a shared machine it
   moves less than the answers/s ratio, which also measures how much CPU each phase was given).

The figures depend on the machine and on what else runs on it; print `nproc` and the load average
with them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from html import unescape as html_unescape
from pathlib import Path
from urllib.parse import urljoin

ROOT = Path(__file__).resolve().parent.parent
ASPECTS = ("correctness", "completeness", "hallucination", "structure", "simplicity")
SEVERITIES = ("Critical", "Serious", "Moderate", "Mild", "Healthy")
FIELD = re.compile(r'data-field="([^"]+)"')
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
PAGE_ID = re.compile(r"/page/(\d+)/")


def environment(database_url: str, static_root: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DATABASE_URL": database_url,
        "DJANGO_SECRET_KEY": "bench-survey-load-" + "x" * 40,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_SECURE_COOKIES": "0",
        # Plain HTTP on loopback, as behind the TLS-terminating proxy production sits behind.
        "DJANGO_SSL_REDIRECT": "0",
        "DJANGO_STATIC_ROOT": static_root,
        "DJANGO_LOG_LEVEL": "WARNING",
        # Every simulated participant comes from 127.0.0.1, where a real study's come from their own
        # networks: the per-IP limit on consents (60/h) would turn the later laypeople away.
        "RADLAY_RATE_LIMITS": "consent_ip=",
        "PYTHONPATH": str(ROOT),
    }


SETUP = r"""
import json, sys
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
call_command("collectstatic", "--noinput", verbosity=0)
from annotation import participant_services
from annotation.models import (Participant, Simplification, SimplificationText, Source, Study, System,
                               text_hash)

n_sources, n_raters, slug = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
study = Study.objects.create(slug=slug, title="Load test", status=Study.Status.OPEN)
systems = [System.objects.create(study=study, key=k, label=k, position=i) for i, k in enumerate("abc")]
sources = Source.objects.bulk_create(
    [Source(study=study, key=f"s{i}", position=i,
            text=f"Sentence {i}: a {i % 30 + 2} mm nodule in the right upper lobe, unchanged.")
     for i in range(n_sources)]
)
texts = SimplificationText.objects.bulk_create(
    [SimplificationText(source=s, text=t, text_hash=text_hash(t))
     for s in sources for y in systems for t in [f"A small spot {s.pk} ({y.key})."]]
)
shown = iter(texts)
Simplification.objects.bulk_create(
    [Simplification(source=s, system=y, shown_text=next(shown)) for s in sources for y in systems]
)
invited = {role: participant_services.participants_invite(study=study, role=role, count=n_raters)
           for role in (Participant.Role.RADIOLOGIST, Participant.Role.LAYPERSON)}
print(json.dumps({role: [[p.pk, p.token] for p in people] for role, people in invited.items()}))
"""

VERIFY = r"""
import json, sys
import django
django.setup()
from django.db.models import Q
from annotation.answer_selectors import expert_judgements, expert_ratings
from annotation.models import ExpertItem
wanted = json.load(sys.stdin)  # [[participant, item, field, value], ...]
items = {i.pk: i for i in ExpertItem.objects.filter(pk__in={w[1] for w in wanted}).select_related("source")}
participants = Q(participant_id__in={w[0] for w in wanted})
ratings = {(r.participant_id, r.shown_text_id): r for r in expert_ratings(where=participants)}
judgements = {(j.participant_id, j.source_id): j for j in expert_judgements(where=participants)}
lost, wrong = 0, 0
for participant, item_id, name, value in wanted:
    item = items.get(item_id)
    row, aspect = name.split("-")
    if row == "original":
        found = judgements.get((participant, item.source_id))
    else:
        label_index = ord(row) - ord("A")
        found = ratings.get((participant, item.text_order[label_index]))
    if found is None:
        lost += 1
    elif str(getattr(found, aspect)) != str(value):
        wrong += 1
print(json.dumps({"checked": len(wanted), "lost": lost, "wrong": wrong}))
"""

VERIFY_LAY = r"""
import json, sys
import django
django.setup()
from django.db.models import Q
from annotation.answer_selectors import lay_answers, lay_preferences
wanted = json.load(sys.stdin)  # [[participant, item, "panel:question", value], ...]
items = {w[1] for w in wanted}
mine = Q(participant_id__in={w[0] for w in wanted})
answers = {(a.item_id, a.phase): a for a in lay_answers(where=mine) if a.item_id in items}
preferences = {p.item_id: p for p in lay_preferences(where=mine) if p.item_id in items}
lost, wrong = 0, 0
for participant, item, key, value in wanted:
    panel, name = key.split(":")
    if panel == "preference":
        found = preferences.get(item)
        chosen = getattr(found, name) if found and name in ("most", "least") else None
        stored = None if chosen is None else [str(t) for t in chosen]
        ok = stored is not None and value in stored
    else:
        found = answers.get((item, panel))
        ok = found is not None and str(getattr(found, name, "")) == str(value)
    if found is None:
        lost += 1
    elif not ok:
        wrong += 1
print(json.dumps({"checked": len(wanted), "lost": lost, "wrong": wrong}))
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def gunicorn(app: str, env: dict[str, str], workers: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            app,
            "--workers",
            str(workers),
            "--bind",
            f"127.0.0.1:{port}",
            "--timeout",
            "120",
            "--backlog",
            "2048",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.2)
    else:
        process.kill()
        raise SystemExit(f"gunicorn {app} did not start")
    # The port is open before the workers have loaded the app: wait until they answer, so that a
    # phase's first visits are not timed with a worker's start-up.
    with ThreadPoolExecutor(2 * workers) as pool:
        list(pool.map(lambda _: _answered(base + "/"), range(2 * workers)))
    return process, base


def _answered(url: str) -> None:
    with contextlib.suppress(urllib.error.HTTPError):  # any HTTP answer means the worker is up
        urllib.request.urlopen(url, timeout=120).close()


FLOORS = ("bare", "stack")  # bench/survey_floor.py's two floors, RADLAY_FLOOR_STACK=0 and 1


@dataclass
class Recorder:
    """Latencies and acknowledged answers of requests that end inside the measured window."""

    start: float
    end: float
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"save": [], "page": [], "submit": []})
    answers: int = 0
    errors: int = 0
    acknowledged: dict[tuple[int, int, str], str] = field(default_factory=dict)
    window_set: asyncio.Event = field(default_factory=asyncio.Event)
    sentence_sizes: list[int] = field(default_factory=list)  # answers per finished lay sentence
    requests: int = 0  # HTTP requests, redirects followed included
    arrival: float = 0.0  # seconds until every participant was on their first page (first visits)
    turned_away: int = 0  # participants whose first visit ended on an error (they take no part)
    cpu: dict[str, float] | None = None  # CPU seconds in the measured window, by process kind

    @property
    def sentences(self) -> float:
        """Lay sentences done in the window, as its acknowledged answers ÷ the answers a sentence
        has. (Counting the sentences whose last panel was submitted in the window is coarse: the
        participants of a closed loop move in step, so whole cohorts finish a sentence together
        and the count jumps by C.)"""
        if not self.sentence_sizes:
            return 0.0
        return self.answers / statistics.fmean(self.sentence_sizes)

    def record(self, kind: str, began: float, ok: bool, hops: int = 1, answers: int | None = None) -> None:
        """A request that ended now; `answers`: the answers it was the first to have acknowledged
        (an autosave may carry several, a submit those no autosave carried; default one a save)."""
        now = time.monotonic()
        if self.start <= now <= self.end:
            self.requests += hops
            self.latencies[kind].append((now - began) * 1000)
            if not ok:
                self.errors += 1
            else:
                self.answers += (1 if kind == "save" else 0) if answers is None else answers


# CPU time of the measured window, by who spent it. Throughput on a shared or virtual machine
# moves with its neighbours; the CPU a request costs moves much less, so a change is judged by it.
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _processes() -> dict[int, tuple[int, str, float]]:
    """{pid: (parent pid, command, CPU seconds)} of the processes /proc shows (Linux; {} elsewhere)."""
    found = {}
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                head, _, rest = stat.read().rpartition(")")
        except OSError:
            continue  # gone meanwhile
        fields = rest.split()
        command = head.partition("(")[2]
        found[int(entry.name)] = (int(fields[1]), command, (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)
    return found


# The postmaster of DATABASE_URL's server when it runs on this machine (postmaster_find): only its
# processes count as the database, not those of another PostgreSQL on a shared machine.
POSTMASTER: int | None = None


def postmaster_find(database_url: str) -> int | None:
    """The pid of the postmaster that serves `database_url`, if it is a local process: the parent
    of the backend that answers `pg_backend_pid()`; None if that cannot be told."""
    try:
        import psycopg

        with psycopg.connect(database_url) as connection:
            backend = connection.execute("select pg_backend_pid()").fetchone()[0]
            return _processes()[backend][0]  # while the backend is there: it ends with the connection
    except Exception:  # noqa: BLE001 (a remote server, or no /proc: count every local postgres)
        return None


def cpu_sample(server_pid: int) -> dict[str, dict[int, float]]:
    """CPU seconds so far of the server (gunicorn's master and its workers), the database (the
    processes of DATABASE_URL's postmaster; every local PostgreSQL process if it is not found) and
    this driver, per process."""
    sample: dict[str, dict[int, float]] = {"server": {}, "database": {}, "driver": {}}
    for pid, (parent, command, seconds) in _processes().items():
        if pid == server_pid or parent == server_pid:
            sample["server"][pid] = seconds
        elif command == "postgres" and (POSTMASTER is None or POSTMASTER in (pid, parent)):
            sample["database"][pid] = seconds
    sample["driver"][os.getpid()] = time.process_time()
    return sample


def cpu_spent(before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]) -> dict[str, float]:
    # A process that started in between counts from zero; one that ended in between is not seen.
    return {
        kind: sum(seconds - before[kind].get(pid, 0.0) for pid, seconds in after[kind].items())
        for kind in after
    }


async def measure_cpu(rec: Recorder, server_pid: int | None) -> None:
    """Sample at the start and at the end of the measured window."""
    if server_pid is None or not os.path.isdir("/proc"):
        return
    await rec.window_set.wait()
    await asyncio.sleep(max(0.0, rec.start - time.monotonic()))
    before = cpu_sample(server_pid)
    await asyncio.sleep(max(0.0, rec.end - time.monotonic()))
    rec.cpu = cpu_spent(before, cpu_sample(server_pid))


def answer_value(name: str, rng: random.Random) -> str:
    if name == "original-severity":
        return rng.choice(SEVERITIES)
    return str(rng.randint(1, 5))


class PageSaver:
    """What static/radlay/survey.js sends from one page: one autosave in flight at a time; answers
    given while one is in flight wait and go together in the next request; a failed request's
    answers wait again (behind newer ones) and are retried after 1, 2, 4 … 15 s; a refused one
    (4xx) is not retried. The submit (`submit_ready`) sends nothing on its own: it waits for the
    request in flight only (up to 4 s), and its form carries every answer, those still waiting too.

    `post(pairs, values)` sends one autosave (the form-encoded pairs, the answers by name) and
    returns "saved", "refused" or "failed". `fixed`: the parameters every request carries first
    (survey.js `params`); `list_field`: the name under which each list answer's name is sent."""

    def __init__(self, post, fixed: tuple[tuple[str, str], ...] = (), list_field: str | None = None):
        self.post, self.fixed, self.list_field = post, fixed, list_field
        self.waiting: dict[str, str | list[str]] = {}
        self.task: asyncio.Future | None = None
        self.holding = False
        self.retry = 0.0
        self.timer: asyncio.TimerHandle | None = None

    def queue(self, values: dict[str, str | list[str]]) -> None:
        self.waiting.update(values)
        self._send()

    def _send(self) -> None:
        if self.task is not None or self.holding or not self.waiting:
            return
        values, self.waiting = self.waiting, {}
        pairs = list(self.fixed)
        for name, value in values.items():
            if isinstance(value, list):
                pairs += [(name, v) for v in value]
                pairs += [(self.list_field, name)] if self.list_field else []
            else:
                pairs.append((name, value))
        self.task = asyncio.ensure_future(self._request(pairs, values))

    async def _request(self, pairs, values) -> None:
        try:
            outcome = await self.post(pairs, values)
        except Exception:  # noqa: BLE001 - the page retries whatever went wrong with a request
            outcome = "failed"
        self.task = None
        if outcome == "failed":
            for name, value in values.items():
                self.waiting.setdefault(name, value)
            self.retry = min(self.retry * 2 if self.retry else 1.0, 15.0)
            self.timer = asyncio.get_running_loop().call_later(self.retry, self._send)
        else:
            self.retry = 0.0
            self._send()

    async def idle(self) -> None:
        """Until nothing waits or is in flight (the "acknowledged" pace: a click after each answer's
        save came back)."""
        while self.task is not None or (self.waiting and not self.holding):
            if self.task is not None:
                await asyncio.shield(self.task)
            else:
                await asyncio.sleep(0.05)

    async def submit_ready(self, limit: float = 4.0) -> None:
        """The submit: from now on nothing is sent on its own, and the request in flight (if any)
        is waited for, so that it cannot land after the submit; what waits goes with the form."""
        self.holding = True
        if self.timer is not None:
            self.timer.cancel()
        if self.task is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.task), limit)
        self.waiting.clear()


async def _posted(session, url: str, data, headers) -> int:
    """The status of one autosave POST (0 when it got no answer)."""
    import aiohttp

    try:
        async with session.post(url, data=data, headers=headers) as response:
            await response.read()
            return response.status
    except aiohttp.ClientError:
        return 0


def _outcome(status: int) -> str:
    return "saved" if 200 <= status < 300 else "refused" if 400 <= status < 500 else "failed"


async def radiologist(
    session,
    base: str,
    participant: tuple[int, str],
    think: float,
    rec: Recorder,
    arrived: asyncio.Queue,
    rng: random.Random,
    pace: str = "page",
) -> None:
    """One radiologist: open the invite link (and press Begin), report arrival on the first page
    (the first visit creates the participant's pages; it belongs to the warm-up), then rate pages
    until the measured window ends (rec.end, set once everybody has arrived): each answer clicked
    after a think time (none at think 0), sent as the page sends it (PageSaver), then the submit."""

    pk, token = participant
    try:
        began = time.monotonic()
        async with session.get(f"{base}/s/{token}/") as response:
            html, url = await response.text(), str(response.url)
        rec.record("page", began, response.status == 200)
        if "/instructions/" in url:
            began = time.monotonic()
            async with session.post(url, data={"csrfmiddlewaretoken": CSRF.search(html)[1]}) as response:
                html, url = await response.text(), str(response.url)
            rec.record("page", began, response.status == 200)
    finally:
        arrived.put_nowait(pk)  # a failed first visit must not hold up everybody's measured window
    await rec.window_set.wait()
    while time.monotonic() < rec.end:
        match = PAGE_ID.search(url)
        if match is None:
            return  # finished the survey
        item = int(match[1])
        csrf = CSRF.search(html)[1]
        headers = {"HX-Request": "true", "X-CSRFToken": csrf, "Referer": url}
        given: dict[str, str] = {}  # what the form holds: every answer clicked on this page
        saved: set[str] = set()  # the answers an autosave had acknowledged

        async def post(pairs, values, url=url, headers=headers, item=item, saved=saved) -> str:
            began = time.monotonic()
            status = await _posted(session, url, [*pairs, ("elapsed_ms", "1200")], headers)
            ok = 200 <= status < 300
            rec.record("save", began, ok, answers=len(set(values) - saved) if ok else 0)
            if ok:
                saved.update(values)
                for name, value in values.items():
                    rec.acknowledged[(pk, item, name)] = value
            return _outcome(status)

        saver = PageSaver(post)
        for name in dict.fromkeys(FIELD.findall(html)):
            if name.endswith("-comment"):
                continue
            if think:
                await asyncio.sleep(rng.expovariate(1 / think))
            if time.monotonic() >= rec.end:
                await saver.submit_ready()  # leaving: the request in flight ends first
                return
            given[name] = answer_value(name, rng)
            saver.queue({name: given[name]})
            if pace == "acknowledged":
                await saver.idle()
        await saver.submit_ready()
        began = time.monotonic()
        data = {**given, "csrfmiddlewaretoken": csrf, "action": "next", "elapsed_ms": "500"}
        async with session.post(url, data=data, headers={"Referer": url}, allow_redirects=False) as response:
            await response.read()
            location = response.headers.get("Location", "")
        rec.record("submit", began, response.status == 302, answers=len(set(given) - saved))
        if response.status != 302:
            return
        for name, value in given.items():
            rec.acknowledged[(pk, item, name)] = value
        began = time.monotonic()
        async with session.get(urljoin(url, location)) as response:
            html, url = await response.text(), str(response.url)
        rec.record("page", began, response.status == 200)


# The driver shares the machine with the server it measures, so it reads pages cheaply: a scan of
# the tags a form is made of (radlay's pages are Django output, every attribute value quoted), ~15×
# cheaper than html.parser (measured on a lay panel: 0.12 vs 1.77 ms), which cost ~5 ms a sentence.
TAG = re.compile(r"<(/?)(form|input|textarea|button)\b([^>]*)>", re.IGNORECASE)
ATTRIBUTE = re.compile(r"""([^\s=/>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")


def _attributes(text: str) -> dict[str, str]:
    return {
        m[1].lower(): html_unescape(m[2] if m[2] is not None else m[3] if m[3] is not None else m[4] or "")
        for m in ATTRIBUTE.finditer(text)
    }


@dataclass
class FormReader:
    """The first POST form of a page: its action, hidden fields, choice groups (radio and checkbox,
    name -> values in page order), text areas and submit buttons."""

    action: str | None = None
    hidden: list[tuple[str, str]] = field(default_factory=list)
    radios: dict[str, list[str]] = field(default_factory=dict)
    checkboxes: dict[str, list[str]] = field(default_factory=dict)
    textareas: list[str] = field(default_factory=list)
    buttons: list[tuple[str, str]] = field(default_factory=list)

    def add(self, tag: str, a: dict[str, str]) -> None:
        kind, name = a.get("type", "").lower(), a.get("name")
        if not name:
            return
        if tag == "input":
            if kind == "hidden":
                self.hidden.append((name, a.get("value", "")))
            elif kind == "radio":
                self.radios.setdefault(name, []).append(a.get("value", ""))
            elif kind == "checkbox":
                self.checkboxes.setdefault(name, []).append(a.get("value", ""))
            elif kind == "submit":
                self.buttons.append((name, a.get("value", "")))
        elif tag == "textarea":
            self.textareas.append(name)
        elif tag == "button" and (kind or "submit") == "submit":
            self.buttons.append((name, a.get("value", "")))


def form_of(html: str) -> FormReader:
    reader, inside = FormReader(), False
    for closing, tag, attrs in TAG.findall(html):
        tag = tag.lower()
        if tag == "form":
            if closing and inside:
                break
            a = _attributes(attrs)
            if not closing and a.get("method", "").lower() == "post":
                inside, reader.action = True, a.get("action", "")
        elif inside and not closing:
            reader.add(tag, _attributes(attrs))
    return reader


LAY_PANEL = re.compile(r"/sentence/(\d+)/(\w+)/")
LINKED = ("most", "least")  # static/radlay/lay.js `linked`: sent together


async def _lay_enter(session, base: str, token: str, rec: Recorder) -> tuple[str, str] | None:
    """Consent, background and instructions: the first panel's (HTML, address), or None."""
    async with session.get(f"{base}/l/{token}/") as response:
        html, url = await response.text(), str(response.url)
    while not LAY_PANEL.search(url):
        form = form_of(html)
        if response.status >= 400 or form.action is None:
            if "/done/" not in url:  # a finished participant is not turned away
                rec.turned_away += 1
            return None
        data = [*form.hidden]
        data += [(name, values[0]) for name, values in form.radios.items()]
        data += [(name, values[0]) for name, values in form.checkboxes.items()]
        data += [form.buttons[0]] if form.buttons else []
        async with session.post(urljoin(url, form.action), data=data, headers={"Referer": url}) as response:
            html, url = await response.text(), str(response.url)
    return html, url


async def _lay_answers(
    session,
    form: FormReader,
    url: str,
    where: tuple[int, int, str],
    think: float,
    rec: Recorder,
    rng,
    pace: str,
) -> tuple[list[tuple[str, str]], set[str]] | None:
    """A panel's questions answered one by one (after a think time each) and sent as the page sends
    them: the choices made and the questions an autosave acknowledged; None once the window ended."""
    pk, item, panel = where
    action = urljoin(url, form.action or url)
    csrf = dict(form.hidden).get("csrfmiddlewaretoken", "")
    stamp = dict(form.hidden).get("rendered_at", "")
    chosen: list[tuple[str, str]] = []
    saved: set[str] = set()  # the questions an autosave had acknowledged
    headers = {"HX-Request": "true", "X-CSRFToken": csrf, "Referer": url}

    async def post(pairs, values) -> str:
        began = time.monotonic()
        status = await _posted(session, action, [*pairs, ("elapsed_ms", "1500")], headers)
        ok = 200 <= status < 300
        # A linked group sent before it was answered (panel 3's other question) is no answer.
        answered = {name for name, value in values.items() if value}
        rec.record("save", began, ok, answers=len(answered - saved) if ok else 0)
        if ok:
            saved.update(answered)
            for name in answered:
                value = values[name]
                rec.acknowledged[(pk, item, f"{panel}:{name}")] = (
                    value[0] if isinstance(value, list) else value
                )
        return _outcome(status)

    # What static/radlay/survey.js sends (lay.js's options): the page's fixed parameters, the
    # changed answer (a checkbox group: the checked values of both linked groups, each name under
    # `fields`), and the ms since the last save.
    saver = PageSaver(post, fixed=(("autosave", "1"), ("rendered_at", stamp)), list_field="fields")
    for index, (name, values) in enumerate([*form.radios.items(), *form.checkboxes.items()]):
        if think:
            await asyncio.sleep(rng.expovariate(1 / think))
        if time.monotonic() >= rec.end:
            await saver.submit_ready()  # leaving: the request in flight ends first
            return None
        # Most and least liked are different texts (the same one for both is refused).
        pick = values[index % len(values)] if name in form.checkboxes else rng.choice(values)
        chosen.append((name, pick))
        if name in form.checkboxes:
            # lay.js links panel 3's two questions: a tick sends the checked boxes of both.
            linked = [g for g in LINKED if g in form.checkboxes] if name in LINKED else [name]
            ticked = dict(chosen)
            saver.queue({group: [ticked[group]] if group in ticked else [] for group in linked})
        else:
            saver.queue({name: pick})
        if pace == "acknowledged":
            await saver.idle()
    await saver.submit_ready()
    return chosen, saved


async def layperson(
    session,
    base: str,
    participant: tuple[int, str],
    think: float,
    rec: Recorder,
    arrived: asyncio.Queue,
    rng: random.Random,
    pace: str = "page",
) -> None:
    """One layperson: consent, background, instructions (warm-up), then panel after panel: each
    question answered after a think time (none at think 0) and sent as the page sends it
    (PageSaver, with lay.js's options), and the panel submit (the whole form), which answers with
    the next panel as it does in the browser. A sentence counts when its last panel is submitted."""
    pk, token = participant
    try:
        entered = await _lay_enter(session, base, token, rec)
    finally:
        arrived.put_nowait(pk)
    if entered is None:
        return
    html, url = entered
    await rec.window_set.wait()
    given = 0  # answers of the current sentence
    while time.monotonic() < rec.end:
        match = LAY_PANEL.search(url)
        if match is None:
            return
        item, panel = int(match[1]), match[2]
        form = form_of(html)
        given += len(form.radios) + len(form.checkboxes)
        answered = await _lay_answers(session, form, url, (pk, item, panel), think, rec, rng, pace)
        if answered is None:
            return
        chosen, saved = answered
        # The submit as survey.js sends it (`navigate`): the whole form, and the next panel comes
        # back in the response with its address in X-Radlay-Page; any other next page (an attention
        # check, the end) is a 204 naming it, which the page then loads. (A server without this
        # answers with a redirect, which is followed: the same run measures an older radlay.)
        began = time.monotonic()
        # The form as the browser sends it: hidden fields, the choices, the (empty) text areas.
        data = [*form.hidden, *chosen, *((name, "") for name in form.textareas)]
        data += [("continue", "1"), ("elapsed_ms", "500")]
        csrf = dict(form.hidden).get("csrfmiddlewaretoken", "")
        headers = {"X-Radlay-Navigate": "1", "X-CSRFToken": csrf, "Referer": url}
        action = urljoin(url, form.action or url)
        async with session.post(action, data=data, headers=headers, allow_redirects=False) as response:
            text = await response.text()
            page = response.headers.get("X-Radlay-Page")
            location = response.headers.get("X-Radlay-Location") or response.headers.get("Location")
        in_place = response.status == 200 and page is not None
        submitted = in_place or response.status in (204, 302)
        rec.record("submit", began, submitted, answers=len({name for name, _ in chosen} - saved))
        if submitted:
            for name, value in chosen:
                rec.acknowledged[(pk, item, f"{panel}:{name}")] = value
        if in_place:
            html, url = text, urljoin(url, page)
        elif response.status in (204, 302) and location:
            began = time.monotonic()
            async with session.get(urljoin(url, location)) as response:
                html, url = await response.text(), str(response.url)
                hops = 1 + len(response.history)
            rec.record("page", began, response.status == 200, hops)
        else:
            return
        # The sentence is finished when the page after its submit is not one of its panels.
        following = LAY_PANEL.search(url)
        if following is None or int(following[1]) != item:
            rec.sentence_sizes.append(given)
            given = 0


async def floor_client(
    session, base: str, n: int, rec: Recorder, arrived, rng: random.Random, stack: bool = False
) -> None:
    """One client of a floor (bench/survey_floor.py): one-row upserts in a closed loop; behind the
    stack floor's CSRF check, with the token its GET /token/ hands out."""
    headers = {}
    try:
        if stack:
            async with session.get(f"{base}/token/") as response:
                headers = {"X-CSRFToken": await response.text()}
    finally:
        arrived.put_nowait(n)
    await rec.window_set.wait()
    while time.monotonic() < rec.end:
        began = time.monotonic()
        async with session.post(
            f"{base}/answer/",
            data={"p": n, "f": f"f{rng.randint(0, 16)}", "v": rng.randint(1, 5)},
            headers=headers,
        ) as response:
            await response.read()
        rec.record("save", began, response.status == 200)


async def run_phase(
    base: str,
    participants,
    concurrency: int,
    think: float,
    warmup: float,
    duration: float,
    floor: str = "",
    flow=None,
    server_pid: int | None = None,
) -> Recorder:
    import aiohttp

    rec = Recorder(start=float("inf"), end=float("inf"))
    arrived: asyncio.Queue = asyncio.Queue()
    timeout = aiohttp.ClientTimeout(total=120)
    sessions = [
        aiohttp.ClientSession(
            cookie_jar=aiohttp.CookieJar(unsafe=True),
            timeout=timeout,
            connector=aiohttp.TCPConnector(limit=1),
        )
        for _ in range(concurrency)
    ]
    try:
        tasks = []
        for n, session in enumerate(sessions):
            rng = random.Random(n)
            if floor:
                tasks.append(floor_client(session, base, n, rec, arrived, rng, stack=floor == "stack"))
            else:
                tasks.append((flow or radiologist)(session, base, participants[n], think, rec, arrived, rng))
        tasks.append(measure_cpu(rec, server_pid))
        began = time.monotonic()
        running = asyncio.gather(*tasks, return_exceptions=True)
        for _ in range(concurrency):
            await arrived.get()
        now = time.monotonic()
        rec.arrival = now - began
        rec.start, rec.end = now + warmup, now + warmup + duration
        rec.window_set.set()
        results = await running
        failures = [r for r in results if isinstance(r, BaseException)]
        rec.errors += len(failures) + rec.turned_away
        for failure in failures[:2]:
            print(f"    a participant stopped: {failure!r}"[:300], flush=True)
    finally:
        for session in sessions:
            await session.close()
    return rec


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", default="1,20,50,200")
    parser.add_argument("--think", default="0,5", help="mean think times in seconds, comma-separated")
    parser.add_argument("--duration", type=float, default=20.0, help="measured seconds per phase")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument(
        "--think-warmup",
        type=float,
        default=90.0,
        help="warm-up of the phases with think time: long enough for a page's answers (17 × 5 s), "
        "so that page loads and submits fall into the measured window",
    )
    parser.add_argument("--sources", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--flows", default="radiologist,lay", help="radiologist, lay or both")
    parser.add_argument(
        "--pace",
        choices=("acknowledged", "page"),
        default="acknowledged",
        help="acknowledged: each answer is clicked once the previous one's save came back (one "
        "autosave per answer: the server's cost per answer, as the floor ratio compares); page: "
        "answers are clicked after the think time whatever the saves do, and sent as survey.js sends "
        "them (one request in flight, the others coalesced or carried by the submit)",
    )
    args = parser.parse_args()
    database_url = os.environ.get("DATABASE_URL", "")
    if not database_url.startswith("postgres"):
        raise SystemExit("Set DATABASE_URL to a PostgreSQL database (see the docstring for starting one).")
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    thinks = [float(t) for t in args.think.split(",")]

    with tempfile.TemporaryDirectory() as static_root:
        env = environment(database_url, static_root)
        slug = f"load-{int(time.time())}"
        n_raters = sum(concurrencies) * len(thinks)
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", SETUP, str(args.sources), str(n_raters), slug],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        import json

        invited = json.loads(out.stdout.strip().splitlines()[-1])
        global POSTMASTER
        POSTMASTER = postmaster_find(database_url)
        flows = {
            "radiologist": (radiologist, [tuple(p) for p in invited["radiologist"]], VERIFY),
            "lay": (layperson, [tuple(p) for p in invited["layperson"]], VERIFY_LAY),
        }
        print(
            f"setup: {args.sources} sources × 3 systems, {n_raters} radiologists and laypeople, "
            f"{time.perf_counter() - started:.1f} s; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
            f"database CPU: " + (f"postmaster {POSTMASTER}" if POSTMASTER else "every local postgres")
        )

        rows = []
        server, base = gunicorn("config.wsgi:application", env, args.workers)
        try:
            for flow_name in args.flows.split(","):
                driver, people, verify = flows[flow_name]
                offset = 0
                for think in thinks:
                    for c in concurrencies:
                        rec = asyncio.run(
                            run_phase(
                                base,
                                people[offset : offset + c],
                                c,
                                think,
                                args.think_warmup if think else args.warmup,
                                args.duration,
                                flow=functools.partial(driver, pace=args.pace),
                                server_pid=server.pid,
                            )
                        )
                        offset += c
                        wanted = [
                            [p, item, name, value] for (p, item, name), value in rec.acknowledged.items()
                        ]
                        check = json.loads(
                            subprocess.run(
                                [sys.executable, "-c", verify],
                                input=json.dumps(wanted),
                                cwd=ROOT,
                                env=env,
                                check=True,
                                capture_output=True,
                                text=True,
                            )
                            .stdout.strip()
                            .splitlines()[-1]
                        )
                        rows.append((flow_name, c, think, rec, check))
                        print(
                            f"  {flow_name} C={c} think={think:g}s: "
                            f"{rec.answers / args.duration:.1f} answers/s, "
                            f"{rec.sentences / args.duration:.2f} lay sentences/s, "
                            f"{check['lost']} lost, {check['wrong']} wrong of {check['checked']}; "
                            f"all {c} arrived (first visits) in {rec.arrival:.1f} s; "
                            f"load {os.getloadavg()[0]:.1f}"
                            + (f", {rec.turned_away} TURNED AWAY at entry" if rec.turned_away else ""),
                            flush=True,
                        )
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)

        # The floors (bench/survey_floor.py): bare, then the same view with radlay's settings and
        # middleware ("stack"), each at every C without think time.
        floors: dict[str, dict[int, Recorder]] = {kind: {} for kind in FLOORS}
        floor_env = {**env, "DJANGO_SETTINGS_MODULE": ""}
        subprocess.run(
            [sys.executable, "-c", "import bench.survey_floor as f; f.table_create()"],
            cwd=ROOT,
            env=floor_env,
            check=True,
        )
        for kind in FLOORS:
            kind_env = {**floor_env, "RADLAY_FLOOR_STACK": "1" if kind == "stack" else "0"}
            server, base = gunicorn("bench.survey_floor:application", kind_env, args.workers)
            try:
                for c in concurrencies:
                    phase = run_phase(
                        base, [], c, 0, args.warmup, args.duration, floor=kind, server_pid=server.pid
                    )
                    floors[kind][c] = asyncio.run(phase)
                    if floors[kind][c].errors:
                        print(f"  {kind} floor C={c}: {floors[kind][c].errors} errors", flush=True)
            finally:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=60)

    rates = {kind: {c: r.answers / args.duration for c, r in by_c.items()} for kind, by_c in floors.items()}
    print()
    print(
        f"{'flow':>11} {'C':>4} {'think':>5} {'answers/s':>9} {'floor/s':>8} {'ratio':>5} {'stack/s':>7} "
        f"{'ratio':>5} {'sent./s':>7} {'req/sent.':>9} "
        f"{'save p50':>8} {'save p95':>8} {'page p50':>8} {'page p95':>8} {'submit p95':>10} {'errors':>6} "
        f"{'lost':>4} {'wrong':>5}"
    )
    for flow_name, c, think, rec, check in rows:
        rate = rec.answers / args.duration
        floor, stack = (rates[kind].get(c, float("nan")) for kind in FLOORS)
        ratio = rate / floor if floor else float("nan")
        stack_ratio = rate / stack if stack else float("nan")
        save, page, submit = rec.latencies["save"], rec.latencies["page"], rec.latencies["submit"]
        print(
            f"{flow_name:>11} {c:>4} {think:>5g} {rate:>9.1f} {floor:>8.1f} {ratio:>5.2f} "
            f"{stack:>7.1f} {stack_ratio:>5.2f} "
            f"{rec.sentences / args.duration:>7.2f} "
            f"{rec.requests / rec.sentences if rec.sentences else float('nan'):>9.1f} "
            f"{percentile(save, 50):>8.0f} {percentile(save, 95):>8.0f} "
            f"{percentile(page, 50):>8.0f} {percentile(page, 95):>8.0f} {percentile(submit, 95):>10.0f} "
            f"{rec.errors:>6} {check['lost']:>4} {check['wrong']:>5}"
        )
    print(
        "latencies in ms; 'page' = a page GET (redirects followed); 'submit' = the page form POST (a 302; "
        "a lay panel's answers with the next panel itself); "
        "floor = bare-Django one-row upserts/s at the same C without think time; stack = the same view "
        "with radlay's settings and middleware (CSRF, sessions, security headers, CSP, htmx, axes); "
        "ratio = answers/s ÷ that floor's upserts/s; sent./s = lay sentences "
        "(all panels answered) per second, as answers/s ÷ answers per sentence; req/sent. = HTTP "
        "requests (redirects included) per sentence: "
        "floor/s divided by it is what the bare view would allow"
    )
    cpu_table(rows, floors, args.duration)


def cpu_table(rows, floors: dict[str, dict[int, Recorder]], duration: float) -> None:
    """What the measured windows cost in CPU: per HTTP request by process kind, and per lay
    sentence; on N cores, N × 1000 / (ms per sentence) sentences/s is the most the machine allows."""
    measured = [(flow, c, think, rec) for flow, c, think, rec, _ in rows]
    measured += [(f"{kind} floor", c, 0.0, rec) for kind, by_c in floors.items() for c, rec in by_c.items()]
    measured = [(flow, c, think, rec) for flow, c, think, rec in measured if rec.cpu and rec.requests]
    if not measured:
        return  # no /proc (not Linux)
    # The bare floor's CPU per upsert at each C: what the CPU ratio divides.
    floor_cpu = {
        c: sum(rec.cpu.values()) / rec.requests
        for flow, c, _, rec in measured
        if flow == "bare floor" and rec.requests
    }
    print()
    print(
        f"{'CPU':>11} {'C':>4} {'think':>5} {'server/req':>10} {'db/req':>7} {'driver/req':>10} "
        f"{'all/req':>8} {'all/answer':>10} {'all/sent.':>9} {'cores busy':>10} {'CPU ratio':>9}"
    )
    for flow, c, think, rec in measured:
        per = {kind: 1000 * seconds / rec.requests for kind, seconds in rec.cpu.items()}
        total = sum(rec.cpu.values())
        sentence = f"{1000 * total / rec.sentences:>9.1f}" if rec.sentences else f"{'':>9}"
        per_answer = total / rec.answers if rec.answers else float("nan")
        ratio = floor_cpu.get(c, float("nan")) / per_answer if rec.answers else float("nan")
        print(
            f"{flow:>11} {c:>4} {think:>5g} {per['server']:>10.2f} {per['database']:>7.2f} "
            f"{per['driver']:>10.2f} {sum(per.values()):>8.2f} {1000 * per_answer:>10.2f} {sentence} "
            f"{total / duration:>10.2f} {ratio:>9.2f}"
        )
    print(
        "CPU ms from /proc over the measured window: server = gunicorn's master and workers, db = the "
        "local PostgreSQL's processes, driver = this load driver (on the same machine, it takes CPU "
        "from the server); all/answer = all three per acknowledged answer (a floor's: per upsert); "
        "all/sent. = all three per lay sentence; CPU ratio = the bare floor's all/answer ÷ this one's: "
        "the answers/s ratio that CPU alone allows, less moved than answers/s by what else runs"
    )


if __name__ == "__main__":
    main()
