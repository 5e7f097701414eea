"""What other apps add to the Study admin: actions (generation's "Generate simplifications…",
judging's "Run an LLM judge…") and inlines. The Study admin (studies.admin.StudyAdmin) reads this
registry on every request, so it is the one Study admin whatever the order of INSTALLED_APPS and
of the admin modules' import: an app registers here from its admin module and never unregisters
or subclasses StudyAdmin.

    # generation/admin.py
    study_admin_action_add(generate_simplifications)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_ACTIONS: dict[str, Callable[..., Any]] = {}
_INLINES: dict[str, type] = {}


def study_admin_action_add(action: Callable[..., Any]) -> None:
    """Offer `action` (an admin action: `action(modeladmin, request, queryset)`, named by its
    `__name__`) on the Study changelist. Registering the same name again replaces it."""
    _ACTIONS[action.__name__] = action


def study_admin_inline_add(inline: type) -> None:
    """Show `inline` (an InlineModelAdmin class of a model with a foreign key to Study) on the Study
    change page."""
    _INLINES[f"{inline.__module__}.{inline.__qualname__}"] = inline


def study_admin_actions() -> list[Callable[..., Any]]:
    """The registered actions, by name: their order does not depend on which app came first."""
    return [_ACTIONS[name] for name in sorted(_ACTIONS)]


def study_admin_inlines() -> list[type]:
    """The registered inlines, by module and class name."""
    return [_INLINES[key] for key in sorted(_INLINES)]
