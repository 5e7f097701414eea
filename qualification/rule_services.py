"""The team's side: saving and removing a flow's pass rule, each refusal on its field, each change
in the activity log."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q

from annotation import qualification_states as states
from annotation.activity_services import activity_record
from annotation.models import Participant, Study
from annotation.redirect_urls import redirect_url_errors
from qualification.models import QualificationRule
from qualification.practice_scoring import PassRule, pass_rule_errors
from qualification.selectors import FLOW_ENTRY, practice_round


@transaction.atomic
def qualification_rule_save(
    *,
    study: Study,
    flow: str,
    group: str,
    share_percent: int,
    retries: int = 0,
    min_seconds: int = 0,
    on_fail: str = QualificationRule.OnFail.RETRY,
    screen_out_redirect_url: str = "",
    actor: Any = None,
) -> QualificationRule:
    """Create or change the rule of `flow` and `group`; refused, naming each field and why, when it
    cannot be met (a share above 100 %, no practice item for the group) or is malformed."""
    errors: dict[str, list[str]] = {}
    if flow not in FLOW_ENTRY:
        errors["flow"] = [
            f"{flow!r}: the qualification round is offered in the {', '.join(FLOW_ENTRY)} flow."
        ]
    items = len(practice_round(study=study, flow=flow, group=group)) if flow in FLOW_ENTRY else 0
    rule = PassRule(share_percent=share_percent, retries=retries, min_seconds=min_seconds)
    for name, message in pass_rule_errors(rule, items=items).items():
        errors.setdefault(name, []).append(message)
    if on_fail not in QualificationRule.OnFail.values:
        errors["on_fail"] = [f"{on_fail!r} is not one of {', '.join(QualificationRule.OnFail.values)}."]
    if problems := redirect_url_errors(
        screen_out_redirect_url, label="Screen-out redirect URL", placeholder=False
    ):
        errors["screen_out_redirect_url"] = problems
    if errors:
        raise ValidationError(errors)
    saved, created = QualificationRule.objects.update_or_create(
        study=study,
        flow=flow,
        rater_group=group,
        defaults={
            "share_percent": share_percent,
            "retries": retries,
            "min_seconds": min_seconds,
            "on_fail": on_fail,
            "screen_out_redirect_url": screen_out_redirect_url,
            "updated_by": actor if getattr(actor, "is_authenticated", False) else None,
        },
    )
    activity_record(
        study=study,
        actor=actor,
        verb="qualification.rule_set" if created else "qualification.rule_changed",
        obj=saved,
        details={
            "flow": flow,
            "group": group,
            "share_percent": share_percent,
            "needed": rule.needed(items),
            "items": items,
            "retries": retries,
            "min_seconds": min_seconds,
            "on_fail": on_fail,
        },
    )
    return saved


@transaction.atomic
def qualification_rule_remove(*, study: Study, flow: str, group: str, actor: Any = None) -> bool:
    """Stop asking the round: participants of the group still due to practise go on to the study
    (their attempts so far are kept); those who passed, failed or were flagged keep their state."""
    rule = QualificationRule.objects.filter(study=study, flow=flow, rater_group=group).first()
    if rule is None:
        return False
    released = (
        Participant.objects.filter(study=study, qualification=states.DUE)
        .filter(Q(rater_group=group) | Q(rater_group="", role=group))
        .update(qualification=states.NONE)
    )
    activity_record(
        study=study,
        actor=actor,
        verb="qualification.rule_removed",
        obj=rule,
        details={"flow": flow, "group": group, "released": released},
    )
    rule.delete()
    return True
