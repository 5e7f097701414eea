"""What the console's participants page reads: each participant's status, progress and last
activity (evaluation.progress computes status and progress, for the dashboard too) with what only
the team sees (link, name, e-mail)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.urls import reverse

from annotation.models import Participant, Study
from annotation.selectors import participant_label
from evaluation.progress import participants_progress
from surveys.lay.entry import RECRUITMENT_PARAMS

WITHDRAWN = "withdrawn"


def participants_table(*, study: Study, link_of: Callable[[str], str]) -> list[dict[str, Any]]:
    """One row per participant, in the dashboard's order: label, role, status, done/total, last
    activity, name and e-mail (radiologists invited with them), and `link_of(token)`."""
    people = {
        participant_label(p.pseudonym, p.pk): p
        for p in Participant.objects.filter(study=study).only(
            "pk", "pseudonym", "token", "last_activity_at", "contact_name", "contact_email", "withdrawn_at"
        )
    }
    rows = []
    for record in participants_progress(study=study):
        person = people[record["participant"]]
        rows.append(
            {
                **record,
                "pk": person.pk,
                "status": WITHDRAWN if person.withdrawn_at else record["status"],
                "last_activity_at": person.last_activity_at,
                "name": person.contact_name,
                "email": person.contact_email,
                "link": link_of(person.token),
            }
        )
    return rows


def recruitment_link(*, study: Study, absolute: Callable[[str], str]) -> str:
    """The study's open recruitment link for laypeople, with the parameters Prolific fills in
    (the lay flow reads PROLIFIC_PID, STUDY_ID and SESSION_ID: surveys/lay/entry.py)."""
    query = "&".join(f"{name}={{{{%{name}%}}}}" for name in RECRUITMENT_PARAMS)
    return f"{absolute(reverse('surveys:lay-join', args=[study.slug]))}?{query}"
