"""A study's progress as its researchers watch it: one status per participant, one Latin-square
balance of the lay survey, what the expert safety gate withholds, and attention checks. The
dashboard header, its Progress section, the study list, the progress page, the API and the report
all read these, so they never disagree.

Participant status, one vocabulary for both roles (first that applies):

- completed  finished the survey (`completed_at`);
- returned   returned or withdrawn on the recruiter (`returned_at`), not completed;
- screened out  a layperson whose survey was ended by failed attention checks
             (`screened_out_at`, Study.screen_out_after_failed_checks); not analysed;
- declined   declined consent;
- abandoned  a layperson who started the survey and was idle for the study's
             `abandon_after_minutes` (their Latin-square row is handed out again);
- in progress started: a layperson with survey items, a radiologist who opened the survey;
- consented  consented but not started yet;
- invited    has a link, nothing recorded yet.

Latin-square balance, per (source, system) of the lay design (sources and systems with a
simplification; seed 003 section 5.4, DESIGN.md "Latin square"):

- assigned  lay items whose panel 2 the square gave to this system;
- answered  of those, panel 2 answered (the participant moved on);
- pending   assigned to participants in progress who have not answered panel 2 yet;
- shared    panel-2 answers on this system's text assigned through another system (identical
            texts count for every system that produced them);
- credited  items that showed this system's text, through its own or a shared assignment.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.db.models import Count, Q
from django.utils import timezone

from annotation.answer_selectors import lay_answered_sources
from annotation.models import (
    AttentionCheck,
    AttentionCheckResponse,
    ExpertItem,
    LayItem,
    Participant,
    Simplification,
    Source,
    Study,
    System,
)
from annotation.selectors import counted_participants, participant_label
from evaluation.exports.study_answers import PROTOCOL_FLOWS, participant_units, study_flows
from surveys.lay.errors import StudyNotReady
from surveys.lay.selectors import (
    ASSISTED,
    DONE,
    PREFERENCE,
    SafetyFlag,
    lay_design,
    lay_safety_flags,
    lay_withheld_text_ids,
    participant_is_abandoned,
)

if TYPE_CHECKING:
    import pandas as pd

COMPLETED, RETURNED, DECLINED, SCREENED_OUT = "completed", "returned", "declined", "screened out"
ABANDONED, IN_PROGRESS, CONSENTED, INVITED = "abandoned", "in progress", "consented", "invited"
STATUSES = (INVITED, CONSENTED, IN_PROGRESS, ABANDONED, COMPLETED, DECLINED, RETURNED, SCREENED_OUT)


def participant_status(*, participant: Participant, started: bool, now: datetime | None = None) -> str:
    """The participant's status (module docstring); `started`: has lay items / opened the
    radiologist survey."""
    if participant.completed_at is not None:
        return COMPLETED
    if participant.returned_at is not None:
        return RETURNED
    if participant.screened_out_at is not None:
        return SCREENED_OUT
    if participant.declined_at is not None:
        return DECLINED
    if started:
        lay = participant.role == Participant.Role.LAYPERSON
        return (
            ABANDONED if lay and participant_is_abandoned(participant=participant, now=now) else IN_PROGRESS
        )
    return CONSENTED if participant.consented_at is not None else INVITED


# --- Participants --------------------------------------------------------------------------------------


def participants_progress(*, study: Study, now: datetime | None = None) -> list[dict[str, Any]]:
    """Per participant: pseudonym, role, units done / total, status, Latin-square row. A
    radiologist's unit is a source page (ExpertItem), a layperson's a sentence (LayItem) that
    reached its last stage."""
    now = now or timezone.now()
    participants = (
        Participant.objects.filter(counted_participants(), study=study)
        .select_related("study")
        .annotate(
            lay_total=Count("lay_items", distinct=True),
            lay_done=Count("lay_items", filter=Q(lay_items__stage=DONE), distinct=True),
        )
        .order_by("role", "pseudonym", "pk")
    )
    expert = {
        row["participant_id"]: row
        for row in ExpertItem.objects.filter(
            counted_participants(path="participant__"), participant__study=study
        )
        .values("participant_id")
        .annotate(total=Count("pk"), done=Count("pk", filter=Q(completed_at__isnull=False)))
    }
    # Participants of the rate-each-pair and compare-two flows count their own units
    # (evaluation/exports/study_answers.py).
    flows = study_flows(study=study)
    other = participant_units(study=study, flows=flows) if flows.other_flows else {}
    records = []
    for p in participants:
        unit = other.get(p.pk)
        if unit is not None and unit.flow not in PROTOCOL_FLOWS:
            total, done = unit.total, unit.done
            started = p.started_at is not None or done > 0
        elif p.role == Participant.Role.RADIOLOGIST:
            counts = expert.get(p.pk, {"total": 0, "done": 0})
            total, done = counts["total"], counts["done"]
            if total and p.completed_at is not None and done == 0:
                done = total  # imported data marks only the participant complete
            started = p.started_at is not None or total > 0
        else:
            total, done = p.lay_total, p.lay_done
            started = total > 0
        records.append(
            {
                "participant": participant_label(p.pseudonym, p.pk),
                "role": p.role,
                "done": done,
                "total": total,
                "status": participant_status(participant=p, started=started, now=now),
                "latin_square_row": p.latin_square_row,
                "language": p.language,
                "started_at": p.started_at,
                "completed_at": p.completed_at,
            }
        )
    return records


def progress_by_role(*, study: Study, records: list[dict[str, Any]] | None = None) -> dict[str, dict]:
    """Per role: participants (everyone with a link, whatever their status), completed, units
    done / total, and the count of each status."""
    summary: dict[str, dict] = {
        role: {
            "participants": 0,
            "completed": 0,
            "done": 0,
            "total": 0,
            "statuses": dict.fromkeys(STATUSES, 0),
        }
        for role in Participant.Role.values
    }
    for record in participants_progress(study=study) if records is None else records:
        row = summary[record["role"]]
        row["participants"] += 1
        row["completed"] += record["status"] == COMPLETED
        row["done"] += record["done"]
        row["total"] += record["total"]
        row["statuses"][record["status"]] += 1
    return summary


# --- Latin-square balance ----------------------------------------------------------------------------


@dataclass
class BalanceCell:
    assigned: int = 0
    answered: int = 0
    pending: int = 0
    shared: int = 0
    credited: int = 0


@dataclass
class LatinSquareBalance:
    sources: list[Source]
    systems: list[System]
    cells: dict[tuple[int, int], BalanceCell]  # (source id, system id)
    period: int | None
    rows: list[dict[str, int]] = field(default_factory=list)  # per Latin-square row: holders by status

    @property
    def spread(self) -> int:
        """max − min of `answered` over the design's pairs: 0 or 1 when the survey is balanced."""
        answered = [cell.answered for cell in self.cells.values()]
        return max(answered) - min(answered) if answered else 0

    def table(self) -> list[dict[str, Any]]:
        return [
            {"source": so, "cells": [self.cells[(so.pk, sy.pk)] for sy in self.systems]}
            for so in self.sources
        ]

    def frame(self) -> pd.DataFrame:
        """One row per (source key, system key) with the counts of the module docstring."""
        import pandas as pd  # only for analyses in a notebook or a test: the pages never load it

        columns = ["assigned", "answered", "pending", "shared", "credited"]
        return pd.DataFrame(
            [
                {
                    "source": so.key,
                    "system": sy.key,
                    **{c: getattr(self.cells[(so.pk, sy.pk)], c) for c in columns},
                }
                for so in self.sources
                for sy in self.systems
            ],
            columns=["source", "system", *columns],
        ).astype(dict.fromkeys(columns, "int64"))

    def by_system(self) -> list[dict[str, Any]]:
        """Per system: totals and the per-source range of assigned and credited items."""
        rows = []
        for system in self.systems:
            cells = [self.cells[(source.pk, system.pk)] for source in self.sources]
            assigned = [c.assigned for c in cells] or [0]
            credited = [c.credited for c in cells] or [0]
            rows.append(
                {
                    "system": system.key,
                    "assigned_total": sum(assigned),
                    "answered_total": sum(c.answered for c in cells),
                    "credited_total": sum(credited),
                    "assigned_min": min(assigned),
                    "assigned_max": max(assigned),
                    "credited_min": min(credited),
                    "credited_max": max(credited),
                }
            )
        return rows


def latin_square_balance(
    *, study: Study, statuses: dict[int, str] | None = None, now: datetime | None = None
) -> LatinSquareBalance:
    """The lay survey's balance (module docstring). `statuses` (participant id → status) saves
    recomputing them when the caller has them."""
    try:
        design = lay_design(study=study)
    except StudyNotReady:
        return LatinSquareBalance(sources=[], systems=[], cells={}, period=None)
    sources = list(Source.objects.filter(pk__in=design.source_ids).order_by("position"))
    systems = list(System.objects.filter(pk__in=design.system_ids).order_by("position", "key"))
    cells = {(so.pk, sy.pk): BalanceCell() for so in sources for sy in systems}
    if statuses is None:
        statuses = _lay_statuses(study, now)
    systems_of_text: dict[int, list[int]] = defaultdict(list)
    for text_id, system_id in Simplification.objects.filter(source__study=study).values_list(
        "shown_text_id", "system_id"
    ):
        systems_of_text[text_id].append(system_id)
    # Panel 2 answered (its Q4 given) and moved on from.
    helped = lay_answered_sources(study=study, item_key="helpfulness", phase=ASSISTED)
    for _item_id, participant_id, source_id, system_id, text_id, stage in LayItem.objects.filter(
        counted_participants(path="participant__"), participant__study=study
    ).values_list("pk", "participant_id", "source_id", "assigned_system_id", "shown_text_id", "stage"):
        for other in systems_of_text.get(text_id, ()):
            if (source_id, other) in cells:
                cells[(source_id, other)].credited += 1
        if (source_id, system_id) not in cells:
            continue
        cell = cells[(source_id, system_id)]
        cell.assigned += 1
        if (participant_id, source_id) in helped and stage in (PREFERENCE, DONE):
            cell.answered += 1
            for other in systems_of_text.get(text_id, ()):
                if other != system_id and (source_id, other) in cells:
                    cells[(source_id, other)].shared += 1
        elif statuses.get(participant_id) == IN_PROGRESS:
            cell.pending += 1
    rows: dict[int, Counter] = defaultdict(Counter)
    for row, participant_id in Participant.objects.filter(
        counted_participants(), study=study, role=Participant.Role.LAYPERSON, latin_square_row__isnull=False
    ).values_list("latin_square_row", "pk"):
        rows[row][statuses.get(participant_id, IN_PROGRESS)] += 1
    return LatinSquareBalance(
        sources=sources,
        systems=systems,
        cells=cells,
        period=design.square.period,
        rows=[{"row": r, **{k.replace(" ", "_"): n for k, n in rows[r].items()}} for r in sorted(rows)],
    )


def _lay_statuses(study: Study, now: datetime | None) -> dict[int, str]:
    participants = (
        Participant.objects.filter(counted_participants(), study=study, role=Participant.Role.LAYPERSON)
        .select_related("study")
        .annotate(n_items=Count("lay_items"))
    )
    return {p.pk: participant_status(participant=p, started=p.n_items > 0, now=now) for p in participants}


# --- The progress page ---------------------------------------------------------------------------------


@dataclass
class AttentionCheckRow:
    check: AttentionCheck
    answered: int
    failed: int


@dataclass
class AttentionFailure:
    participant: str  # the pseudonym: recruiter IDs stay in the exports that ask for them
    prompt: str
    answer: str


@dataclass
class StudyProgress:
    study: Study
    participants: list[dict[str, Any]]
    by_role: dict[str, dict]
    balance: LatinSquareBalance
    refusals: int
    flags: list[SafetyFlag]
    withheld: set[int]
    checks: list[AttentionCheckRow]
    failures: list[AttentionFailure]


def study_progress(*, study: Study, now: datetime | None = None) -> StudyProgress:
    """Everything the researcher's progress page shows."""
    now = now or timezone.now()
    participants = participants_progress(study=study, now=now)
    lay_statuses = _lay_statuses(study, now)
    counted = counted_participants(path="responses__participant__")
    checks = [
        AttentionCheckRow(check=check, answered=check.n_answered, failed=check.n_failed)
        for check in AttentionCheck.objects.filter(study=study)
        .annotate(
            n_answered=Count("responses", filter=counted),
            n_failed=Count("responses", filter=counted & Q(responses__passed=False)),
        )
        .order_by("position")
    ]
    failures = [
        AttentionFailure(
            participant=participant_label(r.participant.pseudonym, r.participant_id),
            prompt=r.check_item.prompt,
            answer=r.answer,
        )
        for r in AttentionCheckResponse.objects.filter(
            counted_participants(path="participant__"), check_item__study=study, passed=False
        )
        .select_related("participant", "check_item")
        .order_by("participant__pseudonym", "participant_id", "check_item__position")
    ]
    return StudyProgress(
        study=study,
        participants=participants,
        by_role=progress_by_role(study=study, records=participants),
        balance=latin_square_balance(study=study, statuses=lay_statuses, now=now),
        refusals=study.consent_refusals.count(),
        flags=lay_safety_flags(study=study),
        withheld=lay_withheld_text_ids(study=study),
        checks=checks,
        failures=failures,
    )
