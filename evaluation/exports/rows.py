"""Every raw answer of a study as rows of one long table (one row per answer to one question).

Rows are `AnswerRow`s (columns in the order of `answer_columns()`). Values are written as the level
name the participant chose (`value`) and as its number in radlay's coding (`value_number`, from
annotation/scales.py: severity Critical = 1 … Healthy = 5; Q1 1–4; Q2 1–3; Q4 −1..2; radiologist
aspects 1–5). `time_spent_ms` is the time spent on the whole panel the answer belongs to.
Pseudonymous by default: the recruiter's external id only with `include_external_ids=True`.

Built for studies of millions of answers: participants, sources and systems are read once into
dictionaries (`answer_lookups`), then each answer table is read with one query that joins only its
item (`*_query`), through a server-side cursor (`.iterator()`), so memory stays flat and there is no
query per row. The queries keep to the participants and sources looked up (`AnswerLookups`). On
PostgreSQL the CSV export wraps the same
queries in SQL that writes the same bytes (evaluation/exports/csv_copy.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import CharField, F, Func, Q, QuerySet

from annotation import answer_selectors, scales
from annotation.models import (
    AttentionCheckResponse,
    Participant,
    Source,
    Study,
    System,
)
from annotation.selectors import counted_participants, participant_label, systems_by_text
from evaluation.selectors import EXPERT_ASPECTS, LAY_QUESTIONS

CHUNK = 5000


class AnswerRow(NamedTuple):
    study: str
    participant: str
    role: str
    language: str = ""  # the language the participant was shown the study in (Participant.language)
    source: str = ""
    systems: str = ""  # ';'-joined keys of every system that produced the text
    assigned_system: str = ""  # the Latin square's system (lay answers)
    text_id: int | None = None
    phase: str = ""
    question: str = ""
    value: Any = ""
    value_number: int | None = None
    time_spent_ms: int = 0
    created_at: str = ""
    updated_at: str = ""


COLUMNS = AnswerRow._fields


def answer_columns(*, include_external_ids: bool = False) -> tuple[str, ...]:
    if include_external_ids:
        return (*COLUMNS[:2], "external_id", *COLUMNS[2:])
    return COLUMNS


# Parsing timestamps into datetimes and formatting them again is most of the cost of a row:
# PostgreSQL writes them as ISO 8601 text itself (the same text as `_time` gives).
_PG_ISO = "to_char(%(expressions)s AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"+00:00\"')"


def _timestamps(*fields: str) -> tuple[Any, ...]:
    """values_list() expressions: each field as ISO text on PostgreSQL, as is elsewhere."""
    if connection.vendor == "postgresql":
        return tuple(Func(F(name), template=_PG_ISO, output_field=CharField()) for name in fields)
    return fields


def flat_cell(value: Any) -> Any:
    """A cell a spreadsheet holds: lists and mappings as JSON text, scalars as they are."""
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value


def _time(value: datetime | str | None) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    return value.astimezone(UTC).isoformat(timespec="microseconds")


class AnswerLookups(NamedTuple):
    """What every section of the export looks up by id, read once per export."""

    people: dict[int, tuple[str, str, str]]  # participant id → (label, role, language)
    sources: dict[int, str]  # source id → key
    systems: dict[int, str]  # system id → key
    text_systems: dict[int, str]  # text id → ';'-joined keys of the systems that produced it

    # Ids only grow: the answer queries keep to participants and sources that existed when the
    # lookups were read, so one who joins during a long export is left out instead of breaking it.
    @property
    def last_participant(self) -> int:
        return max(self.people, default=0)

    @property
    def last_source(self) -> int:
        return max(self.sources, default=0)


def answer_lookups(*, study: Study) -> AnswerLookups:
    return AnswerLookups(
        people={
            pk: (participant_label(pseudonym, pk), role, language)
            for pk, pseudonym, role, language in Participant.objects.filter(
                counted_participants(), study=study
            ).values_list("pk", "pseudonym", "role", "language")
        },
        sources=dict(Source.objects.filter(study=study).values_list("pk", "key")),
        systems=dict(System.objects.filter(study=study).values_list("pk", "key")),
        text_systems={text_id: ";".join(keys) for text_id, keys in systems_by_text(study=study).items()},
    )


def answer_lookups_of(
    *, study: Study, participants: Iterable[int], sources: Iterable[int], texts: Iterable[int]
) -> AnswerLookups:
    """`answer_lookups` for the given ids only (the study's few systems all)."""
    return AnswerLookups(
        people={
            pk: (participant_label(pseudonym, pk), role, language)
            for pk, pseudonym, role, language in Participant.objects.filter(
                study=study, pk__in=participants
            ).values_list("pk", "pseudonym", "role", "language")
        },
        sources=dict(Source.objects.filter(study=study, pk__in=sources).values_list("pk", "key")),
        systems=dict(System.objects.filter(study=study).values_list("pk", "key")),
        text_systems={
            text_id: ";".join(keys) for text_id, keys in systems_by_text(study=study, texts=texts).items()
        },
    )


def external_ids(*, study: Study) -> dict[int, str]:
    """Participant id → the recruiter's external id (personal data: only when asked for)."""
    return dict(Participant.objects.filter(study=study).values_list("pk", "external_id"))


class AnswerQuery(NamedTuple):
    """One answer table of the export: its rows for a study in export order, and the values read
    from each. The Python path (`answer_rows`) and the PostgreSQL COPY path
    (evaluation/exports/csv_copy.py) read the same queries."""

    queryset: QuerySet
    fields: tuple[Any, ...]

    def values(self) -> Iterator[tuple[Any, ...]]:
        return self.queryset.values_list(*self.fields).iterator(chunk_size=CHUNK)

    def values_with_order(self) -> QuerySet:
        """The values followed by the ordering keys, for a query that wraps this one and must keep
        its order."""
        return self.queryset.values_list(*self.fields, *(F(key) for key in self.queryset.query.order_by))


def _bounds(known: AnswerLookups | None, *, participant: str, source: str = "") -> dict[str, int]:
    """Filters keeping a query to the participants and sources `known` holds; none without it."""
    if known is None:
        return {}
    bounds = {f"{participant}__lte": known.last_participant}
    if source:
        bounds[f"{source}__lte"] = known.last_source
    return bounds


def _where(known: AnswerLookups | None, *, source: str = "source_id") -> Q:
    """The counted participants, kept to those and the sources `known` holds (over ItemAnswer)."""
    return Q(
        counted_participants(path="participant__"),
        **_bounds(known, participant="participant_id", source=source),
    )


def lay_answer_query(*, study: Study, known: AnswerLookups | None) -> AnswerQuery:
    return AnswerQuery(
        answer_selectors.lay_answer_rows(study=study, where=_where(known))
        .filter(item_id__isnull=False)
        .order_by("participant_id", "item_position", "phase"),
        (
            "participant_id",
            "source_id",
            "item_text_id",
            "item_system_id",
            "phase",
            *LAY_QUESTIONS,
            "spent",
            *_timestamps("first_at", "last_at"),
        ),
    )


def preference_query(*, study: Study, known: AnswerLookups | None, side: str) -> AnswerQuery:
    """The preferences with texts chosen as `side` ("most" or "least") preferred: one stored
    answer each, its chosen text ids as JSON text (spread into one row per chosen text)."""
    return AnswerQuery(
        answer_selectors.preference_rows(study=study, where=_where(known))
        .filter(**{f"{side}__isnull": False, "item_id__isnull": False})
        .order_by("participant_id", "item_position"),
        (
            "participant_id",
            "source_id",
            "item_system_id",
            side,
            "spent",
            *_timestamps("first_at", "last_at"),
        ),
    )


def justification_query(*, study: Study, known: AnswerLookups | None) -> AnswerQuery:
    return AnswerQuery(
        answer_selectors.preference_rows(study=study, where=_where(known))
        .filter(item_id__isnull=False)
        .exclude(most_justification="", least_justification="")
        .order_by("participant_id", "item_position"),
        (
            "participant_id",
            "source_id",
            "item_system_id",
            "most_justification",
            "least_justification",
            "spent",
            *_timestamps("first_at", "last_at"),
        ),
    )


def expert_rating_query(*, study: Study, known: AnswerLookups | None) -> AnswerQuery:
    return AnswerQuery(
        answer_selectors.rating_rows(study=study, where=_where(known)).order_by(
            "participant_id", "source__position", "shown_text_id"
        ),
        (
            "participant_id",
            "text_source_id",
            "shown_text_id",
            *EXPERT_ASPECTS,
            "comment",
            "spent",
            *_timestamps("first_at", "last_at"),
        ),
    )


def source_judgement_query(*, study: Study, known: AnswerLookups | None) -> AnswerQuery:
    return AnswerQuery(
        answer_selectors.judgement_rows(study=study, where=_where(known)).order_by(
            "participant_id", "source__position"
        ),
        (
            "participant_id",
            "source_id",
            "severity",
            "simplicity",
            "comment",
            "spent",
            *_timestamps("first_at", "last_at"),
        ),
    )


def attention_check_query(*, study: Study, known: AnswerLookups | None) -> AnswerQuery:
    return AnswerQuery(
        AttentionCheckResponse.objects.filter(
            counted_participants(path="participant__"),
            participant__study=study,
            **_bounds(known, participant="participant_id"),
        ).order_by("participant_id", "check_item__position"),
        ("participant_id", "check_item__position", "answer", "passed", *_timestamps("answered_at")),
    )


def background_query(*, study: Study, known: AnswerLookups | None) -> AnswerQuery:
    """The participants who answered background questions (Study.background_questions): one stored
    answer per participant, the JSON object of their answers (key → the option or text given)."""
    return AnswerQuery(
        Participant.objects.filter(counted_participants(), study=study, **_bounds(known, participant="pk"))
        .exclude(background={})
        .order_by("pk"),
        ("pk", "background"),
    )


def answer_rows(*, study: Study, include_external_ids: bool = False) -> Iterator[tuple[Any, ...]]:
    """Yield one row per answer: lay panels 1–2 (one row per question), panel-3 choices (one row per
    chosen text) and justifications, radiologist ratings (one row per aspect) and comments,
    radiologists' judgements of the originals, attention checks, background (demographic) answers.
    With `include_external_ids` each row has the participant's external id after `participant`."""
    if not include_external_ids:
        for _, row in _rows(study):
            yield row
        return
    external = external_ids(study=study)
    for participant_id, row in _rows(study):
        yield (*row[:2], external[participant_id], *row[2:])


def _rows(study: Study) -> Iterator[tuple[int, AnswerRow]]:
    """(participant id, row) for every answer."""
    known = answer_lookups(study=study)
    for section in SECTIONS:
        for values, _, row in section.spread(section.query(study, known).values(), known, study.slug):
            yield values[0], row


# Each section spreads the values of one stored answer (participant id first; any fields after
# its own are ignored) into its rows, each with its index among the rows the stored answer can
# have (question, aspect), which with the section's order and the stored answer's sort key places
# it in the export.
Spread = Iterator[tuple[tuple[Any, ...], int, AnswerRow]]


def _who(known: AnswerLookups, participant_id: int, slug: str) -> dict[str, Any]:
    """The columns every row of a participant's answer starts with: study, participant, role,
    language."""
    label, role, language = known.people[participant_id]
    return {"study": slug, "participant": label, "role": role, "language": language}


def _lay_rows(stored: Iterable[tuple[Any, ...]], known: AnswerLookups, slug: str) -> Spread:
    _, sources, systems, text_systems = known
    codes = [scales.LAY_SCALES[question].codes for question in LAY_QUESTIONS]
    last = 5 + len(LAY_QUESTIONS)
    for values in stored:
        participant_id, source_id, text_id, system_id, phase = values[:5]
        who = _who(known, participant_id, slug)
        source, assigned = sources[source_id], systems.get(system_id, "")
        shown_by = text_systems.get(text_id, "")
        time_spent, created, updated = values[last : last + 3]
        created, updated = _time(created), _time(updated)
        for n, answer in enumerate(values[5:last]):
            if answer:
                yield (
                    values,
                    n,
                    AnswerRow(
                        **who,
                        source=source,
                        systems=shown_by,
                        assigned_system=assigned,
                        text_id=text_id,
                        phase=phase,
                        question=LAY_QUESTIONS[n],
                        value=answer,
                        value_number=codes[n][answer],
                        time_spent_ms=time_spent,
                        created_at=created,
                        updated_at=updated,
                    ),
                )


def chosen_text_ids(stored: str | None) -> list[int]:
    """The text ids of a preference's JSON list of chosen texts, in ascending order."""
    return sorted(int(t) for t in json.loads(stored)) if stored else []


def _preference_rows(side: str) -> Callable[[Iterable[tuple[Any, ...]], AnswerLookups, str], Spread]:
    def rows(stored: Iterable[tuple[Any, ...]], known: AnswerLookups, slug: str) -> Spread:
        _, sources, systems, text_systems = known
        for values in stored:
            participant_id, source_id, system_id, chosen, time_spent, created, updated = values[:7]
            who = _who(known, participant_id, slug)
            for n, text_id in enumerate(chosen_text_ids(chosen)):
                yield (
                    values,
                    n,
                    AnswerRow(
                        **who,
                        source=sources[source_id],
                        systems=text_systems.get(text_id, ""),
                        assigned_system=systems.get(system_id, ""),
                        text_id=text_id,
                        phase="preference",
                        question=f"{side}_preferred",
                        value=text_systems.get(text_id, ""),
                        value_number=1,
                        time_spent_ms=time_spent,
                        created_at=_time(created),
                        updated_at=_time(updated),
                    ),
                )

    return rows


def _justification_rows(stored: Iterable[tuple[Any, ...]], known: AnswerLookups, slug: str) -> Spread:
    _, sources, systems, _ = known
    for values in stored:
        participant_id, source_id, system_id, most, least, time_spent, created, updated = values[:8]
        who = _who(known, participant_id, slug)
        for n, (question, text) in enumerate((("most_justification", most), ("least_justification", least))):
            if text:
                yield (
                    values,
                    n,
                    AnswerRow(
                        **who,
                        source=sources[source_id],
                        assigned_system=systems.get(system_id, ""),
                        phase="preference",
                        question=question,
                        value=text,
                        time_spent_ms=time_spent,
                        created_at=_time(created),
                        updated_at=_time(updated),
                    ),
                )


def _expert_rows(stored: Iterable[tuple[Any, ...]], known: AnswerLookups, slug: str) -> Spread:
    _, sources, _, text_systems = known
    likert = {level.value: level.name for level in scales.LIKERT.levels}
    last = 3 + len(EXPERT_ASPECTS)
    for values in stored:
        participant_id, source_id, text_id = values[:3]
        comment, time_spent, created, updated = values[last : last + 4]
        common = {
            **_who(known, participant_id, slug),
            "source": sources[source_id],
            "systems": text_systems.get(text_id, ""),
            "text_id": text_id,
            "phase": "expert",
            "time_spent_ms": time_spent,
            "created_at": _time(created),
            "updated_at": _time(updated),
        }
        for n, score in enumerate(values[3:last]):
            if score is not None:
                yield (
                    values,
                    n,
                    AnswerRow(**common, question=EXPERT_ASPECTS[n], value=likert[score], value_number=score),
                )
        if comment:
            yield values, len(EXPERT_ASPECTS), AnswerRow(**common, question="comment", value=comment)


def _judgement_rows(stored: Iterable[tuple[Any, ...]], known: AnswerLookups, slug: str) -> Spread:
    sources = known.sources
    likert = {level.value: level.name for level in scales.LIKERT.levels}
    severity = scales.SEVERITY.codes
    for values in stored:
        participant_id, source_id, level, simplicity, comment, time_spent, created, updated = values[:8]
        common = {
            **_who(known, participant_id, slug),
            "source": sources[source_id],
            "phase": "original",
            "time_spent_ms": time_spent,
            "created_at": _time(created),
            "updated_at": _time(updated),
        }
        if level:
            yield (
                values,
                0,
                AnswerRow(**common, question="severity", value=level, value_number=severity[level]),
            )
        if simplicity is not None:
            yield (
                values,
                1,
                AnswerRow(
                    **common,
                    question="original_simplicity",
                    value=likert[simplicity],
                    value_number=simplicity,
                ),
            )
        if comment:
            yield values, 2, AnswerRow(**common, question="comment", value=comment)


def _attention_rows(stored: Iterable[tuple[Any, ...]], known: AnswerLookups, slug: str) -> Spread:
    for values in stored:
        participant_id, position, answer, passed, answered = values[:5]
        who = _who(known, participant_id, slug)
        yield (
            values,
            0,
            AnswerRow(
                **who,
                phase="attention_check",
                question=f"attention_check_{position}",
                value=answer,
                value_number=int(passed),
                created_at=_time(answered),
                updated_at=_time(answered),
            ),
        )


def _background_rows(stored: Iterable[tuple[Any, ...]], known: AnswerLookups, slug: str) -> Spread:
    # Keys in code-point order (JSONB keeps no order); a question left unanswered ("") has no row,
    # as an unanswered question of the panels has none.
    for values in stored:
        participant_id, answers = values[:2]
        who = _who(known, participant_id, slug)
        for n, key in enumerate(sorted(answers)):
            if answers[key] in ("", None):
                continue
            yield (
                values,
                n,
                AnswerRow(
                    **who,
                    phase="background",
                    question=str(key),
                    value=str(answers[key]),
                ),
            )


class Section(NamedTuple):
    """One answer table of the export: its query, how its stored answers become rows, and where
    in a stored answer's values its source and text ids are (None: it has none)."""

    query: Callable[[Study, AnswerLookups | None], AnswerQuery]
    spread: Callable[[Iterable[tuple[Any, ...]], AnswerLookups, str], Spread]
    source_at: int | None = None
    text_at: int | None = None
    reference_at: int | None = None  # a second text the rows name (an item answer's reference)
    chosen_at: int | None = None  # the JSON list of texts chosen (a preference), one row each


# In the export's order.
SECTIONS = (
    Section(lambda study, known: lay_answer_query(study=study, known=known), _lay_rows, 1, 2),
    Section(
        lambda study, known: preference_query(study=study, known=known, side="most"),
        _preference_rows("most"),
        1,
        chosen_at=3,
    ),
    Section(
        lambda study, known: preference_query(study=study, known=known, side="least"),
        _preference_rows("least"),
        1,
        chosen_at=3,
    ),
    Section(lambda study, known: justification_query(study=study, known=known), _justification_rows, 1),
    Section(lambda study, known: expert_rating_query(study=study, known=known), _expert_rows, 1, 2),
    Section(lambda study, known: source_judgement_query(study=study, known=known), _judgement_rows, 1),
    Section(lambda study, known: attention_check_query(study=study, known=known), _attention_rows),
    Section(lambda study, known: background_query(study=study, known=known), _background_rows),
)
