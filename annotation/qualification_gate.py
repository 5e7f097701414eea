"""Where a flow sends a participant to the qualification round (qualification/): at entry (after
consent) the round's app decides whether the round is due — it registers that decision here from
`QualificationConfig.ready()`, since it builds on annotation; on the real pages only the
participant's own `qualification` field, read with the page's existing query, is looked at (no
query)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpResponse
from django.shortcuts import redirect

from annotation.models import Participant
from annotation.qualification_states import GATED

EntryHook = Callable[..., bool]
_entry_hooks: list[EntryHook] = []


def entry_hook_register(hook: EntryHook) -> None:
    """`hook(participant=..., flow=...)` makes the round due where the study asks one: True then."""
    # ready() may run more than once (tests that reload apps): one registration.
    if hook not in _entry_hooks:
        _entry_hooks.append(hook)


def practice_first(participant: Participant, *, flow: str) -> HttpResponse | None:
    """On a real page: the practice round while it is due (or its end page once screened out)."""
    if participant.qualification in GATED:
        return redirect("qualification:practice", token=participant.token, flow=flow)
    return None


def practice_on_entry(participant: Participant, *, flow: str) -> HttpResponse | None:
    """Entering the flow: make the round due where the study asks one, and send the participant there."""
    if any(hook(participant=participant, flow=flow) for hook in _entry_hooks):
        return redirect("qualification:practice", token=participant.token, flow=flow)
    return None
