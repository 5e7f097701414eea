"""Reads for the ml app: which (source, simplification) pairs of a study to fine-tune on."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from annotation import scales
from annotation.answer_selectors import expert_ratings, lay_preferences
from annotation.models import Participant, SimplificationText, Study
from ml.corpora import SimplificationPair
from ml.models import ModelArtifact, TrainingJob
from privacy.selectors import source_texts

FILTER_KINDS = ("all", "expert_min", "lay_preferred")


@dataclass(frozen=True)
class PairFilter:
    """Which human judgements make a simplification worth training on.

    - ``all``: every distinct text shown for a source.
    - ``expert_min`` (``expert_min:k``): texts rated by at least one radiologist where every
      radiologist who rated the text gave at least k on all five aspects. A rating with an aspect
      left empty does not meet the bar (the radiologist has not vouched for that aspect).
    - ``lay_preferred``: per source, the text(s) with the most "most preferred" votes of lay
      participants (ties keep every tied text; a source nobody voted on contributes nothing).
    """

    kind: str = "all"
    min_score: int | None = None

    @classmethod
    def parse(cls, value: str | Mapping[str, Any] | PairFilter | None) -> PairFilter:
        """From ``"expert_min:4"``, ``"lay_preferred"``, ``"all"`` or their JSON form."""
        if isinstance(value, PairFilter):
            return value
        if not value:
            return cls()
        if isinstance(value, str):
            kind, _, argument = value.strip().partition(":")
            min_score: Any = argument or None
        else:
            kind, min_score = value.get("kind", "all"), value.get("min_score")
        if kind not in FILTER_KINDS:
            raise ValueError(f"unknown pair filter {kind!r}; use all, expert_min:K or lay_preferred")
        if kind == "expert_min":
            try:
                min_score = int(min_score) if min_score is not None else 4
            except (TypeError, ValueError):
                raise ValueError(f"expert_min needs an integer score 1-5, got {min_score!r}") from None
            if not 1 <= min_score <= 5:
                raise ValueError("expert_min's score must be between 1 and 5")
        elif min_score is not None:
            raise ValueError(f"{kind} takes no argument")
        return cls(kind=kind, min_score=min_score)

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **({"min_score": self.min_score} if self.min_score is not None else {})}

    def __str__(self) -> str:
        return f"{self.kind}:{self.min_score}" if self.min_score is not None else self.kind


def _study_texts(study: Study):
    # Only texts some system actually produced (a text row outlives nothing, but be explicit).
    return SimplificationText.objects.filter(source__study=study, simplifications__isnull=False).distinct()


def training_texts_for_study(*, study: Study, filter: PairFilter | str | Mapping[str, Any] | None = None):
    """The SimplificationText rows chosen by `filter`, ordered by source position then id."""
    pair_filter = PairFilter.parse(filter)
    texts = _study_texts(study)
    if pair_filter.kind == "expert_min":
        k = pair_filter.min_score
        # Every radiologist's rating of a text (one per participant and text; an aspect left
        # empty is None and does not meet the bar).
        ratings = expert_ratings(study=study, where=Q(participant__role=Participant.Role.RADIOLOGIST))
        rated: set[int] = set()
        below: set[int] = set()
        for rating in ratings:
            rated.add(rating.shown_text_id)
            if any(
                (score := getattr(rating, aspect)) is None or score < k for aspect in scales.EXPERT_ASPECTS
            ):
                below.add(rating.shown_text_id)
        texts = texts.filter(pk__in=sorted(rated - below))
    elif pair_filter.kind == "lay_preferred":
        # A text's votes: the lay panel-3 answers (one per participant and source) naming it most liked.
        counts: Counter[int] = Counter()
        for preference in lay_preferences(study=study):
            counts.update(preference.most)
        votes = list(
            texts.filter(pk__in=sorted(pk for pk, n in counts.items() if n > 0)).values_list(
                "pk", "source_id"
            )
        )
        best: dict[int, int] = {}
        for pk, source_id in votes:
            best[source_id] = max(best.get(source_id, 0), counts[pk])
        texts = SimplificationText.objects.filter(
            pk__in=[pk for pk, source_id in votes if counts[pk] == best[source_id]]
        )
    return texts.select_related("source").order_by("source__position", "pk")


def training_pairs_for_study(
    *, study: Study, filter: PairFilter | str | Mapping[str, Any] | None = None
) -> list[SimplificationPair]:
    """(source text, simplification text) pairs of `study` chosen by human judgement (PairFilter).
    The source text is what a model is given (privacy.selectors.source_texts): de-identified, as
    the texts were generated from it, so a fine-tuned model never learns the originals."""
    texts = list(training_texts_for_study(study=study, filter=filter))
    shown = source_texts(sources=[t.source for t in texts], audience="model")
    return [SimplificationPair(source=shown[t.source_id], target=t.text) for t in texts]


def model_artifact_for_path(*, path: str) -> ModelArtifact | None:
    return ModelArtifact.objects.filter(path=path).order_by("created_at").first()


def training_job_progress(*, job_id: int) -> dict[str, Any]:
    """What the admin's live progress bar polls."""
    job = TrainingJob.objects.only("status", "progress", "error", "output_artifact").get(pk=job_id)
    return {
        "status": job.status,
        "progress": job.progress,
        "error": job.error[-2000:],
        "output_artifact_id": job.output_artifact_id,
    }
