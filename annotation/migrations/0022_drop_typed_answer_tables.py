"""The typed answer tables go: their answers are ItemAnswer rows since 0021 (the reverse of this
migration recreates them empty, and 0021's reverse fills them again)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotation", "0021_typed_answers_to_item_answers")]

    operations = [
        migrations.DeleteModel(name="PlantedControlAnswer"),
        migrations.DeleteModel(name="LayPreference"),
        migrations.DeleteModel(name="LayAnswer"),
        migrations.DeleteModel(name="ExpertSourceJudgement"),
        migrations.DeleteModel(name="ExpertRating"),
        migrations.AlterField(
            model_name="answerrevision",
            name="answer_type",
            field=models.CharField(help_text='the answer\'s model: "annotation.ItemAnswer"', max_length=60),
        ),
    ]
