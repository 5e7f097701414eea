"""Which sources a radiologist rates and in what order: their pages, created on first visit (every
source, or the study's `expert_sources_per_participant` of them, in the participant's seeded order)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.models import ExpertItem, Participant, Source
from surveys.radiologist import services as expert_answers
from surveys.survey_page import seeded_shuffle


def expert_wanted_count(participant: Participant, n_sources: int) -> int:
    # 0 and empty both mean "every source": a study asking radiologists to rate nothing is a typo.
    subset = participant.study.expert_sources_per_participant
    return n_sources if not subset else min(subset, n_sources)


def _source_order(participant: Participant, sources: list[tuple[int, int]]) -> list[int]:
    """The participant's page order of the study's (source id, position)s: shuffled by the
    participant's own seed, so order effects (fatigue, anchoring) spread over sources when several
    radiologists rate."""
    ordered = [pk for pk, _ in sorted(sources, key=lambda source: source[1])]
    return seeded_shuffle(ordered, seed=participant.order_seed, purpose="expert-sources")


def expert_pages_prepare(*, participant: Participant) -> None:
    """Create the participant's pages on first visit (every source, or the first
    `Study.expert_sources_per_participant` of their seeded order). Idempotent; sources added to
    the study later are appended while the participant is short of their quota. A constant number
    of queries whatever the study's size, and no model instance per page: every invite link
    opened asks this, and a first visit writes thousands of pages."""
    if not participant.is_radiologist:
        raise ValidationError("Only radiologists have rating pages.")
    with transaction.atomic():
        # Serialises two first visits (two tabs, a double click) so positions never collide. The
        # participant's row only (`of`): read through its default ordering, which joins the study,
        # the study's row was locked too and every first visit of the study waited for the one before.
        Participant.objects.select_for_update(of=("self",)).filter(pk=participant.pk).exists()
        pages = list(ExpertItem.objects.filter(participant=participant).values_list("source_id", "position"))
        sources = list(
            Source.objects.filter(study_id=participant.study_id).order_by().values_list("pk", "position")
        )
        wanted = expert_wanted_count(participant, len(sources))
        if len(pages) >= wanted:
            return
        have = {source_id for source_id, _ in pages}
        missing = [pk for pk in _source_order(participant, sources) if pk not in have]
        expert_answers.expert_items_create(
            participant=participant,
            source_ids=missing[: wanted - len(pages)],
            first_position=max((position for _, position in pages), default=0) + 1,
        )


def expert_items_ensure(*, participant: Participant) -> list[ExpertItem]:
    """expert_pages_prepare, then the participant's pages in page order."""
    expert_pages_prepare(participant=participant)
    return list(ExpertItem.objects.filter(participant=participant).order_by("position"))
