"""Reads of the evaluation app: the stored per-text metrics, what the analysis of a study would
cover now, and its analysis snapshots. The database as pandas frames for the Django-free analysis
is read by evaluation/analysis/study_frames.py, which only the worker or command that computes an analysis
imports; participant progress and the Latin-square balance are in evaluation/progress.py.
"""

from __future__ import annotations

import json
from typing import Any

from django.db.models import Count, Max, TextField
from django.db.models.functions import Cast

from annotation import scales
from annotation.answer_selectors import typed_answer_coverage
from annotation.models import (
    Simplification,
    Source,
    Study,
    System,
)
from annotation.selectors import counted_participants
from evaluation.analysis.document import join_details
from evaluation.models import AdjudicatedLabel, AnalysisSnapshot, SystemMetrics, TextMetrics

LAY_QUESTIONS = scales.LAY_QUESTIONS
EXPERT_ASPECTS = tuple(scales.EXPERT_ASPECTS)
FETCH_CHUNK = 50_000


# --- stored per-text metrics -----------------------------------------------------------------------


def _score(value: Any) -> float | None:
    # TextMetrics.scores writes an infinite value as "inf" / "-inf" (JSON has no infinity).
    return float(value) if isinstance(value, str) else value


def text_metrics_stored(*, study: Study, kind: str, configuration: str) -> dict[str, dict[str, float | None]]:
    """{inputs digest: {metric: value}} of the study's stored per-text values of `kind` under
    `configuration` (see TextMetrics). The JSON of every row is decoded in one call, not row by
    row: 180 000 rows at 20 000 sources."""
    rows = (
        TextMetrics.objects.filter(source__study=study, kind=kind, configuration=configuration)
        .order_by()
        .values_list("inputs", Cast("scores", TextField()))
    )
    digests, texts = [], []
    for digest, text in rows.iterator(chunk_size=FETCH_CHUNK):
        digests.append(digest)
        texts.append(text)
    joined = f"[{','.join(texts)}]"
    del texts
    scores = json.loads(joined)
    stored = dict(zip(digests, scores, strict=True))
    if '"inf"' in joined or '"-inf"' in joined:
        for values in scores:
            if any(isinstance(value, str) for value in values.values()):
                values.update((name, _score(value)) for name, value in values.items())
    return stored


def system_metrics_stored(
    *, study: Study, configuration: str
) -> dict[str, tuple[str, dict[str, float | None]]]:
    """{system key: (inputs digest, {metric: value})} of the study's stored corpus values under
    `configuration` (see SystemMetrics)."""
    rows = SystemMetrics.objects.filter(system__study=study, configuration=configuration).values_list(
        "system__key", "inputs", "scores"
    )
    return {
        key: (inputs, {name: _score(value) for name, value in scores.items()}) for key, inputs, scores in rows
    }


# --- analysis snapshots ----------------------------------------------------------------------------


# The answer tables (and the adjudicated labels) whose rows the analysis reads; their counts and
# last change say whether a snapshot still covers the study's data.
def _coverage_querysets(study: Study) -> dict[str, object]:
    # Previews' and pilots' answers are in no analysis, so they never make a snapshot stale.
    return {
        "simplifications": Simplification.objects.filter(source__study=study),
        # An adjudicated label recorded, revised or removed changes the adjudication section.
        "adjudicated_labels": AdjudicatedLabel.objects.filter(study=study),
    }


ANSWER_TABLES = ("lay_answers", "lay_preferences", "expert_ratings", "expert_judgements")


def analysis_coverage(*, study: Study) -> dict:
    """What the analysis of `study` would cover now: per table the row count and the last
    change, plus the study's own last change and its numbers of sources and systems. Cheap: one
    aggregate per table, no row is read. (A source's text or reference severity edited in place
    changes none of these; the dashboard's "recompute" button covers that.)"""
    coverage: dict = {
        "study_updated_at": study.updated_at.isoformat() if study.updated_at else "",
        "sources": Source.objects.filter(study=study).count(),
        "systems": System.objects.filter(study=study).count(),
    }
    # The protocol's answers in their typed shapes (annotation/answer_selectors.py).
    typed = typed_answer_coverage(study=study, where=counted_participants(path="participant__"))
    for name, (n, last) in typed.items():
        coverage[name] = {"n": n, "last": last.isoformat() if last else ""}
    for name, queryset in _coverage_querysets(study).items():
        aggregate = queryset.aggregate(n=Count("pk"), last=Max("updated_at"))
        coverage[name] = {
            "n": aggregate["n"],
            "last": aggregate["last"].isoformat() if aggregate["last"] else "",
        }
    coverage["n_answers"] = sum(coverage[name]["n"] for name in ANSWER_TABLES)
    coverage["last_answer_at"] = max((coverage[name]["last"] for name in ANSWER_TABLES), default="") or None
    return coverage


def analysis_snapshot_get(*, study: Study, details: bool = False) -> AnalysisSnapshot | None:
    """The study's snapshot row; without `details` the long per-item sections and the figures
    stay in the database (the dashboard's first paint needs neither)."""
    # `document` (the same analysis as one JSON text) is read only where it is served.
    queryset = AnalysisSnapshot.objects.filter(study=study).defer("document")
    if not details:
        queryset = queryset.defer("details", "figures")
    return queryset.first()


def snapshot_analysis(snapshot: AnalysisSnapshot | None, *, details: bool = True) -> dict[str, Any] | None:
    """The analysis document of a snapshot: `result` with its `details` put back in place (see
    evaluation.analysis.document.split_details), or None before the first computation."""
    if snapshot is None or snapshot.result is None:
        return None
    if not details:
        return snapshot.result
    return join_details(snapshot.result, snapshot.details or {})


def snapshot_analysis_json(
    snapshot: AnalysisSnapshot | None,
    *,
    extra: dict[str, Any] | None = None,
    encoder: type[json.JSONEncoder] | None = None,
) -> str | None:
    """The analysis document of a snapshot, as `snapshot_analysis` gives it, plus the keys of
    `extra` (encoded with `encoder`), as JSON text; None before the first computation. The stored
    text is served as it is (megabytes at 20 000 sources): nothing long is decoded or encoded."""
    if snapshot is None or snapshot.result is None:
        return None
    document = AnalysisSnapshot.objects.filter(pk=snapshot.pk).values_list("document", flat=True).first()
    if not document or not document.endswith("}") or document == "{}":
        analysis = snapshot_analysis(
            AnalysisSnapshot.objects.defer("figures", "document").get(pk=snapshot.pk)
        )
        assert analysis is not None  # the snapshot checked above has its result
        return json.dumps({**analysis, **(extra or {})}, cls=encoder, ensure_ascii=False, allow_nan=False)
    if not extra:
        return document
    added = json.dumps(extra, cls=encoder, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return f"{document[:-1]},{added[1:]}"
