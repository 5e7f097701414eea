"""Is each radiologist paying attention? Their scores on the study's planted controls
(annotation.models.PlantedControl: degraded copies of real simplifications mixed into their pages)
against their scores on the real simplifications the controls were degraded from, decided by
measures/stats/rater_reliability.py (one-sided Mann–Whitney, Appraise/WMT's rule).

A row's score is the mean of the rater's answers to the aspects a planted error breaks
(`RELIABILITY_ASPECTS`): factual correctness (a flipped negation, a swapped side, a changed size,
a false reassurance), completeness (a dropped finding) and hallucination (a sentence the original
does not hold). Structure and simplicity are left out: a planted error changes neither, so a
careful rater has no reason to score them lower. A pair enters once both of its rows have a score.

With an error-span item on the radiologist instrument, a planted error is also "found" when one of
the rater's spans on the control touches the planted change (`planted_span_found`); the share is
over the controls the rater scored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import Q

from annotation.answer_selectors import control_answers, expert_ratings
from annotation.instrument_selectors import EXPERT, study_instrument_current
from annotation.models import Participant, PlantedControl, Study
from annotation.selectors import counted_participants, participant_label
from instruments.schema import ItemKind
from measures.stats.rater_reliability import (
    DEFAULT_ALPHA,
    DEFAULT_MIN_PLANTED,
    ControlScore,
    planted_span_found,
    rater_reliability,
)

RELIABILITY_ASPECTS = ("correctness", "completeness", "hallucination")


def row_score(scores: Mapping[str, Any]) -> float | None:
    """The mean of a row's answers to RELIABILITY_ASPECTS (None until one is answered)."""
    values = [float(scores[a]) for a in RELIABILITY_ASPECTS if scores.get(a) is not None]
    return sum(values) / len(values) if values else None


def marked_spans(stored: Any) -> list[tuple[int, int]]:
    """The (start, end) of each span in a stored error-span answer. Every partial answer reads as
    what it says: no answer (None, or a null some earlier version stored) and [] are no span; an
    entry without whole start and end offsets is skipped rather than failing the page."""
    if not isinstance(stored, list):
        return []
    return [
        (span["start"], span["end"])
        for span in stored
        if isinstance(span, Mapping)
        and all(isinstance(span.get(k), int) and not isinstance(span.get(k), bool) for k in ("start", "end"))
    ]


def reliability_rows(
    pairs: Iterable[tuple[Any, Any, float, float]],
    spans: Mapping[tuple[Any, Any], bool | None] | None = None,
    *,
    alpha: float = DEFAULT_ALPHA,
    min_planted: int = DEFAULT_MIN_PLANTED,
) -> dict[Any, dict[str, Any]]:
    """Per rater, from (rater, control, real score, planted score) pairs: rater_reliability's record
    plus `span_found` (the share of the rater's scored controls whose planted span they marked; None
    without span answers). `spans[(rater, control)]` is whether the span was found (None: no span
    item). Pure."""
    scores: list[ControlScore] = []
    for rater, control, real, planted in pairs:
        scores.append(ControlScore(rater=rater, pair=control, planted=False, score=real))
        scores.append(ControlScore(rater=rater, pair=control, planted=True, score=planted))
    out = rater_reliability(scores, alpha=alpha, min_planted=min_planted)
    found: dict[Any, list[bool]] = {}
    for (rater, _), hit in (spans or {}).items():
        if hit is not None:
            found.setdefault(rater, []).append(hit)
    for rater, record in out.items():
        hits = found.get(rater)
        record["span_found"] = sum(hits) / len(hits) if hits else None
    return out


def _span_keys(study: Study) -> list[str]:
    current = study_instrument_current(study=study, flow=EXPERT)
    return [item.key for item in current.instrument.items if item.kind is ItemKind.ERROR_SPANS]


def study_rater_reliability(
    *, study: Study, alpha: float = DEFAULT_ALPHA, min_planted: int = DEFAULT_MIN_PLANTED
) -> list[dict[str, Any]]:
    """One record per counted radiologist who answered a control: their label, rater_reliability's
    figures, `span_found`, and `status` ("unreliable", "reliable" or "undecided" below
    `min_planted` scored controls). Empty for a study without controls. Three queries."""
    controls = {c.pk: c for c in PlantedControl.objects.filter(study=study)}
    if not controls:
        return []
    answers = [
        (a.participant_id, a.control_id, a.scores, a.added)
        for a in control_answers(study=study, where=counted_participants(path="participant__"))
    ]
    degraded = {c.degrades_id for c in controls.values()}
    real: dict[tuple[int, int], float | None] = {
        (r.participant_id, r.shown_text_id): row_score({a: getattr(r, a) for a in RELIABILITY_ASPECTS})
        for r in expert_ratings(study=study, where=Q(shown_text_id__in=degraded))
    }
    span_keys = _span_keys(study)
    pairs, spans = [], {}
    for participant_id, control_id, scores, added in answers:
        control = controls[control_id]
        planted = row_score(scores or {})
        if planted is None:
            continue
        if span_keys:
            marked = [span for key in span_keys for span in marked_spans((added or {}).get(key))]
            spans[(participant_id, control_id)] = planted_span_found((control.start, control.end), marked)
        original = real.get((participant_id, control.degrades_id))
        if original is not None:
            pairs.append((participant_id, control_id, original, planted))
    records = reliability_rows(pairs, spans, alpha=alpha, min_planted=min_planted)
    labels = dict(Participant.objects.filter(pk__in=list(records)).values_list("pk", "pseudonym").order_by())
    rows = []
    for participant_id, record in records.items():
        flag = record["unreliable"]
        status = "undecided" if flag is None else "unreliable" if flag else "reliable"
        rows.append(
            {
                "participant": participant_label(labels[participant_id], participant_id),
                "status": status,
                **record,
            }
        )
    return sorted(rows, key=lambda row: row["participant"])
