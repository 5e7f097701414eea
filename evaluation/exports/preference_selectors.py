"""A study's human judgments as preference pairs of texts (evaluation.exports.preference_pairs):
the reads. Who counts is the analysis's rule: lay answers of the analysed participants, radiologist
ratings of the counted ones, pairwise answers of participants who did not return."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import F

from annotation.answer_selectors import expert_ratings
from annotation.models import (
    PairwiseTask,
    Participant,
    Simplification,
    SimplificationText,
    Source,
    Study,
)
from annotation.selectors import analysed_participants, counted_participants
from evaluation.exports.preference_pairs import (
    PAIRWISE,
    PairSummary,
    Rating,
    Vote,
    aggregate_votes,
    best_worst_votes,
    rating_pairs,
)
from evaluation.selectors import EXPERT_ASPECTS
from privacy.selectors import source_texts
from surveys.lay.choices import lay_choices

DEFAULT_RATING_THRESHOLD = 1.0


@dataclass
class StudyPreferences:
    summary: PairSummary
    # Keyed as the pairs name them (Hashable in evaluation.exports.preference_pairs).
    texts: dict[Any, str]  # SimplificationText id -> text
    systems: dict[Any, list[str]]  # SimplificationText id -> the system keys that produced it
    originals: dict[Any, str]  # source key -> the sentence as exported (de-identified unless asked)
    # Whether `originals` holds the original reports (an owner asked) rather than de-identified text.
    original_reports: bool = False


def _lay_votes(study: Study) -> list[Vote]:
    choices = lay_choices(study=study, participants=analysed_participants(path="participant__"))
    texts_of: dict[int, list[int]] = {}
    for source_id, text_id in (
        SimplificationText.objects.filter(source__study=study).order_by("pk").values_list("source_id", "pk")
    ):
        texts_of.setdefault(source_id, []).append(text_id)
    votes: list[Vote] = []
    for choice in choices:
        own = texts_of.get(choice.source_id, [])
        order = [t for t in dict.fromkeys(choice.shown or []) if t in own] or own
        votes += best_worst_votes(
            source=choice.source_key, rater=choice.rater, most=choice.most, least=choice.least, shown=order
        )
    return votes


def _pairwise_votes(study: Study) -> list[Vote]:
    rows = (
        PairwiseTask.objects.filter(
            counted_participants(path="participant__"),
            participant__study=study,
            participant__returned_at__isnull=True,
            instrument__flow="pairwise",
        )
        .filter(
            participant__item_answers__instrument_id=F("instrument_id"),
            participant__item_answers__shown_text_id=F("left__shown_text_id"),
            participant__item_answers__reference_text_id=F("right__shown_text_id"),
        )
        .values_list(
            "participant__pseudonym",
            "source__key",
            "left__shown_text_id",
            "right__shown_text_id",
            "participant__item_answers__value",
        )
        .order_by("participant__pseudonym", "position")
    )
    votes = []
    for rater, source, left, right, value in rows:
        choice = (value or {}).get("choice") if isinstance(value, dict) else None
        if choice == "left":
            votes.append(Vote(PAIRWISE, source, rater, left, right))
        elif choice == "right":
            votes.append(Vote(PAIRWISE, source, rater, right, left))
        elif choice in ("tie", "neither"):
            votes.append(Vote(PAIRWISE, source, rater, left, right, tie=True))
    return votes


def _ratings(study: Study) -> list[Rating]:
    pseudonyms = dict(Participant.objects.filter(study=study).values_list("pk", "pseudonym"))
    sources = dict(Source.objects.filter(study=study).values_list("pk", "key"))
    ratings = []
    for row in expert_ratings(study=study, where=counted_participants(path="participant__")):
        rater, source, text = pseudonyms[row.participant_id], sources[row.source_id], row.shown_text_id
        scores = [getattr(row, aspect) for aspect in EXPERT_ASPECTS]
        given = [float(s) for s in scores if s is not None]
        if given:
            ratings.append(Rating(source, rater, text, sum(given) / len(given)))
    return ratings


def study_preferences(
    *, study: Study, rating_threshold: float = DEFAULT_RATING_THRESHOLD, originals: bool = False
) -> StudyPreferences:
    """The study's preference pairs, with each source's text as an export hands it out: de-identified
    unless `originals` (an owner's request, recorded by the caller)."""
    summary = aggregate_votes([*_lay_votes(study), *_pairwise_votes(study)])
    rating_pairs(_ratings(study), threshold=rating_threshold, summary=summary)
    used: list[Any] = list({t for pair in summary.pairs for t in (pair.chosen, pair.rejected)})
    texts: dict[Any, str] = dict(SimplificationText.objects.filter(pk__in=used).values_list("pk", "text"))
    systems: dict[Any, list[str]] = {}
    for text_id, key in (
        Simplification.objects.filter(shown_text_id__in=used)
        .order_by("system__position", "system__key")
        .values_list("shown_text_id", "system__key")
    ):
        systems.setdefault(text_id, []).append(key)
    sources = list(study.sources.all())
    shown = source_texts(sources=sources, audience="export", originals=originals)
    sentences: dict[Any, str] = {source.key: shown[source.pk] for source in sources}
    return StudyPreferences(
        summary=summary, texts=texts, systems=systems, originals=sentences, original_reports=originals
    )
