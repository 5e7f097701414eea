"""A pairwise judge's position bias and its ranking from both orders (measures.stats.position_bias,
measures.stats.pairwise): read from a run's answers to every pairwise (preference) item of any flow,
each comparison asked as (A, B) and (B, A): the compare-two flow's pairs of texts
(judging.services.pairwise_orders), and another flow's (text, reference) pairs, asked once more
with the reference first (judging.pair_orders).

The ranking counts every answer of both orders, so a judge that favours the first text gives each
system as many first places as second ones and its bias cancels out of the strengths. A text
several systems share counts for each of them (the protocol's rule); a reference text counts for
its reference system.

The protocol's radiologist rubric judge sees one text per prompt (judging.instrument): it has no
text order to counterbalance; only a prompt with two texts (a pairwise item) does.

Read in the agreement's task or command (judging.services), never in a page.
"""

from __future__ import annotations

from typing import Any

from annotation.models import Simplification, StudyInstrument
from instruments.schema import ItemKind
from instruments.validation import instrument_from_data
from judging.instrument_items import ITEM_TASK
from judging.models import JudgeAnswer, JudgeItem, JudgeRun
from judging.pair_orders import ordered_choice


def run_position_bias(*, run: JudgeRun, confidence: float = 0.95, seed: int = 0) -> list[dict[str, Any]]:
    """Per pairwise item the run answered: the position-bias figures and the ranking from both
    orders (None when fewer than two systems were compared)."""
    from measures.stats.pairwise import Comparison, pairwise_ranking
    from measures.stats.position_bias import OrderedJudgement, position_bias

    instruments = StudyInstrument.objects.filter(
        pk__in=JudgeItem.objects.filter(run=run, task=ITEM_TASK, reference_text__isnull=False).values(
            "instrument_id"
        ),
    ).order_by("flow", "key", "version")
    systems: dict[Any, list[str]] = {}
    for text_id, key in Simplification.objects.filter(source__study=run.study).values_list(
        "shown_text_id", "system__key"
    ):
        systems.setdefault(text_id, []).append(key)
    records = []
    for instrument in instruments:
        items = [i for i in instrument_from_data(instrument.definition).items if i.kind is ItemKind.PAIRWISE]
        if not items:
            continue
        answers = list(
            JudgeAnswer.objects.filter(
                item__run=run, item__instrument=instrument, item__status=JudgeItem.Status.SUCCEEDED
            ).values_list(
                "item__source__key", "item__shown_text_id", "item__reference_text_id", "item_values"
            )
        )
        for item in items:
            judgements = [
                OrderedJudgement(source, first, second, choice)
                for source, first, second, values in answers
                if first is not None
                and second is not None
                and first != second
                and (choice := ordered_choice(values.get(item.key))) is not None
            ]
            if not judgements:
                continue
            comparisons = [
                Comparison(run.label, j.source, left, right, j.choice)
                for j in judgements
                for left in systems.get(j.first, [])
                for right in systems.get(j.second, [])
                if left != right
            ]
            ranking = (
                pairwise_ranking(comparisons, confidence=confidence, seed=seed)
                if len({c.left for c in comparisons} | {c.right for c in comparisons}) > 1
                else None
            )
            records.append(
                {
                    "instrument": instrument.key,
                    "flow": instrument.flow,
                    "item": item.key,
                    **position_bias(judgements, confidence=confidence),
                    "ranking": ranking,
                }
            )
    return records
