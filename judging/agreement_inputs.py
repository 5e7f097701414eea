"""The database as the frames judging.agreement compares (its `AgreementInputs`). A selector of its
own, apart from judging.selectors, because it builds pandas frames: only the agreement's computation
(judging.services.judge_run_agreement_compute, in a task or a command) imports it, never a page.

Human answers are read here only as the *other side* of the comparison (radiologists' ratings and
judgements of originals, laypeople's answers, in the protocol's shapes of
annotation/answer_selectors.py); judge answers only from judging's own tables.

Shared texts: a text several systems produced for a source was rated, answered and judged once and
counts for every one of those systems, on both sides, through Table 1's own function
(evaluation.analysis.protocol.credit_systems); the laypeople's answers are Table 1's frame
(evaluation.analysis.study_frames.lay_answers_frame), so their per-system severity figures are Table 1's.
"""

from __future__ import annotations

import pandas as pd
from django.db.models import Q, QuerySet

from annotation import scales
from annotation.answer_selectors import expert_judgements, expert_ratings
from annotation.models import (
    Participant,
    Simplification,
    Study,
)
from annotation.selectors import counted_participants
from evaluation.analysis.protocol import credit_systems
from evaluation.analysis.study_frames import lay_answers_frame
from judging.agreement import AgreementInputs
from judging.agreement_terms import RUBRIC_FIELDS
from judging.instrument_items import ITEM_TASK
from judging.models import JudgeAnswer, JudgeItem, JudgeRun

_Status = JudgeItem.Status


def _radiologists(study: Study) -> QuerySet[Participant]:
    return Participant.objects.filter(counted_participants(), study=study, role=Participant.Role.RADIOLOGIST)


def _rater_name(participant_id: int, pseudonym: str) -> str:
    return pseudonym or f"#{participant_id}"


LAY_COLUMNS = ["source", "phase", "system", "guess", "reference"]


def _credited(rows: list[tuple], columns: list[str]) -> pd.DataFrame:
    """`rows` (their last column the tuple of systems that produced the text) once for each of those
    systems, in column `system`: the protocol's rule for a text several systems share (rated or
    judged once, counting for each of them), the one Table 1 applies (evaluation.analysis.protocol)."""
    frame = pd.DataFrame(rows, columns=[*columns, "systems"])
    return credit_systems(frame).drop(columns="systems").reset_index(drop=True)


def _with_units(frame: pd.DataFrame) -> pd.DataFrame:
    """A rubric unit is one simplification (text × system): "t<text id>:<system key>"."""
    units = [
        f"t{text_id}:{system}" for text_id, system in zip(frame["text_id"], frame["system"], strict=True)
    ]
    return frame.assign(unit=pd.Series(units, index=frame.index, dtype=object))


def _lay_rows(original: pd.DataFrame, assisted: pd.DataFrame) -> pd.DataFrame:
    """Panel-1 rows once, with no system, then the credited panel-2 rows."""
    parts = [frame[LAY_COLUMNS] for frame in (original.assign(system=None), assisted) if len(frame)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=LAY_COLUMNS)


def agreement_inputs(*, run: JudgeRun) -> AgreementInputs:
    study = run.study
    text_systems = list(
        Simplification.objects.filter(source__study=study).values_list("shown_text_id", "system__key")
    )
    systems_of: dict[int, tuple[str, ...]] = {}
    for text_id, key in text_systems:
        systems_of[text_id] = (*systems_of.get(text_id, ()), key)
    rating_rows: list[tuple] = []
    radiologists = dict(_radiologists(study).values_list("pk", "pseudonym"))
    of_radiologists = Q(participant_id__in=list(radiologists))
    for rating in expert_ratings(study=study, where=of_radiologists):
        pid, pseudonym = rating.participant_id, radiologists[rating.participant_id]
        text_id, source_id = rating.shown_text_id, rating.source_id
        values = [getattr(rating, name) for name in RUBRIC_FIELDS]
        for name, value in zip(RUBRIC_FIELDS, values, strict=True):
            if value is not None:
                rating_rows.append(
                    (
                        _rater_name(pid, pseudonym),
                        text_id,
                        source_id,
                        name,
                        float(value),
                        systems_of.get(text_id, ()),
                    )
                )
    ratings = _with_units(_credited(rating_rows, ["rater", "text_id", "source", "field", "value"]))
    human_rows: list[tuple[str, str, int, str, float]] = list(
        ratings[["rater", "unit", "source", "field", "value"]].itertuples(index=False, name=None)
    )
    for judgement in expert_judgements(study=study, where=of_radiologists):
        pid, source_id = judgement.participant_id, judgement.source_id
        severity, simplicity = judgement.severity, judgement.simplicity
        rater = _rater_name(pid, radiologists[pid])
        if severity:
            human_rows.append(
                (rater, f"s{source_id}", source_id, "severity", float(scales.SEVERITY.value_of(severity)))
            )
        if simplicity is not None:
            human_rows.append((rater, f"s{source_id}", source_id, "original_simplicity", float(simplicity)))
    human = pd.DataFrame(human_rows, columns=["rater", "unit", "source", "field", "value"])

    # The protocol's four tasks; instrument-items answers are compared in the study analysis's
    # "Instrument items" section and in the run's agreement["instrument_items"].
    answers = (
        JudgeAnswer.objects.filter(item__run=run, item__status=_Status.SUCCEEDED)
        .exclude(item__task=ITEM_TASK)
        .select_related("item")
    )
    text_rows: list[tuple] = []
    judge_rows: list[tuple[str, int, str, float | None]] = []
    lay_original: list[tuple] = []
    lay_assisted: list[tuple] = []
    references = {
        pk: scales.SEVERITY.value_of(level) if level else None
        for pk, level in study.sources.values_list("pk", "reference_severity")
    }
    for answer in answers:
        item = answer.item
        if item.task == "radiologist_text":
            for name in RUBRIC_FIELDS:
                text_rows.append(
                    (
                        item.shown_text_id,
                        item.source_id,
                        name,
                        getattr(answer, name),
                        systems_of.get(item.shown_text_id, ()),
                    )
                )
        elif item.task == "radiologist_source":
            judge_rows.append((f"s{item.source_id}", item.source_id, "severity", answer.severity))
            judge_rows.append(
                (f"s{item.source_id}", item.source_id, "original_simplicity", answer.original_simplicity)
            )
        elif item.task == "lay_original":
            lay_original.append(
                (item.source_id, "original", answer.severity_guess, references.get(item.source_id))
            )
        else:
            lay_assisted.append(
                (
                    item.source_id,
                    "assisted",
                    answer.severity_guess,
                    references.get(item.source_id),
                    systems_of.get(item.shown_text_id, ()),
                )
            )
    texts = _with_units(_credited(text_rows, ["text_id", "source", "field", "value"]))
    judge = pd.DataFrame(
        [*texts[["unit", "source", "field", "value"]].itertuples(index=False, name=None), *judge_rows],
        columns=["unit", "source", "field", "value"],
    )
    lay_columns = ["source", "phase", "guess", "reference"]
    lay_judge = _lay_rows(
        pd.DataFrame(lay_original, columns=lay_columns), _credited(lay_assisted, lay_columns)
    )

    # The laypeople's side is Table 1's: the same answers frame (evaluation.analysis.study_frames) and the
    # same crediting of a shared text to every system that produced it.
    lay_answers = lay_answers_frame(study=study).rename(
        columns={"severity_guess": "guess", "reference_severity": "reference"}
    )
    lay_humans = _lay_rows(
        lay_answers[lay_answers["phase"] == "original"],
        credit_systems(lay_answers[lay_answers["phase"] == "assisted"]),
    )
    return AgreementInputs(
        human=human,
        judge=judge,
        text_systems=pd.DataFrame([(f"t{t}:{k}", k) for t, k in text_systems], columns=["unit", "system"]),
        lay_judge=lay_judge,
        lay_humans=lay_humans,
    )
