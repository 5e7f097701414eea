"""Where a flow sends a participant to the practice round: at entry (after consent) a query decides
whether the round is due; on the real pages only the participant's own `qualification` field,
read with the page's existing query, is looked at (no query)."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import redirect

from annotation.models import Participant
from qualification import states
from qualification.services import qualification_enter


def practice_first(participant: Participant, *, flow: str) -> HttpResponse | None:
    """On a real page: the practice round while it is due (or its end page once screened out)."""
    if participant.qualification in states.GATED:
        return redirect("qualification:practice", token=participant.token, flow=flow)
    return None


def practice_on_entry(participant: Participant, *, flow: str) -> HttpResponse | None:
    """Entering the flow: make the round due where the study asks one, and send the participant there."""
    if qualification_enter(participant=participant, flow=flow):
        return redirect("qualification:practice", token=participant.token, flow=flow)
    return None
