"""Studies for the generation tests."""

from annotation.models import Study
from studies.source_services import source_upsert


def study_with_sources(slug: str, texts) -> Study:
    """A study `slug` with one source per text, keyed s1, s2, …"""
    study = Study.objects.create(slug=slug, title=slug)
    for index, text in enumerate(texts):
        source_upsert(study=study, key=f"s{index + 1}", text=text)
    return study
