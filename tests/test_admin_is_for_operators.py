"""The admin is for operators; researchers see their study's rows in the console. The deployment
docs say so, and the pages agree: a staff researcher without model permissions gets 403 on the
admin's changelists and 200 on their study's console pages."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import StudyMembership
from tests.annotation.factories import build_study

DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.mark.django_db
def test_a_staff_researcher_sees_rows_in_the_console_not_the_admin(client):
    study = build_study(slug="operators", n_sources=2, status="draft")
    user = get_user_model().objects.create_user("staff-researcher", password="pw", is_staff=True)
    StudyMembership.objects.create(study=study, user=user, role="owner")
    client.force_login(user)
    for model in ("study", "source", "participant"):
        assert client.get(reverse(f"admin:annotation_{model}_changelist")).status_code == 403, model
    for name in ("study-setup", "participants", "upload"):
        assert client.get(reverse(f"console:{name}", args=[study.slug])).status_code == 200, name


def test_the_deployment_docs_say_the_admin_is_for_operators():
    roles = (DOCS / "deployment" / "index.md").read_text()
    assert "The admin (`/admin/`) is for operators" in roles
    assert "console" in roles and "every changelist answers 403" in roles
    for page in DOCS.rglob("*.md"):
        # What the docs said before, which no page showed: staff researchers' rows in the admin.
        assert "sees, filters and changes only those studies' rows" not in page.read_text(), page
