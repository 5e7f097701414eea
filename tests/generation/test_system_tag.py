"""A batch with a system tag writes new systems `<key>-<tag>` beside the study's own (a fine-tuned
model's outputs next to the texts it learned from); a bad tag is refused by name."""

import pytest
from django.core.exceptions import ValidationError

from annotation.models import Simplification, System
from generation.services import batches
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db


def test_a_tagged_batch_writes_new_systems_and_leaves_the_old_ones(django_capture_on_commit_callbacks):
    study = build_study(slug="tagged", n_sources=2, systems=("plain_bs",))
    before = dict(
        Simplification.objects.filter(source__study=study).values_list("source__key", "shown_text__text")
    )
    with django_capture_on_commit_callbacks(execute=True):
        batch = batches.generation_batch_create(
            study=study, systems=["plain_bs", "plain_sc"], backend="glossary", system_tag="glossary-2"
        )
    batch.refresh_from_db()
    assert set(batch.jobs.values_list("status", flat=True)) == {"succeeded"}
    assert batch.parameters["system_tag"] == "glossary-2"
    systems = dict(System.objects.filter(study=study).values_list("key", "label"))
    assert set(systems) == {"plain_bs", "plain_bs-glossary-2", "plain_sc-glossary-2"}
    assert systems["plain_sc-glossary-2"].endswith("(glossary-2)")
    old = Simplification.objects.filter(source__study=study, system__key="plain_bs")
    assert dict(old.values_list("source__key", "shown_text__text")) == before
    assert Simplification.objects.filter(source__study=study, system__key="plain_sc-glossary-2").count() == 2


@pytest.mark.parametrize("tag", ["Bad Tag", "-x", "a" * 31, "dpo_1"])
def test_a_bad_tag_is_refused_by_name(tag):
    study = build_study(slug="bad-tag", n_sources=1, systems=("plain_bs",))
    with pytest.raises(ValidationError) as caught:
        batches.generation_batch_create(study=study, systems=["plain_bs"], backend="glossary", system_tag=tag)
    assert "system_tag" in caught.value.message_dict
