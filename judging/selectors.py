"""Reads of the judging app: a run's progress and items, the judge answers for the export, and the
study's judge leaderboard. The inputs of a run's agreement with the humans (pandas frames) are read
by judging.agreement_inputs.

Judge answers are read only from judging's own tables, so they cannot stand in for human answers.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet

from annotation.models import Simplification, Study
from judging.agreement_terms import RUBRIC_FIELDS
from judging.models import JudgeAnswer, JudgeItem, JudgeRun
from judging.services import QUEUE
from work.selectors import WorkProgress, work_progress

_Status = JudgeItem.Status


def run_progress(*, run: JudgeRun) -> WorkProgress:
    """Counts, usage, timing and stuck items of a run (work.selectors.work_progress)."""
    return work_progress(QUEUE, batch=run, describe=_item_label)


def _item_label(item: JudgeItem) -> str:
    return f"{item.source.key} {item.task}" + (f" text {item.shown_text_id}" if item.shown_text_id else "")


def runs_of_study(*, study: Study) -> QuerySet[JudgeRun]:
    return JudgeRun.objects.filter(study=study).select_related("study", "created_by")


def run_items(*, run: JudgeRun, status: str | None = None) -> QuerySet[JudgeItem]:
    items = (
        JudgeItem.objects.filter(run=run)
        .select_related("source", "shown_text", "answer")
        .order_by("source__position", "task", "shown_text_id")
    )
    return items.filter(status=status) if status else items


def failure_counts(*, run: JudgeRun) -> dict[str, int]:
    rows = (
        JudgeItem.objects.filter(run=run, status=_Status.FAILED)
        .values_list("failure_kind")
        .annotate(n=Count("pk"))
    )
    return {kind or "other": n for kind, n in rows}


# --- export and leaderboard ---------------------------------------------------------------------------------

ANSWER_COLUMNS = [
    "run",
    "judge",
    "is_heuristic",
    "backend",
    "model",
    "prompt_version",
    "prompt_digest",
    "temperature",
    "samples",
    "task",
    "source",
    "text_id",
    "systems",
    "status",
    "failure_kind",
    "error",
    *JudgeAnswer.FIELDS,
    "n_samples",
    "spread",
    "raw_outputs",
    # An instrument-items task (judging/instrument_items.py): the instrument and version asked, the
    # reference text of a pair, and the answer per item key (value and numeric score).
    "instrument",
    "reference_text_id",
    "item_values",
    "item_scores",
]


def judge_identity(run: JudgeRun) -> dict[str, Any]:
    """Who judged, as the API and the judge answers CSV describe a run."""
    return {
        "judge": run.label,
        "is_heuristic": run.is_heuristic,
        "backend": run.backend,
        "model": run.model_name,
        "prompt_version": run.prompt_version,
        "prompt_digest": run.prompt_digest,
    }


def judge_answer_rows(*, study: Study):
    """One row per judge item of the study's runs (failed items too, with their error and no
    scores). Severity columns use Critical = 1 … Healthy = 5."""
    systems_of: dict[int, list[str]] = {}
    for text_id, key in Simplification.objects.filter(source__study=study).values_list(
        "shown_text_id", "system__key"
    ):
        systems_of.setdefault(text_id, []).append(key)
    items = (
        JudgeItem.objects.filter(run__study=study)
        .select_related("run", "source", "answer", "instrument")
        .order_by("run_id", "source__position", "task", "shown_text_id")
    )
    for item in items.iterator(chunk_size=500):
        run = item.run
        answer = getattr(item, "answer", None)
        yield {
            "run": run.pk,
            **judge_identity(run),
            "temperature": run.parameters.get("temperature"),
            "samples": run.samples,
            "task": item.task,
            "source": item.source.key,
            "text_id": item.shown_text_id or "",
            "systems": ";".join(systems_of.get(item.shown_text_id, [])) if item.shown_text_id else "",
            "status": item.status,
            "failure_kind": item.failure_kind,
            "error": item.error,
            **{name: getattr(answer, name) if answer else None for name in JudgeAnswer.FIELDS},
            "n_samples": answer.n_samples if answer else None,
            "spread": answer.spread if answer else None,
            "raw_outputs": answer.raw_outputs if answer else None,
            "instrument": f"{item.instrument.key} v{item.instrument.version}" if item.instrument else "",
            "reference_text_id": item.reference_text_id or "",
            "item_values": answer.item_values if answer and answer.item_values else "",
            "item_scores": answer.item_scores if answer and answer.item_scores else "",
        }


def metric_rows(analysis: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The automatic metrics as leaderboard rows: for each per-text metric, its Spearman ρ and
    Kendall τ with the radiologists' mean rating of each simplification (the analysis' item-level
    metric–human correlations), averaged over the five rubric aspects. A metric on another scale
    has no α, κ or ICC with a 1–5 rating, so those cells stay empty. Pure: reads the document."""
    if not analysis:
        return []
    by_metric: dict[str, dict[str, list[float]]] = {}
    counts: dict[str, int] = {}
    for record in analysis.get("correlations") or []:
        if record.get("level") != "item" or record.get("measure") not in RUBRIC_FIELDS:
            continue
        if record.get("method") not in ("spearman", "kendall") or record.get("r") is None:
            continue
        by_metric.setdefault(record["metric"], {}).setdefault(record["method"], []).append(record["r"])
        counts[record["metric"]] = max(counts.get(record["metric"], 0), int(record.get("n") or 0))
    rows = []
    for metric, methods in by_metric.items():
        rows.append(
            {
                "run": None,
                "label": metric,
                "kind": "automatic metric",
                "is_heuristic": False,
                "against": "radiologists' mean per simplification",
                "n": counts[metric],
                "spearman": sum(methods["spearman"]) / len(methods["spearman"])
                if "spearman" in methods
                else None,
                "kendall": sum(methods["kendall"]) / len(methods["kendall"])
                if "kendall" in methods
                else None,
            }
        )
    return rows


def _strength(row: dict[str, Any]) -> float:
    # A metric may track the humans inversely (a grade level falls as a text gets simpler): rank
    # by the size of the rank correlation, and show its sign.
    return abs(row["spearman"]) if row.get("spearman") is not None else -1.0


def leaderboard(*, study: Study, analysis: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The study's judges with a stored agreement and the automatic metrics of the study's analysis
    snapshot (`analysis`, default: the stored one), strongest rank correlation with the
    radiologists first."""
    rows = []
    for run in runs_of_study(study=study).exclude(agreement_computed_at=None):
        rows.append(
            {
                "run": run,
                "label": run.label,
                "kind": "heuristic judge" if run.is_heuristic else "LLM judge",
                "is_heuristic": run.is_heuristic,
                **(run.agreement.get("summary") or {}),
            }
        )
    if analysis is None:
        from evaluation.selectors import analysis_snapshot_get, snapshot_analysis

        analysis = snapshot_analysis(analysis_snapshot_get(study=study, details=True))
    rows += metric_rows(analysis)
    return sorted(rows, key=_strength, reverse=True)
