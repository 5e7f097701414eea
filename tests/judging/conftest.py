"""A small study with one or two radiologists' ratings and some laypeople's answers, a scripted
OpenAI-compatible judge server, and a launcher that runs a judge run to the end in-process."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from annotation import scales
from annotation.models import (
    LayItem,
    Participant,
    Simplification,
)
from judging import services
from surveys.lay import services as lay_answers
from surveys.radiologist import services as expert_answers
from tests.annotation.factories import build_study
from tests.generation.scripted_llm_server import ScriptedLLMServer

ASPECTS = tuple(scales.EXPERT_ASPECTS)
RATINGS = {"plain_bs": 4, "plain_sc": 5, "cot_bs": 2, "cot_sc": 3}


@pytest.fixture(autouse=True)
def judge_settings(settings):
    settings.RADLAY_JUDGING = replace(settings.RADLAY_JUDGING, bootstrap_resamples=20)
    settings.RADLAY_JOB_TIMING = replace(settings.RADLAY_JOB_TIMING, retry_delay=0.0)
    settings.RADLAY_LLM_CALLS = replace(settings.RADLAY_LLM_CALLS, retry_delay=0.0, retries=1, timeout=5.0)


def add_radiologist(study, pseudonym: str, shift: int = 0) -> Participant:
    """A radiologist who rated every simplification (by system, so the systems rank plain_sc >
    plain_bs > cot_sc > cot_bs) and every original."""
    radiologist = Participant.objects.create(
        study=study, role=Participant.Role.RADIOLOGIST, pseudonym=pseudonym
    )
    for simplification in Simplification.objects.filter(source__study=study).select_related("system"):
        value = min(5, max(1, RATINGS[simplification.system.key] + shift))
        expert_answers.expert_rating_save(
            participant=radiologist,
            shown_text=simplification.shown_text,
            scores=dict.fromkeys(ASPECTS, value),
        )
    for source in study.sources.all():
        expert_answers.expert_source_judgement_save(
            participant=radiologist, source=source, severity=source.reference_severity or None, simplicity=2
        )
    return radiologist


@pytest.fixture
def study(db):
    study = build_study(slug="judged", n_sources=4)
    add_radiologist(study, "R1")
    layperson = Participant.objects.create(study=study, role=Participant.Role.LAYPERSON, pseudonym="L1")
    for position, simplification in enumerate(
        Simplification.objects.filter(source__study=study, system__key="plain_sc").select_related(
            "source", "system"
        )
    ):
        item = LayItem.objects.create(
            participant=layperson,
            source=simplification.source,
            position=position,
            assigned_system=simplification.system,
            shown_text=simplification.shown_text,
        )
        lay_answers.lay_answer_save(item=item, phase="original", answers={"severity_guess": "Critical"})
        lay_answers.lay_answer_save(
            item=item,
            phase="assisted",
            answers={"severity_guess": simplification.source.reference_severity or None},
        )
    return study


@pytest.fixture
def launch(django_capture_on_commit_callbacks):
    def run(**kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            judge_run = services.judge_run_create(**kwargs)
        judge_run.refresh_from_db()
        return judge_run

    return run


def task_of(prompt: str) -> str:
    if "original_simplicity:" in prompt:
        return "radiologist_source"
    if "helpfulness:" in prompt:
        return "lay_assisted"
    if "severity_guess:" in prompt:
        return "lay_original"
    return "radiologist_text"


VALID = {
    "radiologist_text": {
        "correctness": 4,
        "completeness": 4,
        "hallucination": 5,
        "structure": 3,
        "simplicity": 4,
    },
    "radiologist_source": {"severity": "Mild", "original_simplicity": 2},
    "lay_original": {
        "understanding": "Some parts of it",
        "confidence": "With low confidence",
        "severity_guess": "Mild",
    },
    "lay_assisted": {
        "understanding": "Most of it",
        "confidence": "With high confidence",
        "severity_guess": "Mild",
        "helpfulness": "I understand much better",
    },
}


def valid_answer(request) -> str:
    return json.dumps(VALID[task_of(request.messages[0]["content"])])


@pytest.fixture
def judge_server(settings, external_calls_approved):
    """The scripted server answering every judge prompt with a valid JSON answer by default."""
    with ScriptedLLMServer(model="judge-model") as server:
        server.set_fallback("radiologist", valid_answer)
        server.set_fallback("patient", valid_answer)
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = "test-key"
        yield server
