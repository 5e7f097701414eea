"""Team roles: every study's researchers become StudyMembership rows. Each existing researcher
link becomes an owner membership (a researcher had every right before roles existed); the
`researchers` relation then runs through the membership table, so there is one rule."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def links_to_owners(apps, schema_editor):
    Study = apps.get_model("annotation", "Study")
    StudyMembership = apps.get_model("annotation", "StudyMembership")
    links = Study.researchers.through.objects.values_list("study_id", "user_id")
    StudyMembership.objects.bulk_create(
        [StudyMembership(study_id=study_id, user_id=user_id, role="owner") for study_id, user_id in links],
        batch_size=1000,
    )


def owners_to_links(apps, schema_editor):
    Study = apps.get_model("annotation", "Study")
    StudyMembership = apps.get_model("annotation", "StudyMembership")
    Study.researchers.through.objects.bulk_create(
        [
            Study.researchers.through(study_id=study_id, user_id=user_id)
            for study_id, user_id in StudyMembership.objects.values_list("study_id", "user_id")
        ],
        batch_size=1000,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0003_study_consent_details_and_attention_screening"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="StudyMembership",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "role",
                    models.CharField(
                        choices=[("owner", "Owner"), ("editor", "Editor"), ("viewer", "Viewer")],
                        default="owner",
                        max_length=10,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "study",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memberships",
                        to="annotation.study",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memberships",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["study", "user__username"],
                "constraints": [
                    models.UniqueConstraint(fields=("study", "user"), name="study_membership_unique_user"),
                    models.CheckConstraint(
                        condition=models.Q(("role__in", ["owner", "editor", "viewer"])),
                        name="study_membership_role",
                    ),
                ],
            },
        ),
        migrations.RunPython(links_to_owners, owners_to_links),
        migrations.RemoveField(model_name="study", name="researchers"),
        migrations.AddField(
            model_name="study",
            name="researchers",
            field=models.ManyToManyField(
                blank=True,
                related_name="studies",
                through="annotation.StudyMembership",
                through_fields=("study", "user"),
                to=settings.AUTH_USER_MODEL,
            ),
        ),
    ]
