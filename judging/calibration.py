"""A judge run's calibration against the humans (measures.stats.calibration), per answer field and
pooled: the protocol's rubric and source questions against the radiologists' consensus (the median
of their ratings, rounded to a level), and each ordinal or single-choice item of an instrument the
run asked against the humans who answered it. The judge's K samples per question give a vote-share
confidence; the consensus says whether the modal answer was right.

The judge is never shown a human answer: its prompts carry the source sentence and the texts only
(judging.prompts), and the human answers are read here, after the run, as the other side of the
comparison. A question counts once (a text several systems share was judged and rated once).

The database is read here, in the agreement's task or command (judging.services), never in a page.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from django.db.models import Q

from annotation import scales
from annotation.answer_selectors import expert_judgements, expert_ratings, protocol_answers
from judging.agreement_inputs import _radiologists
from judging.agreement_terms import FIELDS, RUBRIC_FIELDS, SCALE
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
    radiologists = Q(participant_id__in=list(_radiologists(run.study).values_list("pk", flat=True)))
    for rating in expert_ratings(study=run.study, where=radiologists):
        for name in RUBRIC_FIELDS:
            value = getattr(rating, name)
            if value is not None:
                values[("text", rating.shown_text_id)][name].append(float(value))
    for judgement in expert_judgements(study=run.study, where=radiologists):
        source_id, severity, simplicity = judgement.source_id, judgement.severity, judgement.simplicity
        code = scales.SEVERITY.value_of(severity) if severity else None
        if code is not None:
            values[("source", source_id)]["severity"].append(float(code))
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


def instrument_item_answers(run: JudgeRun) -> dict[str, list[JudgedAnswer]]:
    """Per instrument item ("<instrument> · <item>") the run answered, its ordinal and single-choice
    questions that humans answered too: the K sampled values against the humans' consensus (ordinal:
    their median code, rounded to a point of the scale; a choice: their most frequent option, the
    first of equals). A sample "not applicable" leaves its question out."""
    from annotation.models import ItemAnswer
    from instruments.schema import ItemKind
    from instruments.validation import instrument_from_data

    answers = list(
        JudgeAnswer.objects.filter(
            item__run=run, item__task=ITEM_TASK, item__status=JudgeItem.Status.SUCCEEDED
        ).values_list(
            "item__instrument__key",
            "item__instrument__definition",
            "item__source_id",
            "item__shown_text_id",
            "item__reference_text_id",
            "samples",
        )
    )
    if not answers:
        return {}
    keys = {row[0] for row in answers}
    humans: dict[tuple[Any, ...], list[tuple[Any, Any]]] = defaultdict(list)
    for key, item_key, source, text, reference, value, score in (
        ItemAnswer.objects.filter(
            participant__study=run.study,
            participant__returned_at__isnull=True,
            instrument__key__in=keys,
            control__isnull=True,
        )
        .exclude(protocol_answers())
        .values_list(
            "instrument__key", "item_key", "source_id", "shown_text_id", "reference_text_id", "value", "score"
        )
    ):
        humans[(key, item_key, source, text, reference)].append((value, score))
    parsed: dict[str, Any] = {}
    out: dict[str, list[JudgedAnswer]] = defaultdict(list)
    for key, definition, source, text, reference, samples in answers:
        instrument = parsed.setdefault(key, instrument_from_data(definition))
        for item in instrument.items:
            theirs = humans.get((key, item.key, source, text, reference))
            if not theirs or not samples:
                continue
            values = [sample.get(item.key) for sample in samples]
            if item.kind is ItemKind.ORDINAL and item.scale is not None:
                codes = tuple(float(c) for c in item.scale.codes)
                coded = [float(v) for v in values if isinstance(v, int | float) and float(v) in codes]
                scores = [float(score) for _, score in theirs if score is not None]
                if len(coded) != len(values) or not scores:
                    continue
                consensus: Any = consensus_of(scores, codes)
                categories: tuple[Any, ...] = codes
                samples_of: tuple[Any, ...] = tuple(coded)
            elif item.kind is ItemKind.SINGLE_CHOICE:
                categories = tuple(option.key for option in item.options)
                chosen = [value for value, _ in theirs if value in categories]
                if not chosen or any(v not in categories for v in values):
                    continue
                counts = Counter(chosen)
                best = max(counts.values())
                consensus = next(v for v in chosen if counts[v] == best)
                samples_of = tuple(values)
            else:
                continue
            out[f"{key} · {item.key}"].append(
                JudgedAnswer(source=source, samples=samples_of, consensus=consensus, categories=categories)
            )
    return out


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
    by_field = {**calibration_answers(run), **instrument_item_answers(run)}
    per_field = []
    for name in (*RUBRIC_FIELDS, "severity", "original_simplicity", *sorted(set(by_field) - set(FIELDS))):
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
