"""Every existing study gets the protocol presets as its instruments (radiologist page: the
radiologist rubric; lay flow: the lay questions), as they were when this migration was written
(_frozen_protocol_presets.py), so that its history never changes with a later preset edit. Their
answers stay in the typed columns the presets' items are bound to (annotation/instrument_binding.py):
nothing is copied, so no answer can be lost."""

import hashlib

from django.db import migrations

from annotation.migrations._frozen_protocol_presets import FROZEN

FLOWS = {"expert": "protocol_003_radiologist", "lay": "protocol_003_layperson"}


def _stamp(rows):
    # annotation.instrument_selectors.instruments_stamp, frozen with the migration.
    canonical = ",".join(f"{pk}:{fingerprint}" for pk, fingerprint in sorted(rows))
    return hashlib.sha256(canonical.encode()).hexdigest() if canonical else ""


def attach(apps, schema_editor):
    Study = apps.get_model("annotation", "Study")
    StudyInstrument = apps.get_model("annotation", "StudyInstrument")
    for study in Study.objects.all().only("pk").iterator():
        have = set(
            StudyInstrument.objects.filter(study_id=study.pk, is_current=True).values_list("flow", flat=True)
        )
        for flow, name in FLOWS.items():
            if flow in have:
                continue
            frozen = FROZEN[name]
            StudyInstrument.objects.create(
                study_id=study.pk,
                key=name,
                version=frozen["definition"]["version"],
                flow=flow,
                definition=frozen["definition"],
                fingerprint=frozen["fingerprint"],
                structure_fingerprint=frozen["structure_fingerprint"],
                preset=name,
                is_current=True,
                change_note="attached by migration 0014 (the protocol, as every study asked it before)",
            )
        rows = StudyInstrument.objects.filter(study_id=study.pk, is_current=True).values_list(
            "pk", "fingerprint"
        )
        Study.objects.filter(pk=study.pk).update(instruments_stamp=_stamp(rows))


def detach(apps, schema_editor):
    StudyInstrument = apps.get_model("annotation", "StudyInstrument")
    Study = apps.get_model("annotation", "Study")
    StudyInstrument.objects.filter(preset__in=FLOWS.values(), answers__isnull=True, version=1).delete()
    Study.objects.update(instruments_stamp="")


class Migration(migrations.Migration):
    dependencies = [("annotation", "0013_study_instruments_stamp")]

    operations = [migrations.RunPython(attach, detach)]
