"""The embedded mode's launched work runs in a background thread when
RADLAY_EMBEDDED_TASKS_IN_BACKGROUND is on (work/runner.py `send`): the launching call returns
before the messages have run, and they all run, in order, those they send included."""

from __future__ import annotations

import threading

import pytest
from celery import shared_task

from work import runner

pytestmark = pytest.mark.django_db(transaction=True)

_RAN: list[int] = []
_RELEASE = threading.Event()
_DONE = threading.Event()


@shared_task(name="tests.work.test_embedded_background.step")
def step(n: int) -> None:
    _RELEASE.wait(timeout=10)
    _RAN.append(n)
    if n == 1:  # a message sent by a running one joins the same queue
        runner.send("tests.work.test_embedded_background.step", [[3]])
    if n == 3:
        _DONE.set()


def test_the_launch_returns_before_the_work_runs_and_the_work_then_runs(settings):
    settings.RADLAY_EMBEDDED_TASKS_IN_BACKGROUND = True
    assert runner.embedded_mode()
    _RAN.clear()
    runner.send("tests.work.test_embedded_background.step", [[1], [2]])
    assert _RAN == []  # returned at once: nothing has run yet
    _RELEASE.set()
    assert _DONE.wait(timeout=10)
    assert _RAN == [1, 2, 3]


def test_without_the_setting_the_work_runs_inside_the_call(settings):
    settings.RADLAY_EMBEDDED_TASKS_IN_BACKGROUND = False
    _RAN.clear()
    _RELEASE.set()
    runner.send("tests.work.test_embedded_background.step", [[2]])
    assert _RAN == [2]
