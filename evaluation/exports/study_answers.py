"""The one place that reads a study's answers of every flow, whichever table holds them today.

Every answer is one ItemAnswer row (annotation/answer_store.py); the protocol's items are read in
their typed shapes through annotation/answer_selectors.py (a radiologist's rating of a text, a
judgement of a source, a lay panel, a panel-3 choice), a planted control's answers as one row per
control. The dashboard's header, the progress page's units per flow and rater group, the study
list and the answer exports (downloads and API) read them through this module.

Flows, in the words the console shows:

- ``expert`` / ``lay``: the protocol's radiologist page and lay survey (seed 003);
- ``pairs``: rate each pair (seed 002, seed 000), one page per (text, reference) pair;
- ``pairwise``: compare two texts of one source;
- ``controls``: the planted controls on radiologists' pages (answered inside the expert flow).

A participant answers in one flow, chosen as their invitation link chooses it
(surveys/entry.py): the rate-each-pair flow where a pairs instrument asks their rater group, else
the compare-two flow where the pairwise instrument asks their role, else the protocol flow of their
role.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import (
    Case,
    Count,
    IntegerField,
    Max,
    Min,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
    When,
)

from annotation import answer_selectors
from annotation.models import (
    ExpertItem,
    ItemAnswer,
    LayItem,
    PairwiseTask,
    Participant,
    Simplification,
    Study,
    StudyInstrument,
)
from annotation.selectors import counted_participants
from evaluation.exports.rows import (
    SECTIONS,
    AnswerLookups,
    AnswerQuery,
    AnswerRow,
    Section,
    Spread,
    _bounds,
    _time,
    _timestamps,
    _who,
    answer_lookups,
    external_ids,
    flat_cell,
)
from evaluation.selectors import EXPERT_ASPECTS

EXPERT, LAY, PAIRS, PAIRWISE, CONTROLS = "expert", "lay", "pairs", "pairwise", "controls"
FLOWS = (EXPERT, LAY, PAIRS, PAIRWISE, CONTROLS)
FLOW_LABELS = {
    EXPERT: "protocol · radiologist page",
    LAY: "protocol · lay survey",
    PAIRS: "rate each pair",
    PAIRWISE: "pairwise comparison",
    CONTROLS: "planted controls",
}
PROTOCOL_FLOWS = frozenset({EXPERT, LAY})
_ROLE_FLOW = {Participant.Role.RADIOLOGIST.value: EXPERT, Participant.Role.LAYPERSON.value: LAY}
CONTROL_PHASE = "planted_control"


# --- Which flow asks whom ----------------------------------------------------------------------------


@dataclass(frozen=True)
class StudyFlows:
    """The study's current instruments, as far as routing participants is concerned."""

    pairs_groups: frozenset[str]  # rater groups a current pairs instrument asks
    pairwise_roles: frozenset[str]  # roles the current pairwise instrument asks

    def flow_of(self, *, role: str, rater_group: str = "") -> str:
        """The flow a participant of `role` and `rater_group` ('' = the role) answers in (the
        order of surveys/entry.py)."""
        if (rater_group or role) in self.pairs_groups:
            return PAIRS
        if role in self.pairwise_roles:
            return PAIRWISE
        return _ROLE_FLOW.get(role, LAY)

    @property
    def other_flows(self) -> bool:
        """Whether the study asks anything besides the protocol."""
        return bool(self.pairs_groups or self.pairwise_roles)


def study_flows(*, study: Study) -> StudyFlows:
    pairs: set[str] = set()
    pairwise: set[str] = set()
    for flow, definition in StudyInstrument.objects.filter(
        study=study, is_current=True, flow__in=[StudyInstrument.Flow.PAIRS, StudyInstrument.Flow.PAIRWISE]
    ).values_list("flow", "definition"):
        roles = {role for item in definition.get("items", []) for role in item.get("roles", [])}
        (pairs if flow == StudyInstrument.Flow.PAIRS else pairwise).update(roles)
    return StudyFlows(pairs_groups=frozenset(pairs), pairwise_roles=frozenset(pairwise))


def _counted(study: Study):
    return Participant.objects.filter(counted_participants(), study=study)


def protocol_asked(
    *, study: Study, flows: StudyFlows | None = None, protocol_answers: int | None = None
) -> bool:
    """Whether the study asks the protocol's items: it runs no other flow, or one of its counted
    participants answers in a protocol flow, or protocol answers exist (a study that changed flows
    keeps showing what it holds). `protocol_answers`, where the caller counted them already."""
    flows = flows or study_flows(study=study)
    if not flows.other_flows:
        return True
    for role, group in _counted(study).values_list("role", "rater_group").distinct():
        if flows.flow_of(role=role, rater_group=group) in PROTOCOL_FLOWS:
            return True
    if protocol_answers is not None:
        return protocol_answers > 0
    return ItemAnswer.objects.filter(
        answer_selectors.protocol_answers(),
        counted_participants(path="participant__"),
        participant__study=study,
        control__isnull=True,
    ).exists()


# --- Counts -------------------------------------------------------------------------------------------


@dataclass
class FlowCount:
    flow: str
    participants: int = 0
    answers: int = 0

    @property
    def label(self) -> str:
        return FLOW_LABELS[self.flow]


@dataclass
class AnswerCounts:
    """Counted participants and their answers, in total and per flow (flows with neither left
    out). An answer is what the long export ("Answers · CSV") writes as one row: one item answered
    about one target (an aspect of a rating, a comment, one text ticked in panel 3, one question
    of the background questionnaire, an attention check, one planted control's aspect) —
    `answer_counts` counts the export's own rows, so the two always agree."""

    participants: int
    answers: int
    by_flow: list[FlowCount]
    by_role: dict[str, int] = field(default_factory=dict)
    protocol_answers: int = 0

    def flow(self, name: str) -> FlowCount:
        return next((row for row in self.by_flow if row.flow == name), FlowCount(name))


def answer_counts(*, study: Study, flows: StudyFlows | None = None) -> AnswerCounts:
    """The rows of the long export (`study_answer_rows`), per flow: a planted control's rows in
    the controls flow, every other row in the flow of the participant who gave it."""
    flows = flows or study_flows(study=study)
    rows = {name: FlowCount(name) for name in FLOWS}
    by_role: Counter[str] = Counter()
    flow_of: dict[int, str] = {}
    for pk, role, group in _counted(study).values_list("pk", "role", "rater_group"):
        flow_of[pk] = flows.flow_of(role=role, rater_group=group)
        rows[flow_of[pk]].participants += 1
        by_role[role] += 1
    raters: set[int] = set()
    for participant_id, row in _answer_rows(study, ANSWER_SECTIONS):
        if row.phase == CONTROL_PHASE:
            raters.add(participant_id)
            rows[CONTROLS].answers += 1
        else:
            rows[flow_of.get(participant_id, LAY)].answers += 1
    rows[CONTROLS].participants = len(raters)
    shown = [row for row in rows.values() if row.participants or row.answers]
    return AnswerCounts(
        participants=sum(by_role.values()),
        answers=sum(row.answers for row in rows.values()),
        by_flow=shown,
        by_role=dict(by_role),
        protocol_answers=sum(rows[flow].answers for flow in PROTOCOL_FLOWS),
    )


def study_answers_summary(*, study: Study) -> dict[str, Any]:
    """What the dashboard's header and its choice of sections read: `answer_counts`, whether the
    protocol is asked, whether another flow is."""
    flows = study_flows(study=study)
    counts = answer_counts(study=study, flows=flows)
    return {
        "answer_counts": counts,
        "protocol_asked": protocol_asked(study=study, flows=flows, protocol_answers=counts.protocol_answers),
        "other_flows": flows.other_flows,
    }


def study_sections_asked(*, study: Study, analysis: dict[str, Any] | None) -> dict[str, Any]:
    """Which of the dashboard's sections a study asks, without counting answer tables (the
    dashboard reads its snapshot only): protocol answers held from before a change of flows are
    read from the snapshot's counts of radiologists and laypeople."""
    flows = study_flows(study=study)
    counted = (analysis or {}).get("n") or {}
    held = int(counted.get("radiologists") or 0) + int(counted.get("laypeople") or 0)
    return {
        "protocol_asked": protocol_asked(study=study, flows=flows, protocol_answers=held),
        "other_flows": flows.other_flows,
    }


# --- Units per participant ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Units:
    flow: str
    group: str
    done: int
    total: int


def participant_units(*, study: Study, flows: StudyFlows | None = None) -> dict[int, Units]:
    """Per counted participant: their flow, rater group and units done / total. A unit is a source
    page (radiologist), a sentence that reached its last panel (layperson), a pair with every
    required item answered (pairs) or a comparison answered (pairwise). A pairwise participant who
    has not started has the study's comparisons per participant as their total."""
    from instruments.schema import AppliesTo
    from surveys.lay.selectors import DONE
    from surveys.rate_each_pair.selectors import instrument_of, pairs_page_items, study_pairs

    flows = flows or study_flows(study=study)
    people = list(_counted(study).values_list("pk", "role", "rater_group", "completed_at"))
    expert = {
        row["participant_id"]: (row["done"], row["total"])
        for row in ExpertItem.objects.filter(
            counted_participants(path="participant__"), participant__study=study
        )
        .values("participant_id")
        .annotate(total=Count("pk"), done=Count("pk", filter=Q(completed_at__isnull=False)))
    }
    lay = {
        row["participant_id"]: (row["done"], row["total"])
        for row in LayItem.objects.filter(
            counted_participants(path="participant__"), participant__study=study
        )
        .values("participant_id")
        .annotate(total=Count("pk"), done=Count("pk", filter=Q(stage=DONE)))
    }
    units: dict[int, Units] = {}
    pairs_needed = any(flows.flow_of(role=r, rater_group=g) == PAIRS for _, r, g, _ in people)
    pairwise_needed = any(flows.flow_of(role=r, rater_group=g) == PAIRWISE for _, r, g, _ in people)
    pairs = study_pairs(study=study) if pairs_needed else []
    answered: dict[int, set[tuple[int, str, int | None, int | None]]] = defaultdict(set)
    if pairs_needed or pairwise_needed:
        for participant_id, instrument_id, item, text, reference in ItemAnswer.objects.filter(
            counted_participants(path="participant__"),
            participant__study=study,
            instrument__flow__in=[StudyInstrument.Flow.PAIRS, StudyInstrument.Flow.PAIRWISE],
        ).values_list("participant_id", "instrument_id", "item_key", "shown_text_id", "reference_text_id"):
            answered[participant_id].add((instrument_id, item, text, reference))
    required: dict[str, list[tuple[int, str]]] = {}
    tasks: dict[int, int] = {}
    planned = 0
    if pairwise_needed:
        tasks = dict(
            PairwiseTask.objects.filter(participant__study=study)
            .values_list("participant_id")
            .annotate(n=Count("pk"))
            .order_by()
        )
        texts_per_source = (
            Simplification.objects.filter(source__study=study)
            .values("source_id")
            .annotate(n=Count("shown_text_id", distinct=True))
        )
        planned = sum(1 for row in texts_per_source if row["n"] >= 2)
    # Whether an answer names the pair's reference: items about the pair do, items about the
    # simplification alone do not (surveys/rate_each_pair/pages.py).
    about_pair = {
        (row.pk, item.key): item.applies_to is AppliesTo.PAIR
        for row in StudyInstrument.objects.filter(
            study=study, is_current=True, flow=StudyInstrument.Flow.PAIRS
        )
        for item in instrument_of(row).items
    }
    for pk, role, group, completed_at in people:
        flow = flows.flow_of(role=role, rater_group=group)
        name = group or role
        if flow == PAIRS:
            if name not in required:
                required[name] = [
                    (page_item.asked.row.pk, page_item.item.key)
                    for page_item in pairs_page_items(study=study, group=name)
                    if page_item.item.required
                ]
            given = answered.get(pk, set())
            done = sum(
                1
                for pair in pairs
                if all(
                    (
                        instrument,
                        item,
                        pair.shown_text_id,
                        pair.reference_text_id if about_pair[instrument, item] else None,
                    )
                    in given
                    for instrument, item in required[name]
                )
            )
            units[pk] = Units(PAIRS, name, done, len(pairs))
        elif flow == PAIRWISE:
            done = len(answered.get(pk, ()))
            units[pk] = Units(PAIRWISE, name, done, tasks.get(pk) or planned)
        else:
            done, total = (expert if flow == EXPERT else lay).get(pk, (0, 0))
            if flow == EXPERT and total and completed_at is not None and done == 0:
                done = total  # imported data marks only the participant complete
            units[pk] = Units(flow, name, done, total)
    return units


@dataclass
class UnitsRow:
    flow: str
    group: str
    participants: int = 0
    started: int = 0
    completed: int = 0
    done: int = 0
    total: int = 0

    @property
    def label(self) -> str:
        return FLOW_LABELS[self.flow]


def units_by_flow_and_group(*, study: Study) -> list[UnitsRow]:
    """The progress page's table: per flow and rater group, participants, how many started and
    completed, and units done / total."""
    units = participant_units(study=study)
    states = dict(
        (pk, (started is not None, completed is not None))
        for pk, started, completed in _counted(study).values_list("pk", "started_at", "completed_at")
    )
    rows: dict[tuple[str, str], UnitsRow] = {}
    for pk, unit in units.items():
        row = rows.setdefault((unit.flow, unit.group), UnitsRow(unit.flow, unit.group))
        started, completed = states.get(pk, (False, False))
        row.participants += 1
        row.started += started or unit.done > 0
        row.completed += completed
        row.done += unit.done
        row.total += unit.total
    return sorted(rows.values(), key=lambda row: (FLOWS.index(row.flow), row.group))


# --- Every answer as rows of the long export ------------------------------------------------------


def _number(score: Any) -> Any:
    if isinstance(score, float) and score.is_integer():
        return int(score)
    return score


def item_answer_query(*, study: Study, known: AnswerLookups | None) -> AnswerQuery:
    return AnswerQuery(
        ItemAnswer.objects.filter(
            counted_participants(path="participant__"),
            participant__study=study,
            control__isnull=True,
            **_bounds(known, participant="participant_id", source="source_id"),
        )
        # The protocol's own items are the typed sections' (rows.SECTIONS).
        .exclude(answer_selectors.protocol_answers())
        .order_by("participant_id", "id"),
        (
            "participant_id",
            "source_id",
            "shown_text_id",
            "reference_text_id",
            "instrument__key",
            "instrument__flow",
            "item_key",
            "value",
            "score",
            "language",
            "time_spent_ms",
            *_timestamps("created_at", "updated_at"),
        ),
    )


def _item_rows(stored, known: AnswerLookups, slug: str) -> Spread:
    """One row per instrument item's answer: `question` is `<instrument>.<item>`, `phase` the flow,
    `systems` the shown text's systems (for a pair: `<shown> vs <reference>`)."""
    for values in stored:
        (participant_id, source_id, text_id, reference_id, key, flow, item, value, score, shown_in,
         spent, created, updated) = values[:13]  # fmt: skip
        who = _who(known, participant_id, slug)
        # A participant whose flow recorded no language: the one the item was shown in.
        who["language"] = who["language"] or shown_in
        systems = known.text_systems.get(text_id, "") if text_id else ""
        if reference_id:
            systems = f"{systems} vs {known.text_systems.get(reference_id, '')}"
        yield (
            values,
            0,
            AnswerRow(
                **who,
                source=known.sources[source_id],
                systems=systems,
                text_id=text_id,
                phase=flow,
                question=f"{key}.{item}",
                value=flat_cell(value),
                value_number=_number(score),
                time_spent_ms=spent,
                created_at=_time(created),
                updated_at=_time(updated),
            ),
        )


def _of_control(expression) -> Subquery:
    """`expression` over the rows of the same participant's answers on the same planted control."""
    return Subquery(
        ItemAnswer.objects.filter(
            participant_id=OuterRef("participant_id"), control_id=OuterRef("control_id")
        )
        .order_by()
        .values("control_id")
        .annotate(found=expression)
        .values("found")
    )


def control_answer_query(*, study: Study, known: AnswerLookups | None) -> AnswerQuery:
    """The answers on planted controls, one stored row per item answered, in the order of each
    control's first answer: the aspects, then the added items, then the comment."""
    aspects = list(EXPERT_ASPECTS)
    return AnswerQuery(
        ItemAnswer.objects.filter(
            counted_participants(path="participant__"),
            participant__study=study,
            control__isnull=False,
            **_bounds(known, participant="participant_id", source="source_id"),
        )
        .annotate(
            control_first=_of_control(Min("pk")),
            control_spent=_of_control(Sum("time_spent_ms")),
            control_created=_of_control(Min("created_at")),
            control_updated=_of_control(Max("updated_at")),
            rank=Case(
                When(item_key__in=aspects, then=Value(0)),
                When(item_key="comment", then=Value(2)),
                default=Value(1),
                output_field=IntegerField(),
            ),
        )
        .order_by("participant_id", "control_first", "rank", "item_key"),
        (
            "participant_id",
            "source_id",
            "control__degrades_id",
            "control__kind",
            "item_key",
            "value",
            "rank",
            "control_spent",
            *_timestamps("control_created", "control_updated"),
        ),
    )


def _control_rows(stored, known: AnswerLookups, slug: str) -> Spread:
    """A planted control's answers: one row per aspect scored, added item and comment; `systems`
    names the control's kind and the text it degrades, `text_id` is that text's."""
    from annotation import scales

    likert = {level.value: level.name for level in scales.LIKERT.levels}
    for values in stored:
        (participant_id, source_id, text_id, kind, key, value, rank, spent, created,
         updated) = values[:10]  # fmt: skip
        common = {
            **_who(known, participant_id, slug),
            "source": known.sources[source_id],
            "systems": f"planted {kind} of {known.text_systems.get(text_id, '')}",
            "text_id": text_id,
            "phase": CONTROL_PHASE,
            "time_spent_ms": spent,
            "created_at": _time(created),
            "updated_at": _time(updated),
        }
        if rank == 0:
            yield (
                values,
                0,
                AnswerRow(**common, question=key, value=likert.get(value, value), value_number=value),
            )
        elif rank == 1:
            yield values, 0, AnswerRow(**common, question=key, value=flat_cell(value))
        elif value:
            yield values, 0, AnswerRow(**common, question="comment", value=value)


ITEM_SECTIONS = (
    Section(lambda study, known: item_answer_query(study=study, known=known), _item_rows, 1, 2, 3),
    Section(lambda study, known: control_answer_query(study=study, known=known), _control_rows, 1, 2),
)
# Every answer table of the long export, in its order: the protocol's typed tables (rows.SECTIONS),
# then the instrument items' and the planted controls' answers.
ANSWER_SECTIONS = (*SECTIONS, *ITEM_SECTIONS)


def item_answer_rows(*, study: Study, include_external_ids: bool = False) -> Iterator[tuple[Any, ...]]:
    """The rows of ITEM_SECTIONS only (what follows the protocol's rows in every export)."""
    yield from _rows(study, ITEM_SECTIONS, include_external_ids)


def study_answer_rows(*, study: Study, include_external_ids: bool = False) -> Iterator[tuple[Any, ...]]:
    """Every answer of every flow as rows of the long export (evaluation/exports/rows.py's
    columns), the protocol's first."""
    yield from _rows(study, ANSWER_SECTIONS, include_external_ids)


def answer_rows_of(
    *, study: Study, sections, include_external_ids: bool = False
) -> Iterator[tuple[Any, ...]]:
    """The long rows of `sections` only (e.g. rows.SECTIONS: the protocol's)."""
    yield from _rows(study, sections, include_external_ids)


def _answer_rows(study: Study, sections) -> Iterator[tuple[int, AnswerRow]]:
    """(participant id, row) for every row of `sections`: the one reading of the export's rows
    (the exports write them, `answer_counts` counts them)."""
    known = answer_lookups(study=study)
    for section in sections:
        for values, _, row in section.spread(section.query(study, known).values(), known, study.slug):
            yield values[0], row


def _rows(study: Study, sections, include_external_ids: bool) -> Iterator[tuple[Any, ...]]:
    external = external_ids(study=study) if include_external_ids else {}
    for participant_id, row in _answer_rows(study, sections):
        if include_external_ids:
            yield (*row[:2], external[participant_id], *row[2:])
        else:
            yield row


# --- Every rater's item answer, keyed as an ItemAnswer is ---------------------------------------


@dataclass(frozen=True)
class RatedAnswer:
    """One analysed participant's answer to one instrument item on one target, whichever table
    holds it: `instrument_id` is the StudyInstrument version, `value` the JSON form ItemAnswer.value
    stores (item_value_to_json), `score` its numeric coding (None where it has none)."""

    participant_id: int
    instrument_id: int
    item_key: str
    source_id: int
    shown_text_id: int | None
    reference_text_id: int | None
    value: Any
    score: float | None


def rated_answers(*, study: Study, flows: tuple[str, ...], source_id: int | None = None) -> list[RatedAnswer]:
    """The answers of analysed participants under the instruments of `flows` (StudyInstrument.Flow
    values), of one source where `source_id` is given: the store's rows on real targets (planted
    controls' rows are never a study answer), the protocol's items among them."""
    from annotation.selectors import analysed_participants

    here = {"source_id": source_id} if source_id is not None else {}
    stored = ItemAnswer.objects.filter(
        analysed_participants(path="participant__"),
        participant__study=study,
        instrument__flow__in=flows,
        control__isnull=True,
        **here,
    ).order_by(
        "instrument_id", "item_key", "source_id", "shown_text_id", "reference_text_id", "participant_id"
    )
    fields = (
        "participant_id",
        "instrument_id",
        "item_key",
        "source_id",
        "shown_text_id",
        "reference_text_id",
    )
    return [RatedAnswer(*row) for row in stored.values_list(*fields, "value", "score")]
