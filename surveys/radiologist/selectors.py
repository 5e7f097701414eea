"""Where a radiologist stands: pages done of pages assigned, a page's place among them (its number
and neighbours), the list of all pages, where to resume, and a user's participations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Max, Min, Q

from annotation.models import ExpertItem, Participant, Source
from annotation.prepared_queries import PreparedAggregate, PreparedQuery
from surveys.radiologist.assignment import expert_wanted_count


@dataclass(frozen=True)
class Progress:
    done: int
    total: int

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 100


@dataclass(frozen=True)
class IndexEntry:
    item_id: int
    position: int
    number: int  # 1-based page number shown to the rater
    complete: bool


@dataclass(frozen=True)
class PagePlace:
    """Where a page stands in the participant's survey: its number, the survey's progress, and the
    pages before and after it (None at either end)."""

    number: int
    progress: Progress
    previous_id: int | None
    following_id: int | None


def _wanted_total(participant: Participant, assigned: int) -> int:
    # The planned number while no page has been created yet (the instructions page says it).
    if assigned:
        return assigned
    return expert_wanted_count(participant, Source.objects.filter(study_id=participant.study_id).count())


def expert_progress(*, participant: Participant) -> Progress:
    """Pages done / pages assigned (the planned number while no page has been created yet)."""
    counts = ExpertItem.objects.filter(participant=participant).aggregate(
        total=Count("pk"), done=Count("pk", filter=Q(completed_at__isnull=False))
    )
    return Progress(done=counts["done"], total=_wanted_total(participant, counts["total"]))


# Asked by every page view and submit: SQL compiled once per process (prepared_queries.py).
_place_counts = PreparedAggregate(
    lambda participant_id, position: (
        ExpertItem.objects.filter(participant_id=participant_id),
        "participant_id",
        {
            "total": Count("pk"),
            "done": Count("pk", filter=Q(completed_at__isnull=False)),
            "number": Count("pk", filter=Q(position__lte=position)),
            "previous": Max("position", filter=Q(position__lt=position)),
            "following": Min("position", filter=Q(position__gt=position)),
        },
    )
)
_neighbour_rows = PreparedQuery(
    lambda participant_id, positions: ExpertItem.objects.filter(
        participant_id=participant_id, position__in=positions
    ).values_list("position", "pk")
)


def expert_page_place(*, item: ExpertItem, neighbours: bool = True) -> PagePlace:
    """One aggregate over the participant's pages (plus one lookup for the neighbours' ids), however
    many pages there are and however far the participant got."""
    counts = _place_counts.values(participant_id=item.participant_id, position=item.position)
    ids: dict[int, int] = {}
    wanted = tuple(counts[key] for key in ("previous", "following") if counts[key] is not None)
    if neighbours and wanted:
        ids = dict(_neighbour_rows.rows(participant_id=item.participant_id, positions=wanted))
    return PagePlace(
        number=counts["number"],
        progress=Progress(done=counts["done"], total=counts["total"]),
        previous_id=ids.get(counts["previous"]),
        following_id=ids.get(counts["following"]),
    )


INDEX_PAGE_SIZE = 200


def expert_index(*, participant: Participant, start: int = 0, count: int | None = None) -> list[IndexEntry]:
    """The participant's pages in order, `count` of them from the `start`-th (all by default)."""
    end = None if count is None else start + count
    pages = ExpertItem.objects.filter(participant=participant).order_by("position")
    rows = pages.values_list("pk", "position", "completed_at")[start:end]
    return [
        IndexEntry(item_id=pk, position=position, number=start + n, complete=completed_at is not None)
        for n, (pk, position, completed_at) in enumerate(rows, 1)
    ]


def expert_resume_item(*, participant: Participant) -> ExpertItem | None:
    """Where a returning radiologist continues: their first incomplete page (None when all are done)."""
    return (
        ExpertItem.objects.filter(participant=participant, completed_at__isnull=True)
        .select_related("source")
        .order_by("position")
        .first()
    )


def expert_participations(*, user: Any) -> list[tuple[Participant, Progress]]:
    """The radiologist participations of a logged-in user, with their progress (for the study list)."""
    if not getattr(user, "is_authenticated", False):
        return []
    participants = (
        Participant.objects.filter(user=user, role=Participant.Role.RADIOLOGIST)
        .select_related("study")
        .order_by("-study__created_at", "pk")
    )
    return [(p, expert_progress(participant=p)) for p in participants]
