from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0008_study_and_participant_language"),
    ]

    operations = [
        migrations.AddField(
            model_name="participant",
            name="rater_group",
            field=models.SlugField(blank=True, max_length=60),
        ),
    ]
