"""The one place that decides which studies a researcher may reach (Zulip's access_* pattern):
the dashboard, the API and the downloads all go through `access_study_for_user` (defined with the
other access_* helpers in annotation/access.py, re-exported here)."""

from __future__ import annotations

from django.db.models import QuerySet

from annotation.access import access_study_for_user
from annotation.models import Study
from annotation.selectors import studies_for_user


def studies_for_researcher(*, user) -> QuerySet[Study]:
    """Superusers see every study; every other user (staff included) the studies they are a
    researcher of (Study.researchers)."""
    return studies_for_user(user=user)


__all__ = ["access_study_for_user", "studies_for_researcher"]
