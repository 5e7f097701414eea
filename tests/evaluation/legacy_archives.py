"""Study archives as radlay wrote them before the one answer store: the protocol's answers in the
typed tables (annotation.expertrating, .expertsourcejudgement, .layanswer, .laypreference,
.plantedcontrolanswer) with their revisions naming them, built from a study of this database and
an archive of it that this radlay wrote (whose keys are this database's)."""

from __future__ import annotations

import io
import json
import zipfile
from collections import defaultdict
from typing import Any

from django.db.models import Q

from annotation import answer_selectors, scales
from annotation.instrument_binding import PROTOCOL_BINDINGS, SHAPE_ITEMS
from annotation.models import AnswerRevision, ItemAnswer, LayItem, Study

TYPED = (
    "annotation.expertrating",
    "annotation.expertsourcejudgement",
    "annotation.layanswer",
    "annotation.laypreference",
    "annotation.plantedcontrolanswer",
)
_LABEL = {
    "annotation.expertrating": "annotation.ExpertRating",
    "annotation.expertsourcejudgement": "annotation.ExpertSourceJudgement",
    "annotation.layanswer": "annotation.LayAnswer",
    "annotation.laypreference": "annotation.LayPreference",
    "annotation.plantedcontrolanswer": "annotation.PlantedControlAnswer",
}
_SHAPE = {
    "annotation.expertrating": "rating",
    "annotation.expertsourcejudgement": "judgement",
    "annotation.layanswer": "lay",
    "annotation.laypreference": "preference",
}


def _time(value) -> str:
    return value.isoformat()


def _typed_rows(study: Study) -> tuple[dict[str, list[dict]], dict[int, tuple[str, int, str]]]:
    """The typed rows of `study` as Django serialized them, and for each item answer they hold,
    (table, typed row's key, column)."""
    mine = Q(participant__study=study)
    items = {
        (p, s): pk
        for pk, p, s in LayItem.objects.filter(participant__study=study).values_list(
            "pk", "participant_id", "source_id"
        )
    }
    rows: dict[str, list[dict]] = defaultdict(list)
    common = lambda r: {  # noqa: E731
        "time_spent_ms": r.time_spent_ms,
        "created_at": _time(r.created_at),
        "updated_at": _time(r.updated_at),
    }
    for r in answer_selectors.expert_ratings(where=mine):
        fields = {"participant": r.participant_id, "shown_text": r.shown_text_id, "comment": r.comment}
        fields |= {a: getattr(r, a) for a in scales.EXPERT_ASPECTS} | common(r)
        rows["annotation.expertrating"].append(
            {"model": "annotation.expertrating", "pk": r.id, "fields": fields}
        )
    for r in answer_selectors.expert_judgements(where=mine):
        fields = {"participant": r.participant_id, "source": r.source_id, "severity": r.severity,
                  "simplicity": r.simplicity, "comment": r.comment} | common(r)  # fmt: skip
        rows["annotation.expertsourcejudgement"].append(
            {"model": "annotation.expertsourcejudgement", "pk": r.id, "fields": fields}
        )
    for r in answer_selectors.lay_answers(where=mine):
        fields = {"item": items[(r.participant_id, r.source_id)], "phase": r.phase}
        fields |= {q: getattr(r, q) for q in scales.LAY_QUESTIONS} | common(r)
        rows["annotation.layanswer"].append({"model": "annotation.layanswer", "pk": r.id, "fields": fields})
    for r in answer_selectors.lay_preferences(where=mine):
        fields = {"item": items[(r.participant_id, r.source_id)], "most": sorted(r.most),
                  "least": sorted(r.least), "most_justification": r.most_justification,
                  "least_justification": r.least_justification, "order_shown": r.order_shown}  # fmt: skip
        fields |= common(r)
        rows["annotation.laypreference"].append(
            {"model": "annotation.laypreference", "pk": r.id, "fields": fields}
        )
    revised = defaultdict(int)
    for answer_id in AnswerRevision.objects.filter(participant__study=study).values_list(
        "answer_id", flat=True
    ):
        revised[answer_id] += 1
    held: dict[int, tuple[str, int, str]] = {}
    control_rows = defaultdict(list)
    for a in ItemAnswer.objects.filter(mine, control__isnull=False):
        control_rows[(a.participant_id, a.control_id)].append(a)
    for (participant, control), answers in control_rows.items():
        key = min(a.pk for a in answers)
        scores = {a.item_key: a.value for a in answers if a.item_key in scales.EXPERT_ASPECTS}
        added = {
            a.item_key: a.value
            for a in answers
            if a.item_key not in scales.EXPERT_ASPECTS and a.item_key != "comment"
        }
        fields = {
            "participant": participant, "control": control, "scores": scores, "added": added,
            "comment": next((a.value for a in answers if a.item_key == "comment"), ""),
            "time_spent_ms": sum(a.time_spent_ms for a in answers),
            "revisions": sum(revised[a.pk] for a in answers),
            "created_at": _time(min(a.created_at for a in answers)),
            "updated_at": _time(max(a.updated_at for a in answers)),
        }  # fmt: skip
        rows["annotation.plantedcontrolanswer"].append(
            {"model": "annotation.plantedcontrolanswer", "pk": key, "fields": fields}
        )
        held |= {a.pk: ("annotation.plantedcontrolanswer", key, a.item_key) for a in answers}
    # Which typed row holds each protocol item answer (its key is the first item answer's).
    groups: dict[tuple, list[ItemAnswer]] = defaultdict(list)
    for a in ItemAnswer.objects.filter(mine, answer_selectors.protocol_answers(), control__isnull=True):
        table = _table_of(a)
        target = (
            (a.participant_id, a.shown_text_id)
            if table == "annotation.expertrating"
            else (a.participant_id, a.source_id, a.phase if table == "annotation.layanswer" else "")
        )
        groups[(table, *target)].append(a)
    for (table, *_), answers in groups.items():
        key = min(a.pk for a in answers)
        columns = {v: k for k, v in SHAPE_ITEMS[_SHAPE[table]].items()}
        held |= {a.pk: (table, key, columns[a.item_key]) for a in answers}
    return rows, held


def _table_of(answer: ItemAnswer) -> str:
    if (
        answer.item_key in SHAPE_ITEMS["rating"].values()
        and answer.shown_text_id is not None
        and answer.phase == ""
    ):
        return "annotation.expertrating"
    if answer.phase == "":
        return "annotation.expertsourcejudgement"
    return "annotation.laypreference" if answer.phase == "preference" else "annotation.layanswer"


def _typed_revision(row: dict, held: dict[int, tuple[str, int, str]]) -> dict:
    fields = row["fields"]
    if fields["answer_type"] != "annotation.ItemAnswer" or fields["answer_id"] not in held:
        return row
    table, key, column = held[fields["answer_id"]]
    previous = fields["previous"].get("value")
    shape = _SHAPE.get(table)
    if shape is not None:
        preset = "protocol_003_radiologist" if shape in ("rating", "judgement") else "protocol_003_layperson"
        binding = PROTOCOL_BINDINGS[preset][SHAPE_ITEMS[shape][column]]
        previous = binding.column_of(previous)
    return {
        **row,
        "fields": {**fields, "answer_type": _LABEL[table], "answer_id": key, "previous": {column: previous}},
    }


def typed_archive(archive: bytes, study: Study, *, version: int) -> bytes:
    """`archive` (of `study`, written by this radlay) as an earlier radlay wrote it: the protocol's
    answers and the control answers in the typed tables, not in annotation.itemanswer; version 1:
    one JSON array per table, of the fifteen tables version 1 had."""
    from evaluation.exports.study_archive import VERSION_1_TABLES

    typed, held = _typed_rows(study)
    source = zipfile.ZipFile(io.BytesIO(archive))
    manifest = json.loads(source.read("manifest.json"))
    tables: dict[str, list[Any]] = {}
    for label in manifest["tables"]:
        rows = [json.loads(line) for line in source.read(f"{label}.jsonl").splitlines()]
        if label == "annotation.itemanswer":
            rows = [r for r in rows if r["pk"] not in held]
        if label == "annotation.answerrevision":
            rows = [_typed_revision(r, held) for r in rows]
        tables[label] = rows
    order = list(manifest["tables"])
    at = order.index("annotation.answerrevision")
    for label in TYPED:
        tables[label] = typed.get(label, [])
        order.insert(at, label)
        at += 1
    if version == 1:
        order = [label for label in order if label in VERSION_1_TABLES]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as written:
        for label in order:
            if version == 1:
                written.writestr(f"{label}.json", json.dumps(tables[label]))
            else:
                written.writestr(f"{label}.jsonl", "\n".join(json.dumps(r) for r in tables[label]))
        manifest = {
            **manifest,
            "version": version,
            "tables": order,
            "counts": {k: len(tables[k]) for k in order},
        }
        if version == 1:
            del manifest["excluded"]
        written.writestr("manifest.json", json.dumps(manifest))
    return out.getvalue()
