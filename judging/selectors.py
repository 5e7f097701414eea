"""Reads of the judging app: a run's progress and items, the inputs of its agreement with the
humans, the judge answers for the export, and the study's judge leaderboard.

Human answers are read here only as the *other side* of a comparison (radiologists' ExpertRating /
ExpertSourceJudgement, laypeople's LayAnswer, all through Participant); judge answers are read only
from judging's own tables, so neither can stand in for the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pandas as pd
from django.db.models import Count, QuerySet
from django.utils import timezone

from annotation import scales
from annotation.models import (
    ExpertRating,
    ExpertSourceJudgement,
    LayAnswer,
    Participant,
    Simplification,
    Study,
)
from generation.selectors import WorkProgress, work_counts
from judging.agreement import RUBRIC_FIELDS, AgreementInputs
from judging.models import JudgeAnswer, JudgeItem, JudgeRun

_Status = JudgeItem.Status


@dataclass(frozen=True)
class RunProgress(WorkProgress):
    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "running": self.running,
            "pending": self.pending,
            "cancelled": self.cancelled,
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": self.cost_usd,
            "elapsed_seconds": self.elapsed.total_seconds(),
            "finished": self.finished,
        }


def run_progress(*, run: JudgeRun) -> RunProgress:
    fields, _ = work_counts(JudgeItem.objects.filter(run=run), _Status)
    end = run.finished_at or timezone.now()
    return RunProgress(
        **fields,
        elapsed=max(end - run.created_at, timedelta(0)),
        finished=run.finished_at is not None,
    )


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


# --- agreement inputs ------------------------------------------------------------------------------------


def _radiologists(study: Study) -> QuerySet[Participant]:
    return Participant.objects.filter(study=study, role=Participant.Role.RADIOLOGIST)


def _rater_name(participant_id: int, pseudonym: str) -> str:
    return pseudonym or f"#{participant_id}"


def agreement_inputs(*, run: JudgeRun) -> AgreementInputs:
    study = run.study
    # A rubric unit is one simplification (source × system): a text two systems share was rated once,
    # and that rating (like the judge's answer) counts for both, as in the protocol's Table 1.
    text_systems = list(
        Simplification.objects.filter(source__study=study).values_list("shown_text_id", "system__key")
    )
    systems_of: dict[int, list[str]] = {}
    for text_id, key in text_systems:
        systems_of.setdefault(text_id, []).append(key)
    human_rows: list[tuple[str, str, int, str, float]] = []
    for pid, pseudonym, text_id, source_id, *values in ExpertRating.objects.filter(
        participant__in=_radiologists(study)
    ).values_list(
        "participant_id", "participant__pseudonym", "shown_text_id", "shown_text__source_id", *RUBRIC_FIELDS
    ):
        for name, value in zip(RUBRIC_FIELDS, values, strict=True):
            if value is None:
                continue
            for system in systems_of.get(text_id, []):
                human_rows.append(
                    (_rater_name(pid, pseudonym), f"t{text_id}:{system}", source_id, name, float(value))
                )
    for pid, pseudonym, source_id, severity, simplicity in ExpertSourceJudgement.objects.filter(
        participant__in=_radiologists(study)
    ).values_list("participant_id", "participant__pseudonym", "source_id", "severity", "simplicity"):
        rater = _rater_name(pid, pseudonym)
        if severity:
            human_rows.append(
                (rater, f"s{source_id}", source_id, "severity", float(scales.SEVERITY.value_of(severity)))
            )
        if simplicity is not None:
            human_rows.append((rater, f"s{source_id}", source_id, "original_simplicity", float(simplicity)))
    human = pd.DataFrame(human_rows, columns=["rater", "unit", "source", "field", "value"])

    answers = JudgeAnswer.objects.filter(item__run=run, item__status=_Status.SUCCEEDED).select_related("item")
    judge_rows: list[tuple[str, int, str, float]] = []
    lay_rows: list[dict[str, Any]] = []
    references = {
        pk: scales.SEVERITY.value_of(level) if level else None
        for pk, level in study.sources.values_list("pk", "reference_severity")
    }
    for answer in answers:
        item = answer.item
        if item.task == "radiologist_text":
            for system in systems_of.get(item.shown_text_id, []):
                for name in RUBRIC_FIELDS:
                    judge_rows.append(
                        (f"t{item.shown_text_id}:{system}", item.source_id, name, getattr(answer, name))
                    )
        elif item.task == "radiologist_source":
            judge_rows.append((f"s{item.source_id}", item.source_id, "severity", answer.severity))
            judge_rows.append(
                (f"s{item.source_id}", item.source_id, "original_simplicity", answer.original_simplicity)
            )
        elif item.task == "lay_original":
            lay_rows.append(
                {
                    "source": item.source_id,
                    "phase": "original",
                    "system": None,
                    "guess": answer.severity_guess,
                    "reference": references.get(item.source_id),
                }
            )
        else:
            for system in systems_of.get(item.shown_text_id, []):
                lay_rows.append(
                    {
                        "source": item.source_id,
                        "phase": "assisted",
                        "system": system,
                        "guess": answer.severity_guess,
                        "reference": references.get(item.source_id),
                    }
                )
    judge = pd.DataFrame(judge_rows, columns=["unit", "source", "field", "value"])

    lay_human_rows = [
        {
            "source": source_id,
            "phase": phase,
            "system": system if phase == LayAnswer.Phase.ASSISTED else None,
            "guess": scales.SEVERITY.value_of(guess) if guess else None,
            "reference": scales.SEVERITY.value_of(reference) if reference else None,
        }
        for source_id, phase, system, guess, reference in LayAnswer.objects.filter(
            item__participant__study=study, item__participant__role=Participant.Role.LAYPERSON
        ).values_list(
            "item__source_id",
            "phase",
            "item__assigned_system__key",
            "severity_guess",
            "item__source__reference_severity",
        )
    ]
    columns = ["source", "phase", "system", "guess", "reference"]
    return AgreementInputs(
        human=human,
        judge=judge,
        text_systems=pd.DataFrame([(f"t{t}:{k}", k) for t, k in text_systems], columns=["unit", "system"]),
        lay_judge=pd.DataFrame(lay_rows, columns=columns),
        lay_humans=pd.DataFrame(lay_human_rows, columns=columns),
    )


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
        .select_related("run", "source", "answer")
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
