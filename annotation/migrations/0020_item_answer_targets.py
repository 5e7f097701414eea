"""ItemAnswer becomes the one answer store: a planted control as a target, the lay panel as part
of the key (the protocol asks Q1-Q3 in panels 1 and 2). Schema only; the answers move in 0021."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Q


class Migration(migrations.Migration):
    dependencies = [("annotation", "0019_source_upload_lease")]

    operations = [
        migrations.AddField(
            model_name="itemanswer",
            name="control",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="answers",
                to="annotation.plantedcontrol",
            ),
        ),
        migrations.AddField(
            model_name="itemanswer",
            name="phase",
            field=models.CharField(
                blank=True,
                choices=[
                    ("", "No phase"),
                    ("original", "Original only (panel 1)"),
                    ("assisted", "With simplification (panel 2)"),
                    ("preference", "Preferences (panel 3)"),
                ],
                default="",
                max_length=10,
            ),
        ),
        migrations.RemoveConstraint(model_name="itemanswer", name="item_answer_unique_source"),
        migrations.RemoveConstraint(model_name="itemanswer", name="item_answer_unique_text"),
        migrations.AddConstraint(
            model_name="itemanswer",
            constraint=models.UniqueConstraint(
                condition=Q(shown_text__isnull=True, control__isnull=True),
                fields=("participant", "instrument", "item_key", "source", "phase"),
                name="item_answer_unique_source",
            ),
        ),
        migrations.AddConstraint(
            model_name="itemanswer",
            constraint=models.UniqueConstraint(
                condition=Q(shown_text__isnull=False, reference_text__isnull=True),
                fields=("participant", "instrument", "item_key", "shown_text", "phase"),
                name="item_answer_unique_text",
            ),
        ),
        migrations.AddConstraint(
            model_name="itemanswer",
            constraint=models.UniqueConstraint(
                condition=Q(control__isnull=False),
                fields=("participant", "instrument", "item_key", "control"),
                name="item_answer_unique_control",
            ),
        ),
        migrations.AddConstraint(
            model_name="itemanswer",
            constraint=models.CheckConstraint(
                condition=Q(control__isnull=True) | Q(shown_text__isnull=True),
                name="item_answer_control_alone",
            ),
        ),
        migrations.AddConstraint(
            model_name="itemanswer",
            constraint=models.CheckConstraint(
                condition=Q(phase__in=["", "original", "assisted", "preference"]),
                name="item_answer_phase",
            ),
        ),
        migrations.AddIndex(
            model_name="itemanswer",
            index=models.Index(fields=["participant", "source"], name="item_answer_participant_source"),
        ),
    ]
