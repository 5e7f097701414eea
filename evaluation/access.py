"""The one place that decides which studies a researcher may reach (Zulip's access_* pattern):
the dashboard, the API and the downloads all go through `access_study_for_user`."""

from __future__ import annotations

from django.db.models import QuerySet
from django.http import Http404

from annotation.models import Study
from annotation.selectors import studies_for_user


def studies_for_researcher(*, user) -> QuerySet[Study]:
    """Superusers see every study; every other user (staff included) the studies they are a
    researcher of (Study.researchers)."""
    return studies_for_user(user=user)


def access_study_for_user(*, user, slug: str) -> Study:
    """The study `slug` if `user` may see it. A study the user may not see is reported as not
    found (404), so that its existence is not disclosed."""
    study = studies_for_researcher(user=user).filter(slug=slug).first()
    if study is None:
        raise Http404("No such study among yours.")
    return study
