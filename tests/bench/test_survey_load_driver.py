"""bench/survey_load.py's driver sends what the survey pages send (static/radlay/survey.js): one
autosave in flight per page, answers given meanwhile coalesced into the next request, the submit
waiting for the request in flight only and carrying every answer itself; and its two flows, run
against a live radlay at think 0, store every answer they count as acknowledged."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest

from bench.survey_load import PageSaver, Recorder, layperson, radiologist


def _run(main):
    """asyncio.run(main()) in a thread of its own: a test run may hold an event loop in this one
    (Playwright's sync API, for the browser tests)."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["value"] = asyncio.run(main())
        except BaseException as exc:  # re-raised below, in the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _saver(outcomes: list[str], delay: float = 0.05, **options) -> tuple[PageSaver, list[list]]:
    sent: list[list] = []

    async def post(pairs, values):
        sent.append(pairs)
        await asyncio.sleep(delay)
        return outcomes.pop(0) if outcomes else "saved"

    return PageSaver(post, **options), sent


def test_answers_given_while_one_is_in_flight_go_together_in_the_next_request():
    async def run():
        saver, sent = _saver([])
        saver.queue({"A-correctness": "4"})
        saver.queue({"A-completeness": "3"})
        saver.queue({"original-severity": "Mild"})
        await saver.idle()
        return sent

    assert _run(run) == [
        [("A-correctness", "4")],
        [("A-completeness", "3"), ("original-severity", "Mild")],
    ]


def test_the_submit_waits_for_the_request_in_flight_and_sends_nothing_else():
    async def run():
        saver, sent = _saver([], delay=0.2)
        saver.queue({"A-correctness": "4"})
        saver.queue({"A-completeness": "3"})  # waits: carried by the submit's form
        began = time.monotonic()
        await saver.submit_ready()
        waited = time.monotonic() - began
        saver.queue({"A-structure": "2"})  # after the submit: in its form, never sent alone
        await asyncio.sleep(0.3)
        return sent, waited, saver.task

    sent, waited, task = _run(run)
    assert sent == [[("A-correctness", "4")]]
    assert waited >= 0.15 and task is None


def test_a_failed_request_is_retried_behind_newer_answers_and_a_refused_one_is_not():
    async def run():
        saver, sent = _saver(["failed", "saved", "refused"], delay=0.05)
        saver.queue({"A-correctness": "4"})
        saver.queue({"A-correctness": "5", "A-structure": "2"})  # newer, while the first fails
        await asyncio.sleep(1.3)  # the retry after 1 s
        await saver.idle()
        saver.queue({"original-severity": "Fatal"})
        await saver.idle()
        return sent

    assert _run(run) == [
        [("A-correctness", "4")],
        [("A-correctness", "5"), ("A-structure", "2")],
        [("original-severity", "Fatal")],
    ]


def test_fixed_parameters_and_list_answers_are_sent_as_survey_js_sends_them():
    async def run():
        saver, sent = _saver([], fixed=(("autosave", "1"), ("rendered_at", "s")), list_field="fields")
        saver.queue({"most": ["7"], "least": []})
        await saver.idle()
        return sent

    assert _run(run) == [
        [("autosave", "1"), ("rendered_at", "s"), ("most", "7"), ("fields", "most"), ("fields", "least")]
    ]


def _drive(flow, base: str, participant, seconds: float, pace: str) -> Recorder:
    import aiohttp

    async def run() -> Recorder:
        rec = Recorder(start=float("inf"), end=float("inf"))
        arrived: asyncio.Queue = asyncio.Queue()
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            task = asyncio.ensure_future(
                flow(session, base, participant, 0, rec, arrived, random.Random(1), pace=pace)
            )
            await arrived.get()
            rec.start, rec.end = time.monotonic(), time.monotonic() + seconds
            rec.window_set.set()
            await task
        return rec

    return _run(run)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("pace", ["page", "acknowledged"])
def test_the_flows_store_every_answer_they_count(live_server, pace):
    from annotation import participant_services
    from annotation.answer_selectors import expert_judgements, expert_ratings, lay_answers
    from annotation.models import ExpertItem, Participant
    from tests.annotation.factories import build_study

    study = build_study(slug=f"driver-{pace}", n_sources=3)
    expert = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    rec = _drive(radiologist, live_server.url, (expert.pk, expert.token), 4.0, pace)
    assert rec.errors == 0 and rec.answers > 0 and rec.latencies["submit"]
    ratings = {r.shown_text_id: r for r in expert_ratings(where=None) if r.participant_id == expert.pk}
    judgements = {j.source_id: j for j in expert_judgements(where=None) if j.participant_id == expert.pk}
    items = {i.pk: i for i in ExpertItem.objects.filter(participant=expert)}
    for (_, item_id, name), value in rec.acknowledged.items():
        row, aspect = name.split("-")
        item = items[item_id]
        found = (
            judgements.get(item.source_id)
            if row == "original"
            else ratings.get(item.text_order[ord(row) - 65])
        )
        assert found is not None and str(getattr(found, aspect)) == value, name
    pages = len(rec.latencies["submit"])
    saves = len(rec.latencies["save"])
    if pace == "page":  # at think 0: one autosave in flight, the rest carried by the submit
        assert saves <= pages + 1
    else:  # one autosave per answer
        assert saves >= rec.answers - 1

    lay = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    rec = _drive(layperson, live_server.url, (lay.pk, lay.token), 4.0, pace)
    assert rec.errors == 0 and rec.answers > 0 and rec.sentence_sizes
    stored = {(a.item_id, a.phase): a for a in lay_answers(where=None) if a.participant_id == lay.pk}
    for (_, item_id, key), value in rec.acknowledged.items():
        panel, name = key.split(":")
        if panel != "preference":
            assert str(getattr(stored[(item_id, panel)], name)) == value, key
