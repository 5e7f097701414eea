"""What a study archive holds: every table whose rows belong to one study, in the order they are
written (parents first), and every other table that reaches a study with the reason it stays out.

`study_reaching_models` walks Django's app registry: a model belongs to a study when a chain of
foreign keys leads from it to Study. Every such model must be in ARCHIVED or EXCLUDED (a test walks
the registry): a new model is never lost from archives silently.

Besides foreign keys, a few JSON columns hold keys of other archived rows (a radiologist page's
text order and planted-control slots, a lay item's panel-3 order, an answer revision's answer);
JSON_KEYS names them, so that an import points them at the copy's rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import models

from annotation.models import (
    AnswerRevision,
    AttentionCheck,
    AttentionCheckResponse,
    ConsentRefusal,
    ExpertItem,
    ItemAnswer,
    LayItem,
    PairwiseTask,
    Participant,
    PlantedControl,
    Simplification,
    SimplificationText,
    Source,
    Study,
    StudyInstrument,
    System,
)
from privacy.models import DataPolicy, DeidFinding, SourceDeidentification


@dataclass(frozen=True)
class Table:
    """One archived table: its model and the lookup from a row to its study's key."""

    model: type[models.Model]
    study_path: str
    # JSON columns holding keys of archived rows: column -> (shape, model of the keys). Shapes:
    # "list" (a list of keys), "slots" (a list of [index, key] pairs).
    json_keys: dict[str, tuple[str, type[models.Model]]] = field(default_factory=dict)
    # Columns left to the database's own checks rather than the field's validation.
    unchecked: tuple[str, ...] = ()
    # Written only when an owner asks for the original reports; otherwise left out, with this
    # reason in the manifest.
    originals_only: str = ""

    @property
    def label(self) -> str:
        return self.model._meta.label_lower


# Parents before children, so that every reference is known when a row is written.
ARCHIVED: tuple[Table, ...] = (
    Table(Study, "pk"),
    Table(DataPolicy, "study"),
    # Source.text: the de-identified text unless an owner asks for originals (study_archive.py).
    Table(Source, "study"),
    Table(SourceDeidentification, "source__study"),
    Table(
        DeidFinding,
        "source__study",
        originals_only="holds the identifiers found in the original reports (the spans' "
        "original text): it travels only when an owner asks for the originals",
    ),
    Table(System, "study"),
    Table(SimplificationText, "source__study"),
    Table(Simplification, "source__study"),
    Table(StudyInstrument, "study"),
    Table(PlantedControl, "study"),
    Table(AttentionCheck, "study"),
    Table(Participant, "study"),
    Table(
        ExpertItem,
        "participant__study",
        {"text_order": ("list", SimplificationText), "control_slots": ("slots", PlantedControl)},
    ),
    Table(LayItem, "participant__study", {"preference_order": ("list", SimplificationText)}),
    Table(AttentionCheckResponse, "participant__study"),
    Table(ConsentRefusal, "study"),
    Table(ItemAnswer, "participant__study"),
    Table(PairwiseTask, "participant__study"),
    # The judges' tables by name: evaluation imports no judging (judging builds on evaluation).
    Table(apps.get_model("judging", "JudgeRun"), "study"),
    # JudgeItem.task's choices carry the tasks' labels as values; the database's check
    # (judge_item_task) holds the stored values, and checks them.
    Table(apps.get_model("judging", "JudgeItem"), "run__study", unchecked=("task",)),
    Table(apps.get_model("judging", "JudgeAnswer"), "item__run__study"),
    # The study's AI-assisted span marking (its judge run and seeds): the copy shows the same pages.
    Table(apps.get_model("judging", "SpanAssistance"), "study"),
    # The adjudicators' consensus labels, beside the answers: the adjudicator's account is not
    # moved (adjudicator_label keeps who).
    Table(apps.get_model("evaluation", "AdjudicatedLabel"), "study"),
    # The qualification round: the team's rules, each attempt and its practice answers (kept
    # apart from the study's answers there as here).
    Table(apps.get_model("qualification", "QualificationRule"), "study"),
    Table(apps.get_model("qualification", "QualificationAttempt"), "participant__study"),
    Table(apps.get_model("qualification", "PracticeAnswer"), "attempt__participant__study"),
    # Last: a revision names its answer by model and key (answer_type, answer_id).
    Table(AnswerRevision, "participant__study"),
)


def archived_tables(*, originals: bool) -> tuple[Table, ...]:
    """The tables an archive writes: all of ARCHIVED with the originals, else those that hold no
    identifier."""
    return tuple(table for table in ARCHIVED if originals or not table.originals_only)


def excluded_tables(*, originals: bool) -> dict[str, str]:
    """The tables an archive leaves out, with the reason its manifest gives."""
    left_out = {t.label: t.originals_only for t in ARCHIVED if t.originals_only and not originals}
    return {**EXCLUDED, **left_out}


# Tables that reach a study but stay out of its archive, and why (written into the manifest).
EXCLUDED: dict[str, str] = {
    "annotation.studymembership": "accounts are not moved between servers: the importing user "
    "becomes the copy's owner and adds the team on the members page",
    "annotation.activityevent": "the log of actions on the exporting server; the copy's log "
    "starts with its import",
    "annotation.sourceupload": "records of files uploaded on the exporting server; the sources "
    "they imported are archived",
    "evaluation.analysissnapshot": "computed: the receiving server computes the analysis",
    "evaluation.textmetrics": "computed: the receiving server computes the text metrics",
    "evaluation.systemmetrics": "computed: the receiving server computes the system metrics",
    "evaluation.powerplan": "a planning computation, not data of the study; run it again",
    "evaluation.adaptiveallocation": "a recruitment option of the running study (a copy does not "
    "recruit): set it again on the copy's Adaptive allocation page",
    "generation.generationbatch": "the generation jobs' records; the texts they generated are "
    "archived as simplifications",
    "generation.generationjob": "the generation jobs' records; the texts they generated are "
    "archived as simplifications",
    "ml.trainingjob": "fine-tuning runs and their model files belong to the exporting server",
    "ml.modelartifact": "model files of the exporting server's fine-tuning runs, not the study's data",
}

# Where an archived row's JSON column or generic reference names a row by model label.
REVISION_TYPES: dict[str, type[models.Model]] = {
    model._meta.label: model
    for model in (
        ItemAnswer,
        AttentionCheckResponse,
    )
}


def _references(model: type[models.Model]) -> Iterator[type[models.Model]]:
    for f in model._meta.get_fields():
        if f.is_relation and f.concrete and (f.many_to_one or f.one_to_one) and f.related_model:
            yield f.related_model


def study_reaching_models() -> list[type[models.Model]]:
    """Every installed concrete model from which a chain of foreign keys leads to Study (Study
    included; many-to-many tables too), in the registry's order."""
    reaching: set[type[models.Model]] = {Study}
    candidates = [
        m for m in apps.get_models(include_auto_created=True) if not m._meta.abstract and not m._meta.proxy
    ]
    changed = True
    while changed:
        changed = False
        for model in candidates:
            if model not in reaching and any(r in reaching for r in _references(model)):
                reaching.add(model)
                changed = True
    return [m for m in candidates if m in reaching]


def _through(many: Any) -> type[models.Model]:
    """The table of a many-to-many field."""
    return many.remote_field.through


def archive_coverage() -> dict[str, str | None]:
    """For every model that reaches a study: "archived", "archived with <table>" (a many-to-many
    table written with its owner's rows), "excluded: <reason>", or None when it is neither."""
    archived = {table.label for table in ARCHIVED}
    owners = {
        _through(f)._meta.label_lower: table.label
        for table in ARCHIVED
        for f in table.model._meta.many_to_many
        if _through(f)._meta.auto_created
    }
    owners_excluded = {
        _through(f)._meta.label_lower: model._meta.label_lower
        for model in apps.get_models()
        if model._meta.label_lower in EXCLUDED
        for f in model._meta.many_to_many
    }
    coverage: dict[str, str | None] = {}
    for model in study_reaching_models():
        label = model._meta.label_lower
        if label in archived:
            coverage[label] = "archived"
        elif label in owners:
            coverage[label] = f"archived with {owners[label]}"
        elif label in EXCLUDED:
            coverage[label] = f"excluded: {EXCLUDED[label]}"
        elif label in owners_excluded:
            coverage[label] = f"excluded with {owners_excluded[label]}"
        else:
            coverage[label] = None
    return coverage


def account_model() -> type[models.Model]:
    return apps.get_model(settings.AUTH_USER_MODEL)
