"""Every raw answer of a study as rows of one long table (one row per answer to one question),
read with `.iterator()` so that a large study streams instead of loading into memory.

Rows are tuples in the order of `answer_columns()`. Values are written as the level name the
participant chose (`value`) and as its number in radlay's coding (`value_number`, see
annotation/scales.py: severity Critical = 1 … Healthy = 5; Q1 1–4; Q2 1–3; Q4 −1..2; radiologist
aspects 1–5). `time_spent_ms` is the time spent on the whole panel the answer belongs to.
Pseudonymous by default: the recruiter's external id only with `include_external_ids=True`.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from annotation import scales
from annotation.models import (
    AttentionCheckResponse,
    ExpertRating,
    ExpertSourceJudgement,
    LayAnswer,
    LayPreference,
    Study,
)
from annotation.selectors import systems_by_text
from evaluation.selectors import EXPERT_ASPECTS, LAY_QUESTIONS, participant_label

CHUNK = 2000
COLUMNS = (
    "study",
    "participant",
    "role",
    "source",
    "systems",
    "assigned_system",
    "text_id",
    "phase",
    "question",
    "value",
    "value_number",
    "time_spent_ms",
    "created_at",
    "updated_at",
)


def answer_columns(*, include_external_ids: bool = False) -> tuple[str, ...]:
    if include_external_ids:
        return (*COLUMNS[:2], "external_id", *COLUMNS[2:])
    return COLUMNS


def _time(value: datetime | None) -> str:
    return value.isoformat() if value else ""


def answer_rows(*, study: Study, include_external_ids: bool = False) -> Iterator[tuple[Any, ...]]:
    """Yield one tuple per answer: lay panels 1–2 (one row per question), panel-3 choices (one row
    per chosen text) and justifications, radiologist ratings (one row per aspect) and comments,
    radiologists' judgements of the originals, attention checks."""
    slug = study.slug
    text_systems = {text_id: ";".join(keys) for text_id, keys in systems_by_text(study=study).items()}
    likert = {level.value: level.name for level in scales.LIKERT.levels}

    def row(
        participant_id,
        pseudonym,
        external_id,
        role,
        source,
        text_id,
        assigned,
        phase,
        question,
        value,
        number,
        time_spent,
        created,
        updated,
    ) -> tuple[Any, ...]:
        head = (slug, participant_label(pseudonym, participant_id))
        if include_external_ids:
            head = (*head, external_id)
        return (
            *head,
            role,
            source,
            text_systems.get(text_id, "") if text_id else "",
            assigned or "",
            text_id or "",
            phase,
            question,
            value,
            number,
            time_spent,
            _time(created),
            _time(updated),
        )

    participant = (
        "participant_id",
        "participant__pseudonym",
        "participant__external_id",
        "participant__role",
    )
    item_participant = tuple(f"item__{field}" for field in participant)

    codes = {
        question: {lvl.name: lvl.value for lvl in scales.LAY_SCALES[question].levels}
        for question in LAY_QUESTIONS
    }
    for values in (
        LayAnswer.objects.filter(item__participant__study=study)
        .order_by("item__participant_id", "item__position", "phase")
        .values_list(
            *item_participant,
            "item__source__key",
            "item__shown_text_id",
            "item__assigned_system__key",
            "phase",
            *LAY_QUESTIONS,
            "time_spent_ms",
            "created_at",
            "updated_at",
        )
        .iterator(chunk_size=CHUNK)
    ):
        p_id, pseudonym, external, role, source, text_id, assigned, phase = values[:8]
        answers = values[8 : 8 + len(LAY_QUESTIONS)]
        time_spent, created, updated = values[8 + len(LAY_QUESTIONS) :]
        for question, answer in zip(LAY_QUESTIONS, answers, strict=True):
            if answer:
                yield row(
                    p_id,
                    pseudonym,
                    external,
                    role,
                    source,
                    text_id,
                    assigned,
                    phase,
                    question,
                    answer,
                    codes[question][answer],
                    time_spent,
                    created,
                    updated,
                )

    for side in ("most", "least"):
        through = getattr(LayPreference, side).through
        for p_id, pseudonym, external, role, source, assigned, text_id, time_spent, created, updated in (
            through.objects.filter(laypreference__item__participant__study=study)
            .order_by(
                "laypreference__item__participant_id",
                "laypreference__item__position",
                "simplificationtext_id",
            )
            .values_list(
                *(f"laypreference__{f}" for f in item_participant),
                "laypreference__item__source__key",
                "laypreference__item__assigned_system__key",
                "simplificationtext_id",
                "laypreference__time_spent_ms",
                "laypreference__created_at",
                "laypreference__updated_at",
            )
            .iterator(chunk_size=CHUNK)
        ):
            yield row(
                p_id,
                pseudonym,
                external,
                role,
                source,
                text_id,
                assigned,
                "preference",
                f"{side}_preferred",
                text_systems.get(text_id, ""),
                1,
                time_spent,
                created,
                updated,
            )
    for values in (
        LayPreference.objects.filter(item__participant__study=study)
        .exclude(most_justification="", least_justification="")
        .order_by("item__participant_id", "item__position")
        .values_list(
            *item_participant,
            "item__source__key",
            "item__assigned_system__key",
            "most_justification",
            "least_justification",
            "time_spent_ms",
            "created_at",
            "updated_at",
        )
        .iterator(chunk_size=CHUNK)
    ):
        p_id, pseudonym, external, role, source, assigned, most, least, time_spent, created, updated = values
        for question, text in (("most_justification", most), ("least_justification", least)):
            if text:
                yield row(
                    p_id,
                    pseudonym,
                    external,
                    role,
                    source,
                    None,
                    assigned,
                    "preference",
                    question,
                    text,
                    None,
                    time_spent,
                    created,
                    updated,
                )

    for values in (
        ExpertRating.objects.filter(participant__study=study)
        .order_by("participant_id", "shown_text__source__position", "shown_text_id")
        .values_list(
            *participant,
            "shown_text__source__key",
            "shown_text_id",
            *EXPERT_ASPECTS,
            "comment",
            "time_spent_ms",
            "created_at",
            "updated_at",
        )
        .iterator(chunk_size=CHUNK)
    ):
        p_id, pseudonym, external, role, source, text_id = values[:6]
        scores = values[6 : 6 + len(EXPERT_ASPECTS)]
        comment, time_spent, created, updated = values[6 + len(EXPERT_ASPECTS) :]
        for aspect, score in zip(EXPERT_ASPECTS, scores, strict=True):
            if score is not None:
                yield row(
                    p_id,
                    pseudonym,
                    external,
                    role,
                    source,
                    text_id,
                    None,
                    "expert",
                    aspect,
                    likert[score],
                    score,
                    time_spent,
                    created,
                    updated,
                )
        if comment:
            yield row(
                p_id,
                pseudonym,
                external,
                role,
                source,
                text_id,
                None,
                "expert",
                "comment",
                comment,
                None,
                time_spent,
                created,
                updated,
            )

    severity = {level.name: level.value for level in scales.SEVERITY.levels}
    for values in (
        ExpertSourceJudgement.objects.filter(participant__study=study)
        .order_by("participant_id", "source__position")
        .values_list(
            *participant,
            "source__key",
            "severity",
            "simplicity",
            "comment",
            "time_spent_ms",
            "created_at",
            "updated_at",
        )
        .iterator(chunk_size=CHUNK)
    ):
        p_id, pseudonym, external, role, source, level, simplicity, comment, time_spent, created, updated = (
            values
        )
        if level:
            yield row(
                p_id,
                pseudonym,
                external,
                role,
                source,
                None,
                None,
                "original",
                "severity",
                level,
                severity[level],
                time_spent,
                created,
                updated,
            )
        if simplicity is not None:
            yield row(
                p_id,
                pseudonym,
                external,
                role,
                source,
                None,
                None,
                "original",
                "original_simplicity",
                likert[simplicity],
                simplicity,
                time_spent,
                created,
                updated,
            )
        if comment:
            yield row(
                p_id,
                pseudonym,
                external,
                role,
                source,
                None,
                None,
                "original",
                "comment",
                comment,
                None,
                time_spent,
                created,
                updated,
            )

    for values in (
        AttentionCheckResponse.objects.filter(participant__study=study)
        .order_by("participant_id", "check_item__position")
        .values_list(*participant, "check_item__position", "answer", "passed", "answered_at")
        .iterator(chunk_size=CHUNK)
    ):
        p_id, pseudonym, external, role, position, answer, passed, answered = values
        yield row(
            p_id,
            pseudonym,
            external,
            role,
            "",
            None,
            None,
            "attention_check",
            f"attention_check_{position}",
            answer,
            int(passed),
            0,
            answered,
            answered,
        )
