"""Template context every page gets (TEMPLATES' context_processors). In annotation, not config: it
asks which studies the viewer belongs to, and config imports no app (the apps import config's
error pages and request limits)."""

from __future__ import annotations

from django.http import HttpRequest

from annotation.selectors import studies_for_user


def protocol_credit(request: HttpRequest) -> dict:
    """`viewer_is_researcher`: whether the footer may cite the paper. Participants see radlay's
    neutral credit only: the paper's title says what a study compares. Evaluated lazily (a
    callable), so pages without the footer cost no query."""
    user = getattr(request, "user", None)

    def viewer_is_researcher() -> bool:
        return bool(user is not None and user.is_authenticated and studies_for_user(user=user).exists())

    return {"viewer_is_researcher": viewer_is_researcher}
