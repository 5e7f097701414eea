"""The database as the frames judging.agreement compares (its `AgreementInputs`). A selector of its
own, apart from judging.selectors, because it builds pandas frames: only the agreement's computation
(judging.services.judge_run_agreement_compute, in a task or a command) imports it, never a page.

Human answers are read here only as the *other side* of the comparison (radiologists'
ExpertRating / ExpertSourceJudgement, laypeople's LayAnswer, all through Participant); judge answers
only from judging's own tables.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from django.db.models import QuerySet

from annotation import scales
from annotation.models import (
    ExpertRating,
    ExpertSourceJudgement,
    LayAnswer,
    Participant,
    Simplification,
    Study,
)
from judging.agreement import AgreementInputs
from judging.agreement_terms import RUBRIC_FIELDS
from judging.models import JudgeAnswer, JudgeItem, JudgeRun

_Status = JudgeItem.Status


def _radiologists(study: Study) -> QuerySet[Participant]:
    return Participant.objects.filter(study=study, role=Participant.Role.RADIOLOGIST)


def _rater_name(participant_id: int, pseudonym: str) -> str:
    return pseudonym or f"#{participant_id}"


def agreement_inputs(*, run: JudgeRun) -> AgreementInputs:
    study = run.study
    # A rubric unit is one simplification (source × system): a text two systems share was rated once,
    # and that rating (like the judge's answer) counts for both, as in the protocol's Table 1.
    text_systems = list(
        Simplification.objects.filter(source__study=study).values_list("shown_text_id", "system__key")
    )
    systems_of: dict[int, list[str]] = {}
    for text_id, key in text_systems:
        systems_of.setdefault(text_id, []).append(key)
    human_rows: list[tuple[str, str, int, str, float]] = []
    for pid, pseudonym, text_id, source_id, *values in ExpertRating.objects.filter(
        participant__in=_radiologists(study)
    ).values_list(
        "participant_id", "participant__pseudonym", "shown_text_id", "shown_text__source_id", *RUBRIC_FIELDS
    ):
        for name, value in zip(RUBRIC_FIELDS, values, strict=True):
            if value is None:
                continue
            for system in systems_of.get(text_id, []):
                human_rows.append(
                    (_rater_name(pid, pseudonym), f"t{text_id}:{system}", source_id, name, float(value))
                )
    for pid, pseudonym, source_id, severity, simplicity in ExpertSourceJudgement.objects.filter(
        participant__in=_radiologists(study)
    ).values_list("participant_id", "participant__pseudonym", "source_id", "severity", "simplicity"):
        rater = _rater_name(pid, pseudonym)
        if severity:
            human_rows.append(
                (rater, f"s{source_id}", source_id, "severity", float(scales.SEVERITY.value_of(severity)))
            )
        if simplicity is not None:
            human_rows.append((rater, f"s{source_id}", source_id, "original_simplicity", float(simplicity)))
    human = pd.DataFrame(human_rows, columns=["rater", "unit", "source", "field", "value"])

    answers = JudgeAnswer.objects.filter(item__run=run, item__status=_Status.SUCCEEDED).select_related("item")
    judge_rows: list[tuple[str, int, str, float]] = []
    lay_rows: list[dict[str, Any]] = []
    references = {
        pk: scales.SEVERITY.value_of(level) if level else None
        for pk, level in study.sources.values_list("pk", "reference_severity")
    }
    for answer in answers:
        item = answer.item
        if item.task == "radiologist_text":
            for system in systems_of.get(item.shown_text_id, []):
                for name in RUBRIC_FIELDS:
                    judge_rows.append(
                        (f"t{item.shown_text_id}:{system}", item.source_id, name, getattr(answer, name))
                    )
        elif item.task == "radiologist_source":
            judge_rows.append((f"s{item.source_id}", item.source_id, "severity", answer.severity))
            judge_rows.append(
                (f"s{item.source_id}", item.source_id, "original_simplicity", answer.original_simplicity)
            )
        elif item.task == "lay_original":
            lay_rows.append(
                {
                    "source": item.source_id,
                    "phase": "original",
                    "system": None,
                    "guess": answer.severity_guess,
                    "reference": references.get(item.source_id),
                }
            )
        else:
            for system in systems_of.get(item.shown_text_id, []):
                lay_rows.append(
                    {
                        "source": item.source_id,
                        "phase": "assisted",
                        "system": system,
                        "guess": answer.severity_guess,
                        "reference": references.get(item.source_id),
                    }
                )
    judge = pd.DataFrame(judge_rows, columns=["unit", "source", "field", "value"])

    lay_human_rows = [
        {
            "source": source_id,
            "phase": phase,
            "system": system if phase == LayAnswer.Phase.ASSISTED else None,
            "guess": scales.SEVERITY.value_of(guess) if guess else None,
            "reference": scales.SEVERITY.value_of(reference) if reference else None,
        }
        for source_id, phase, system, guess, reference in LayAnswer.objects.filter(
            item__participant__study=study, item__participant__role=Participant.Role.LAYPERSON
        ).values_list(
            "item__source_id",
            "phase",
            "item__assigned_system__key",
            "severity_guess",
            "item__source__reference_severity",
        )
    ]
    columns = ["source", "phase", "system", "guess", "reference"]
    return AgreementInputs(
        human=human,
        judge=judge,
        text_systems=pd.DataFrame([(f"t{t}:{k}", k) for t, k in text_systems], columns=["unit", "system"]),
        lay_judge=pd.DataFrame(lay_rows, columns=columns),
        lay_humans=pd.DataFrame(lay_human_rows, columns=columns),
    )
