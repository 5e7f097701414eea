from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from studies.team_services import study_member_add
from tests.annotation.factories import build_study


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def editor(db):
    return get_user_model().objects.create_user("editor", password="pw")


@pytest.fixture
def draft(db, editor):
    """A draft study with two sources, the editor in its team."""
    study = build_study(slug="draft", n_sources=2, status="draft")
    study_member_add(study=study, user=editor, role="editor", actor="test")
    return study
