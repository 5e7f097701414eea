"""Every typed answer becomes ItemAnswer rows of the protocol presets' items (the one answer store):
ExpertRating (five aspects, comment), ExpertSourceJudgement (severity, simplicity, comment),
LayAnswer (Q1-Q4, per panel), LayPreference (most / least liked texts, justifications) and
PlantedControlAnswer (aspects, added items, comment); their AnswerRevision rows follow.

Values are stored as instruments.answers.item_value_validate returns them and item_value_to_json
writes them (an ordinal's code, a free text, a multiple choice as the sorted text ids), `score` as
item_value_code codes them (the code as a float; null for text and choices). A typed row's time
goes to its first item answer, so the times of a target's items add up to the row's. The level
names and codes are frozen here, as the scales were when this migration was written.

Each answer is stored under the study's version of the protocol instrument of its flow: the
current one when the flow asks a protocol preset, else the latest version of the preset, else
the frozen preset (migration 0014's) attached here.

Reversible: the reverse rebuilds the typed rows from the protocol items' answers (and the
control answers), their revisions with them, and removes those item answers. What the forward
step cannot keep: a typed row with no answer in it (only time), LayPreference.order_shown (the
item's preference_order holds the same order), PlantedControlAnswer.revisions (a counter
without the earlier values; the reverse counts the control answers' revisions)."""

import hashlib
from collections import defaultdict

from django.db import migrations

from annotation.migrations._frozen_protocol_presets import FROZEN

RADIOLOGIST = "protocol_003_radiologist"
LAYPERSON = "protocol_003_layperson"
FLOW_PRESET = {"expert": RADIOLOGIST, "lay": LAYPERSON}

SEVERITY = {"Critical": 1, "Serious": 2, "Moderate": 3, "Mild": 4, "Healthy": 5}
CONFIDENCE = {"Not at all": 1, "With low confidence": 2, "With high confidence": 3}
LEVELS = {
    "severity": SEVERITY,
    "severity_guess": SEVERITY,
    "understanding": {"Not at all": 1, "Some parts of it": 2, "Most of it": 3, "Completely": 4},
    "confidence": CONFIDENCE,
    "urgency_confidence": CONFIDENCE,
    "helpfulness": {
        "It further confused me": -1,
        "It did not help": 0,
        "I understand slightly better": 1,
        "I understand much better": 2,
    },
}
ASPECTS = ("correctness", "completeness", "hallucination", "structure", "simplicity")
LAY_QUESTIONS = ("understanding", "confidence", "urgency_confidence", "severity_guess", "helpfulness")
# The typed columns of each model and the item keys that hold them.
JUDGEMENT_ITEMS = {"severity": "severity", "simplicity": "original_simplicity", "comment": "original_comment"}
RATING_ITEMS = {**{a: a for a in ASPECTS}, "comment": "comment"}
LAY_ITEMS = {q: q for q in LAY_QUESTIONS}
PREFERENCE_TEXT_ITEMS = ("most_justification", "least_justification")
BATCH = 2000


def _stamp(rows):
    # annotation.instrument_selectors.instruments_stamp, frozen with the migration.
    canonical = ",".join(f"{pk}:{fingerprint}" for pk, fingerprint in sorted(rows))
    return hashlib.sha256(canonical.encode()).hexdigest() if canonical else ""


def _code(column, stored):
    """(value, score) of a typed column's stored value; None when it holds no answer."""
    if stored is None or stored == "":
        return None
    if column in LEVELS:
        code = LEVELS[column][stored]
        return code, float(code)
    if isinstance(stored, int):
        return stored, float(stored)
    return stored, None


def _level(column, code):
    for name, value in LEVELS[column].items():
        if value == code:
            return name
    raise ValueError(f"{code!r} is no level of {column}")


def _keep_timestamps(model):
    # The moved rows keep their typed row's times (auto_now would set them to now).
    for name in ("created_at", "updated_at"):
        field = model._meta.get_field(name)
        field.auto_now = field.auto_now_add = False


def _instrument(apps, study_id, flow, made):
    """The StudyInstrument id the flow's protocol answers go under (attached when missing)."""
    StudyInstrument = apps.get_model("annotation", "StudyInstrument")
    Study = apps.get_model("annotation", "Study")
    preset = FLOW_PRESET[flow]
    rows = StudyInstrument.objects.filter(study_id=study_id)
    current = rows.filter(flow=flow, is_current=True).first()
    if current is not None and current.key == preset:
        return current.pk
    latest = rows.filter(key=preset).order_by("-is_current", "-version").first()
    if latest is not None:
        return latest.pk
    frozen = FROZEN[preset]
    row = StudyInstrument.objects.create(
        study_id=study_id,
        key=preset,
        version=frozen["definition"]["version"],
        flow=flow,
        definition=frozen["definition"],
        fingerprint=frozen["fingerprint"],
        structure_fingerprint=frozen["structure_fingerprint"],
        preset=preset,
        is_current=current is None,
        change_note="attached by migration 0021 (the protocol's answers, moved to item answers)",
    )
    if row.is_current:
        stamp = _stamp(rows.filter(is_current=True).values_list("pk", "fingerprint"))
        Study.objects.filter(pk=study_id).update(instruments_stamp=stamp)
    made.append(row.pk)
    return row.pk


def _lay_phases(definition):
    """{item key: the phase its answers were stored under} for a lay instrument's items: an item
    asked in several panels had one row, which its last panel's save wrote."""
    return {
        item["key"]: (item.get("phases") or ["original"])[-1] for item in definition.get("items", [])
    }


def forward(apps, schema_editor):
    get = apps.get_model
    Study = get("annotation", "Study")
    StudyInstrument = get("annotation", "StudyInstrument")
    ItemAnswer = get("annotation", "ItemAnswer")
    AnswerRevision = get("annotation", "AnswerRevision")
    _keep_timestamps(ItemAnswer)
    # The lay flow's added items, answered before panels were part of the key, get theirs.
    for row in StudyInstrument.objects.filter(flow="lay").iterator():
        phases = _lay_phases(row.definition)
        for key, phase in phases.items():
            ItemAnswer.objects.filter(instrument_id=row.pk, item_key=key).update(phase=phase)
    for study_id in Study.objects.order_by("pk").values_list("pk", flat=True):
        _study_forward(apps, study_id)
    typed = ("annotation.ExpertRating", "annotation.ExpertSourceJudgement", "annotation.LayAnswer")
    AnswerRevision.objects.filter(answer_type__in=(*typed, "annotation.LayPreference")).delete()


def _study_forward(apps, study_id):
    get = apps.get_model
    ItemAnswer = get("annotation", "ItemAnswer")
    AnswerRevision = get("annotation", "AnswerRevision")
    Participant = get("annotation", "Participant")
    ExpertRating = get("annotation", "ExpertRating")
    ExpertSourceJudgement = get("annotation", "ExpertSourceJudgement")
    LayAnswer = get("annotation", "LayAnswer")
    LayPreference = get("annotation", "LayPreference")
    PlantedControlAnswer = get("annotation", "PlantedControlAnswer")
    StudyInstrument = get("annotation", "StudyInstrument")
    _keep_timestamps(ItemAnswer)

    of_study = {"participant__study_id": study_id}
    languages = dict(Participant.objects.filter(study_id=study_id).values_list("pk", "language"))
    ratings = list(ExpertRating.objects.filter(**of_study).select_related("shown_text").order_by("pk"))
    judgements = list(ExpertSourceJudgement.objects.filter(**of_study).order_by("pk"))
    lay = list(
        LayAnswer.objects.filter(item__participant__study_id=study_id).select_related("item").order_by("pk")
    )
    preferences = list(
        LayPreference.objects.filter(item__participant__study_id=study_id)
        .select_related("item")
        .prefetch_related("most", "least")
        .order_by("pk")
    )
    controls = list(
        PlantedControlAnswer.objects.filter(**of_study).select_related("control__degrades").order_by("pk")
    )
    if not (ratings or judgements or lay or preferences or controls):
        return
    made = []
    expert = _instrument(apps, study_id, "expert", made) if ratings or judgements or controls else None
    lay_id = _instrument(apps, study_id, "lay", made) if lay or preferences else None
    # Control rows go under the flow's current instrument (its added items are asked there).
    control_instrument = (
        StudyInstrument.objects.filter(study_id=study_id, flow="expert", is_current=True)
        .values_list("pk", flat=True)
        .first()
        or expert
    )

    rows = []
    # (typed label, typed id) -> {item key: index in rows}, to point the revisions at the new rows.
    moved = defaultdict(dict)

    def add(typed, typed_id, answer, items, row_of, timed=True, **target):
        """Rows for the typed columns `items` holds an answer in; whether it wrote any."""
        first = timed
        for column, key in items.items():
            coded = _code(column if column in LEVELS else key, getattr(answer, column))
            if coded is None:
                continue
            value, score = coded
            moved[(typed, typed_id)][key] = len(rows)
            rows.append(
                ItemAnswer(
                    **row_of,
                    **target,
                    item_key=key,
                    value=value,
                    score=score,
                    language=languages.get(row_of["participant_id"], ""),
                    time_spent_ms=answer.time_spent_ms if first else 0,
                    created_at=answer.created_at,
                    updated_at=answer.updated_at,
                )
            )
            first = False
        return not first or not timed

    for r in ratings:
        row_of = {"participant_id": r.participant_id, "instrument_id": expert}
        target = {"source_id": r.shown_text.source_id, "shown_text_id": r.shown_text_id}
        add("annotation.ExpertRating", r.pk, r, RATING_ITEMS, row_of, **target)
    for j in judgements:
        row_of = {"participant_id": j.participant_id, "instrument_id": expert}
        add("annotation.ExpertSourceJudgement", j.pk, j, JUDGEMENT_ITEMS, row_of, source_id=j.source_id)
    for a in lay:
        row_of = {"participant_id": a.item.participant_id, "instrument_id": lay_id}
        on_source = {k: k for k in LAY_QUESTIONS if k != "helpfulness"}
        timed = not add(
            "annotation.LayAnswer", a.pk, a, on_source, row_of, source_id=a.item.source_id, phase=a.phase
        )
        add(
            "annotation.LayAnswer",
            a.pk,
            a,
            {"helpfulness": "helpfulness"},
            row_of,
            timed=timed,
            source_id=a.item.source_id,
            shown_text_id=a.item.shown_text_id,
            phase=a.phase,
        )
    for p in preferences:
        row_of = {"participant_id": p.item.participant_id, "instrument_id": lay_id}
        target = {"source_id": p.item.source_id, "phase": "preference"}
        first = True
        for side in ("most", "least"):
            chosen = sorted(str(t.pk) for t in getattr(p, side).all())
            if chosen:
                moved[("annotation.LayPreference", p.pk)][side] = len(rows)
                rows.append(
                    ItemAnswer(
                        **row_of,
                        **target,
                        item_key=side,
                        value=sorted(chosen),
                        score=None,
                        language=languages.get(row_of["participant_id"], ""),
                        time_spent_ms=p.time_spent_ms if first else 0,
                        created_at=p.created_at,
                        updated_at=p.updated_at,
                    )
                )
                first = False
        texts = {key: key for key in PREFERENCE_TEXT_ITEMS}
        add("annotation.LayPreference", p.pk, p, texts, row_of, timed=first, **target)
    for c in controls:
        row_of = {"participant_id": c.participant_id, "instrument_id": control_instrument}
        target = {"source_id": c.control.degrades.source_id, "control_id": c.control_id}
        first = True
        values = [(a, c.scores[a], float(c.scores[a])) for a in ASPECTS if c.scores.get(a) is not None]
        values += [(k, v, _added_score(v)) for k, v in c.added.items() if v is not None]
        if c.comment:
            values.append(("comment", c.comment, None))
        for key, value, score in values:
            rows.append(
                ItemAnswer(
                    **row_of,
                    **target,
                    item_key=key,
                    value=value,
                    score=score,
                    language=languages.get(c.participant_id, ""),
                    time_spent_ms=c.time_spent_ms if first else 0,
                    created_at=c.created_at,
                    updated_at=c.updated_at,
                )
            )
            first = False
    for start in range(0, len(rows), BATCH):
        ItemAnswer.objects.bulk_create(rows[start : start + BATCH])

    # The new rows' ids, by their key (bulk_create returns none on some backends).
    keys = {}
    for pk, participant, item_key, source, text, phase, instrument in ItemAnswer.objects.filter(
        participant__study_id=study_id, control__isnull=True, reference_text__isnull=True
    ).values_list("pk", "participant_id", "item_key", "source_id", "shown_text_id", "phase", "instrument_id"):
        keys[(participant, item_key, source, text, phase, instrument)] = pk

    def row_id(index):
        r = rows[index]
        return keys[(r.participant_id, r.item_key, r.source_id, r.shown_text_id, r.phase, r.instrument_id)]

    labels = {
        "annotation.ExpertRating": RATING_ITEMS,
        "annotation.ExpertSourceJudgement": JUDGEMENT_ITEMS,
        "annotation.LayAnswer": LAY_ITEMS,
        "annotation.LayPreference": {k: k for k in PREFERENCE_TEXT_ITEMS},
    }
    revisions = []
    for revision in AnswerRevision.objects.filter(
        participant__study_id=study_id, answer_type__in=list(labels)
    ).order_by("pk"):
        items = labels[revision.answer_type]
        for column, previous in revision.previous.items():
            key = items.get(column)
            if key is None:
                continue
            coded = _code(column if column in LEVELS else key, previous)
            index = moved.get((revision.answer_type, revision.answer_id), {}).get(key)
            revisions.append(
                AnswerRevision(
                    participant_id=revision.participant_id,
                    answer_type="annotation.ItemAnswer",
                    # An answer emptied since (a cleared comment) has no row: 0, its item named.
                    answer_id=row_id(index) if index is not None else 0,
                    previous={"value": coded[0] if coded else previous}
                    if index is not None
                    else {"value": coded[0] if coded else previous, "item_key": key},
                    previous_at=revision.previous_at,
                    revised_at=revision.revised_at,
                )
            )
    AnswerRevision.objects.bulk_create(revisions)


def _added_score(value):
    # item_value_code of an added item's stored value: the code or count, the number of error
    # spans (a list), none for text and choices.
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list) and all(isinstance(v, dict) and "start" in v for v in value):
        return float(len(value))
    return None


def backward(apps, schema_editor):
    get = apps.get_model
    Study = get("annotation", "Study")
    for study_id in Study.objects.order_by("pk").values_list("pk", flat=True):
        _study_backward(apps, study_id)
    ItemAnswer = get("annotation", "ItemAnswer")
    ItemAnswer.objects.exclude(phase="").update(phase="")


def _study_backward(apps, study_id):
    get = apps.get_model
    ItemAnswer = get("annotation", "ItemAnswer")
    AnswerRevision = get("annotation", "AnswerRevision")
    ExpertRating = get("annotation", "ExpertRating")
    ExpertSourceJudgement = get("annotation", "ExpertSourceJudgement")
    LayAnswer = get("annotation", "LayAnswer")
    LayItem = get("annotation", "LayItem")
    LayPreference = get("annotation", "LayPreference")
    PlantedControlAnswer = get("annotation", "PlantedControlAnswer")
    for model in (ExpertRating, ExpertSourceJudgement, LayAnswer, LayPreference, PlantedControlAnswer):
        _keep_timestamps(model)

    answers = ItemAnswer.objects.filter(participant__study_id=study_id).order_by("pk")
    protocol = answers.filter(instrument__key__in=list(FLOW_PRESET.values()), control__isnull=True)
    expert_keys = {*RATING_ITEMS.values(), *JUDGEMENT_ITEMS.values()}
    lay_keys = {*LAY_QUESTIONS, "most", "least", *PREFERENCE_TEXT_ITEMS}
    groups = defaultdict(list)  # (typed label, target) -> [ItemAnswer]
    for a in protocol.filter(instrument__key=RADIOLOGIST, item_key__in=expert_keys):
        if a.shown_text_id is None:
            groups[("judgement", a.participant_id, a.source_id)].append(a)
        else:
            groups[("rating", a.participant_id, a.shown_text_id)].append(a)
    for a in protocol.filter(instrument__key=LAYPERSON, item_key__in=lay_keys):
        if a.phase == "preference" or a.item_key in ("most", "least", *PREFERENCE_TEXT_ITEMS):
            groups[("preference", a.participant_id, a.source_id)].append(a)
        else:
            groups[("lay", a.participant_id, a.source_id, a.phase or "assisted")].append(a)
    for a in answers.filter(control__isnull=False):
        groups[("control", a.participant_id, a.control_id)].append(a)

    items = {
        (participant, source): pk
        for pk, participant, source in LayItem.objects.filter(participant__study_id=study_id).values_list(
            "pk", "participant_id", "source_id"
        )
    }
    revised = defaultdict(list)
    for revision in AnswerRevision.objects.filter(
        participant__study_id=study_id, answer_type="annotation.ItemAnswer"
    ):
        revised[revision.answer_id].append(revision)
    revisions = []

    def times(rows):
        return {
            "time_spent_ms": sum(r.time_spent_ms for r in rows),
            "created_at": min(r.created_at for r in rows),
            "updated_at": max(r.updated_at for r in rows),
        }

    def revisions_of(rows, label, typed_id, columns):
        for r in rows:
            for revision in revised.pop(r.pk, ()):
                column = columns[r.item_key]
                previous = revision.previous.get("value")
                if column in LEVELS and previous is not None:
                    previous = _level(column, previous)
                revisions.append(
                    AnswerRevision(
                        participant_id=revision.participant_id,
                        answer_type=label,
                        answer_id=typed_id,
                        previous={column: previous},
                        previous_at=revision.previous_at,
                        revised_at=revision.revised_at,
                    )
                )

    moved = []
    for key, rows in groups.items():
        kind, participant = key[0], key[1]
        values = {r.item_key: r.value for r in rows}
        if kind == "rating":
            typed = ExpertRating.objects.create(
                participant_id=participant,
                shown_text_id=key[2],
                comment=values.get("comment", ""),
                **{a: values.get(a) for a in ASPECTS},
                **times(rows),
            )
            revisions_of(rows, "annotation.ExpertRating", typed.pk, {v: k for k, v in RATING_ITEMS.items()})
        elif kind == "judgement":
            severity = values.get("severity")
            typed = ExpertSourceJudgement.objects.create(
                participant_id=participant,
                source_id=key[2],
                severity=_level("severity", severity) if severity is not None else "",
                simplicity=values.get("original_simplicity"),
                comment=values.get("original_comment", ""),
                **times(rows),
            )
            columns = {v: k for k, v in JUDGEMENT_ITEMS.items()}
            revisions_of(rows, "annotation.ExpertSourceJudgement", typed.pk, columns)
        elif kind == "lay":
            item = items.get((participant, key[2]))
            if item is None:
                continue  # an answer without its lay item: it stays an item answer
            typed = LayAnswer.objects.create(
                item_id=item,
                phase=key[3],
                **{
                    q: _level(q, values[q]) if values.get(q) is not None else ""
                    for q in LAY_QUESTIONS
                },
                **times(rows),
            )
            revisions_of(rows, "annotation.LayAnswer", typed.pk, LAY_ITEMS)
        elif kind == "preference":
            item = items.get((participant, key[2]))
            if item is None:
                continue
            order = LayItem.objects.values_list("preference_order", flat=True).get(pk=item)
            typed = LayPreference.objects.create(
                item_id=item,
                most_justification=values.get("most_justification", ""),
                least_justification=values.get("least_justification", ""),
                order_shown=order,
                **times(rows),
            )
            typed.most.set([int(t) for t in values.get("most", [])])
            typed.least.set([int(t) for t in values.get("least", [])])
            columns = {k: k for k in PREFERENCE_TEXT_ITEMS}
            revisions_of([r for r in rows if r.item_key in columns], "annotation.LayPreference", typed.pk, columns)
        else:
            count = sum(len(revised.pop(r.pk, ())) for r in rows)
            PlantedControlAnswer.objects.create(
                participant_id=participant,
                control_id=key[2],
                scores={a: values[a] for a in ASPECTS if a in values},
                added={k: v for k, v in values.items() if k not in ASPECTS and k != "comment"},
                comment=values.get("comment", ""),
                revisions=count,
                **times(rows),
            )
        moved.extend(r.pk for r in rows)
    for start in range(0, len(moved), BATCH):
        chunk = moved[start : start + BATCH]
        AnswerRevision.objects.filter(answer_type="annotation.ItemAnswer", answer_id__in=chunk).delete()
        ItemAnswer.objects.filter(pk__in=chunk).delete()
    AnswerRevision.objects.bulk_create(revisions)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0020_item_answer_targets")]

    operations = [migrations.RunPython(forward, backward)]
