"""A planted control's row left unmarked was stored as {"<error-span item>": null}; "no error
marked" is [] everywhere (ItemAnswer's too). Any other null in `added` was an empty answer, which
is "not given": the key is dropped. Runs forward only (the nulls carried nothing to restore)."""

from django.db import migrations

ERROR_SPANS = "error_spans"  # instruments.schema.ItemKind.ERROR_SPANS, frozen here


def _span_keys(StudyInstrument) -> dict[int, set[str]]:
    keys: dict[int, set[str]] = {}
    for study_id, definition in StudyInstrument.objects.values_list("study_id", "definition"):
        items = definition.get("items", []) if isinstance(definition, dict) else []
        keys.setdefault(study_id, set()).update(
            item["key"] for item in items if isinstance(item, dict) and item.get("kind") == ERROR_SPANS
        )
    return keys


def control_no_marks(apps, schema_editor) -> None:
    PlantedControlAnswer = apps.get_model("annotation", "PlantedControlAnswer")
    span_keys = _span_keys(apps.get_model("annotation", "StudyInstrument"))
    changed = []
    for answer in PlantedControlAnswer.objects.select_related("control").iterator(chunk_size=2000):
        added = answer.added if isinstance(answer.added, dict) else {}
        if answer.added == added and None not in added.values():
            continue
        keys = span_keys.get(answer.control.study_id, set())
        answer.added = {
            key: ([] if value is None else value)
            for key, value in added.items()
            if value is not None or key in keys
        }
        changed.append(answer)
    PlantedControlAnswer.objects.bulk_update(changed, ["added"], batch_size=2000)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0017_span_suggestions"),
    ]

    operations = [
        migrations.RunPython(control_no_marks, migrations.RunPython.noop),
    ]
