"""A judge run's calibration against the radiologists (measures.stats.calibration), per answer field
and pooled: the judge's K samples per question give a vote-share confidence, the radiologists'
consensus on the same question (the median of their ratings, rounded to a level) says whether the
modal answer was right.

The judge is never shown a human answer: its prompts carry the source sentence and the texts only
(judging.prompts), and the human answers are read here, after the run, as the other side of the
comparison. A question counts once (a text several systems share was judged and rated once).

The database is read here, in the agreement's task or command (judging.services), never in a page.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from annotation import scales
from annotation.models import ExpertRating, ExpertSourceJudgement
from judging.agreement_inputs import _radiologists
from judging.agreement_terms import RUBRIC_FIELDS, SCALE
from judging.instrument_items import ITEM_TASK
from judging.models import JudgeAnswer, JudgeItem, JudgeRun
from measures.stats.calibration import CalibrationUnavailable, JudgedAnswer, calibration, consensus_of

METHODS = (
    "Judges never see human answers: a judge's prompt holds the original sentence and the text it "
    "rates, nothing else; the radiologists' answers are read only afterwards, as the consensus the "
    "judge's answers are scored against."
)
CATEGORIES = tuple(float(v) for v in range(SCALE[0], SCALE[1] + 1))
ALL_FIELDS = "all fields pooled"


def _human_values(run: JudgeRun) -> dict[tuple[str, int], dict[str, list[float]]]:
    """(target kind, id) → field → the radiologists' coded answers: text ids for the rubric,
    source ids for severity and the original's simplicity."""
    values: dict[tuple[str, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    radiologists = _radiologists(run.study)
    for text_id, *fields in ExpertRating.objects.filter(participant__in=radiologists).values_list(
        "shown_text_id", *RUBRIC_FIELDS
    ):
        for name, value in zip(RUBRIC_FIELDS, fields, strict=True):
            if value is not None:
                values[("text", text_id)][name].append(float(value))
    for source_id, severity, simplicity in ExpertSourceJudgement.objects.filter(
        participant__in=radiologists
    ).values_list("source_id", "severity", "simplicity"):
        if severity:
            values[("source", source_id)]["severity"].append(float(scales.SEVERITY.value_of(severity)))
        if simplicity is not None:
            values[("source", source_id)]["original_simplicity"].append(float(simplicity))
    return values


def calibration_answers(run: JudgeRun) -> dict[str, list[JudgedAnswer]]:
    """Per field, the run's questions that the radiologists answered too."""
    humans = _human_values(run)
    answers: dict[str, list[JudgedAnswer]] = defaultdict(list)
    rows = (
        JudgeAnswer.objects.filter(item__run=run, item__status=JudgeItem.Status.SUCCEEDED)
        .filter(item__task__in=["radiologist_text", "radiologist_source"])
        .exclude(item__task=ITEM_TASK)
        .values_list("item__task", "item__source_id", "item__shown_text_id", "spread")
    )
    for task, source_id, text_id, spread in rows:
        target = ("text", text_id) if task == "radiologist_text" else ("source", source_id)
        for name, human in humans.get(target, {}).items():
            samples = (spread or {}).get(name, {}).get("values")
            if not samples or not human:
                continue
            answers[name].append(
                JudgedAnswer(
                    source=source_id,
                    samples=tuple(float(v) for v in samples),
                    consensus=consensus_of(human, CATEGORIES),
                    categories=CATEGORIES,
                )
            )
    return answers


def run_calibration(*, run: JudgeRun, n_resamples: int, seed: int = 0) -> dict[str, Any]:
    """The calibration section of a run's agreement document: available or why not, one record
    per field and one pooled over the fields."""
    base: dict[str, Any] = {"methods": METHODS, "samples": run.samples, "per_field": []}
    if run.samples < 2:
        return {
            **base,
            "available": False,
            "reason": (
                f"This run asked each question once (k = {run.samples}): a single sample has a vote "
                "share of 1, so there is no confidence to calibrate. Launch a run with --samples 3 "
                "or more."
            ),
        }
    by_field = calibration_answers(run)
    per_field = []
    for name in (*RUBRIC_FIELDS, "severity", "original_simplicity"):
        if by_field.get(name):
            record = calibration(by_field[name], n_resamples=n_resamples, seed=seed)
            per_field.append({"field": name, **record})
    pooled = [answer for name in by_field for answer in by_field[name]]
    if not pooled:
        return {
            **base,
            "available": False,
            "reason": "No question the judge answered was rated by a radiologist.",
        }
    try:
        overall = {"field": ALL_FIELDS, **calibration(pooled, n_resamples=n_resamples, seed=seed)}
    except CalibrationUnavailable as exc:
        return {**base, "available": False, "reason": str(exc)}
    return {
        **base,
        "available": True,
        "reason": None,
        "against": "the radiologists' consensus (median rating, rounded to a level)",
        "per_field": [*per_field, overall],
    }


def calibration_summary(section: dict[str, Any]) -> dict[str, Any]:
    """The leaderboard's calibration columns: the pooled ECE and Brier score (None when the run
    cannot be calibrated)."""
    pooled = next((row for row in section.get("per_field", []) if row["field"] == ALL_FIELDS), None)
    return {
        "ece": pooled["ece"]["estimate"] if pooled else None,
        "brier": pooled["brier"]["estimate"] if pooled else None,
    }
