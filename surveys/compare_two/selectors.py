"""Reads of the compare-two flow: the study's pairwise instrument, a participant's pages, and every
comparison of a study (asked, and derived from the lay most/least preferences) for the ranking."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import F, Q
from django.http import Http404
from django.utils.translation import gettext as _

from annotation.models import (
    ItemAnswer,
    PairwiseTask,
    Participant,
    Simplification,
    Study,
    StudyInstrument,
)

if TYPE_CHECKING:
    from measures.stats.pairwise import Comparison


def pairwise_instrument_current(*, study: Study) -> StudyInstrument | None:
    return StudyInstrument.objects.filter(
        study=study, flow=StudyInstrument.Flow.PAIRWISE, is_current=True
    ).first()


def pairwise_flow_for(*, participant: Participant) -> StudyInstrument | None:
    """The pairwise instrument this participant answers, when the study is a pairwise study for
    their role (the invite link then opens the compare-two flow)."""
    instrument = pairwise_instrument_current(study=participant.study)
    if instrument is None:
        return None
    roles = {role for item in instrument.definition.get("items", []) for role in item.get("roles", [])}
    return instrument if participant.role in roles else None


def _tasks(participant: Participant):
    return PairwiseTask.objects.filter(participant=participant).select_related(
        "instrument", "source", "left__shown_text", "right__shown_text"
    )


def access_pairwise_task(*, participant: Participant, task_id: int) -> PairwiseTask:
    task = _tasks(participant).filter(pk=task_id).first()
    if task is None:
        raise Http404(_("This comparison is not part of your survey."))
    task.participant = participant
    return task


def pairwise_pages(*, participant: Participant) -> list[tuple[PairwiseTask, dict | None]]:
    """The participant's pages in order, each with its saved answer's value (None if unanswered):
    two queries, whatever the number of pages."""
    tasks = list(_tasks(participant).order_by("position"))
    answers = {
        (a.shown_text_id, a.reference_text_id): a.value
        for a in ItemAnswer.objects.filter(
            participant=participant, instrument__flow=StudyInstrument.Flow.PAIRWISE
        ).only("shown_text_id", "reference_text_id", "value")
    }
    return [(task, answers.get((task.left.shown_text_id, task.right.shown_text_id))) for task in tasks]


def pairwise_comparisons(*, study: Study) -> list[Comparison]:
    """Every pairwise answer of the study as a Comparison (rater = the participant's pseudonym,
    source = the source's key, left/right = system keys, outcome = the choice, lengths in words),
    in one query: each answer joined to the page that showed it. Returned-or-withdrawn participants
    are left out. Ids and order come from what a study archive keeps (pseudonyms, keys, positions),
    so a moved study's analysis is the same to the last digit."""
    # numpy and scipy load in the worker that computes, never in a web worker (the survey's entry
    # view imports this module).
    from measures.stats.pairwise import Comparison

    rows = (
        PairwiseTask.objects.filter(
            participant__study=study, participant__returned_at__isnull=True, instrument__flow="pairwise"
        )
        # One filter() call: the three conditions hold on the same joined answer.
        .filter(
            participant__item_answers__instrument_id=F("instrument_id"),
            participant__item_answers__shown_text_id=F("left__shown_text_id"),
            participant__item_answers__reference_text_id=F("right__shown_text_id"),
        )
        .values_list(
            "participant__pseudonym",
            "source__key",
            "left__system__key",
            "right__system__key",
            "participant__item_answers__value",
            "left__shown_text__text",
            "right__shown_text__text",
        )
        .order_by("participant__pseudonym", "position")
    )
    return [
        Comparison(
            rater=rater,
            source=source,
            left=left,
            right=right,
            outcome=value["choice"],
            left_length=float(len(left_text.split())),
            right_length=float(len(right_text.split())),
        )
        for rater, source, left, right, value, left_text, right_text in rows
    ]


def derived_comparisons(*, study: Study) -> list[Comparison]:
    """The lay most/least preferences of the protocol's panel 3 as derived pairwise comparisons
    (measures.stats.pairwise.preferences_to_pairs: most beats every other text shown, every text
    shown beats least), marked derived. A text several systems share counts for each of them, in
    each pair that involves it; a text ticked both most and least counts as neither. Four queries,
    whatever the study's size."""
    from measures.stats.pairwise import Comparison, preferences_to_pairs
    from surveys.lay.choices import lay_choices

    choices = lay_choices(study=study, participants=Q(participant__returned_at__isnull=True))
    systems: dict[object, list[str]] = {}  # text id -> system keys
    texts_of: dict[int, list[int]] = {}  # source id -> its texts, for answers that stored no order
    for source_id, text_id, key in (
        Simplification.objects.filter(source__study=study)
        .order_by("source__position", "system__position", "system__key")
        .values_list("source_id", "shown_text_id", "system__key")
    ):
        systems.setdefault(text_id, []).append(key)
        texts_of.setdefault(source_id, []).append(text_id)
    out: list[Comparison] = []
    for _pk, rater, source, source_key, shown, ticked_most, ticked_least in choices:
        most, least = set(ticked_most), set(ticked_least)
        # A text ticked both most and least says nothing about it: it counts as neither.
        most, least = most - least, least - most
        own = list(dict.fromkeys(texts_of.get(source, [])))
        order = list(dict.fromkeys(shown or []))
        if not order or not set(order) <= set(own):
            # No stored order, or one naming texts this study does not hold (an archive keeps the
            # ids of the study it came from): the source's texts, as the panel shows all of them.
            order = own
        # A ticked text missing from the stored order (never expected) is still counted as shown.
        order += [t for t in own if t in most | least and t not in order]
        for pair in preferences_to_pairs(
            [t for t in order if t in most],
            [t for t in order if t in least],
            order,
            rater=rater,
            source=source_key,
        ):
            for winner in systems.get(pair.left, []):
                for loser in systems.get(pair.right, []):
                    if winner != loser:
                        out.append(Comparison(rater, source_key, winner, loser, "left", derived=True))
    # In an order of their own (not the database's ids), so that a moved study ranks the same.
    return sorted(out, key=lambda c: (str(c.rater), str(c.source), str(c.left), str(c.right)))
