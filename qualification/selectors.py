"""Reading the qualification round: a flow's practice items for a rater group (from the flow's
current instrument), its rule, a participant's attempts, and every participant's results (the
progress page, the command and the API read the same rows)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from annotation.instrument_selectors import CurrentInstrument, study_instrument_current
from annotation.models import Participant, Study
from annotation.selectors import counted_participants, participant_label
from instruments.schema import Item, PracticeItem
from qualification.models import QualificationAttempt, QualificationRule
from surveys.rate_each_pair.selectors import pairs_instruments

# The flows whose real pages send a participant due to practise to the round first, with the URL
# name of the flow's landing page (where a participant goes once done).
FLOW_ENTRY = {
    "expert": "surveys:expert-start",
    "lay": "surveys:lay-start",
    "pairs": "surveys:pairs-start",
    "pairwise": "surveys:pairwise-start",
}
PAIRS = "pairs"


def participant_group(participant: Participant) -> str:
    """The rater group a participant practises as: their group, or their role."""
    return participant.rater_group or participant.role


def flow_instrument(*, study: Study, flow: str) -> CurrentInstrument | None:
    """The instrument `flow` asks in `study` (None: a flow with no preset that the study does not ask)."""
    try:
        return study_instrument_current(study=study, flow=flow)
    except KeyError:
        return None


def flow_instruments(*, study: Study, flow: str) -> list[CurrentInstrument]:
    """Every instrument `flow` asks in `study`: the rate-each-pair flow may ask several (in key order, as its
    pages do); every other flow asks one."""
    if flow == PAIRS:
        return [
            CurrentInstrument(row_id=asked.row.pk, instrument=asked.instrument)
            for asked in pairs_instruments(study=study)
        ]
    current = flow_instrument(study=study, flow=flow)
    return [current] if current is not None else []


@dataclass(frozen=True)
class PracticeRound:
    current: CurrentInstrument | None
    entries: tuple[tuple[PracticeItem, Item], ...]

    def __len__(self) -> int:
        return len(self.entries)

    def entry(self, key: str) -> tuple[PracticeItem, Item] | None:
        return next((pair for pair in self.entries if pair[0].key == key), None)


def _group_entries(current: CurrentInstrument, group: str) -> tuple[tuple[PracticeItem, Item], ...]:
    instrument = current.instrument
    return tuple(
        (entry, instrument.item(entry.item))
        for entry in instrument.practice
        if group in instrument.item(entry.item).roles
    )


def practice_round(*, study: Study, flow: str, group: str) -> PracticeRound:
    """The practice items `group` answers in `flow`: those of the flow's current instrument whose
    item the group is asked (its `roles`). In the rate-each-pair flow, which may ask several instruments,
    those of the first one (in key order) that has practice items for the group. No query while the
    study's instruments are cached (the rate-each-pair flow reads its instrument rows: one query)."""
    found = flow_instruments(study=study, flow=flow)
    for current in found:
        if entries := _group_entries(current, group):
            return PracticeRound(current=current, entries=entries)
    return PracticeRound(current=found[0] if found else None, entries=())


def rule_of(*, study: Study, flow: str, group: str) -> QualificationRule | None:
    return QualificationRule.objects.filter(study=study, flow=flow, rater_group=group).first()


def study_rules(*, study: Study) -> list[QualificationRule]:
    return list(QualificationRule.objects.filter(study=study))


def open_attempt(*, participant: Participant, flow: str) -> QualificationAttempt | None:
    return (
        QualificationAttempt.objects.filter(participant=participant, flow=flow, finished_at__isnull=True)
        .prefetch_related("answers")
        .first()
    )


def attempts_of(*, participant: Participant, flow: str) -> list[QualificationAttempt]:
    return list(
        QualificationAttempt.objects.filter(participant=participant, flow=flow)
        .prefetch_related("answers")
        .order_by("number")
    )


@dataclass(frozen=True)
class QualificationResult:
    """One participant's round in one flow: their state, every attempt's score and time."""

    participant_id: int
    pseudonym: str
    role: str
    group: str
    flow: str
    state: str
    attempts: int
    last_correct: int | None
    last_total: int | None
    last_needed: int | None
    last_seconds: float | None
    passed_at: datetime | None
    scores: tuple[
        tuple[int, int, int, float | None, bool | None], ...
    ]  # number, correct, total, seconds, passed


def qualification_results(*, study: Study) -> list[QualificationResult]:
    """Every counted participant who entered a round, with how they did: two queries."""
    attempts = (
        QualificationAttempt.objects.filter(participant__study=study)
        .filter(counted_participants(path="participant__"))
        .select_related("participant")
        .order_by("participant_id", "flow", "number")
    )
    grouped: dict[tuple[int, str], list[QualificationAttempt]] = {}
    for attempt in attempts:
        grouped.setdefault((attempt.participant_id, attempt.flow), []).append(attempt)
    results = []
    for (_, flow), rows in grouped.items():
        participant = rows[0].participant
        last = rows[-1]
        passed = next((row for row in rows if row.passed), None)
        results.append(
            QualificationResult(
                participant_id=participant.pk,
                pseudonym=participant_label(participant.pseudonym, participant.pk),
                role=participant.role,
                group=rows[0].rater_group,
                flow=flow,
                state=participant.qualification,
                attempts=len(rows),
                last_correct=last.correct if last.finished_at else None,
                last_total=last.total,
                last_needed=last.needed,
                last_seconds=last.seconds,
                passed_at=passed.finished_at if passed else None,
                scores=tuple((row.number, row.correct, row.total, row.seconds, row.passed) for row in rows),
            )
        )
    return results


@dataclass(frozen=True)
class RoundSetting:
    """One flow and rater group on the console's page: its practice items and its rule (None: no
    round asked)."""

    flow: str
    group: str
    items: int
    rule: QualificationRule | None

    @property
    def value(self) -> str:
        return f"{self.flow}:{self.group}"


def round_settings(*, study: Study) -> list[RoundSetting]:
    """Every flow and group a round can be asked of: the groups that the flow's items with practice
    items ask, and those with a rule already."""
    rules = {(rule.flow, rule.rater_group): rule for rule in study_rules(study=study)}
    settings = []
    for flow in FLOW_ENTRY:
        instruments = [current.instrument for current in flow_instruments(study=study, flow=flow)]
        if not instruments:
            continue
        groups = {
            role
            for instrument in instruments
            for entry in instrument.practice
            for role in instrument.item(entry.item).roles
        }
        groups |= {group for rule_flow, group in rules if rule_flow == flow}
        for group in sorted(groups):
            settings.append(
                RoundSetting(
                    flow=flow,
                    group=group,
                    items=len(practice_round(study=study, flow=flow, group=group)),
                    rule=rules.get((flow, group)),
                )
            )
    return settings
