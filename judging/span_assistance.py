"""AI-assisted error-span marking from a judge run: the study's option (SpanAssistance) and the
suggestions a radiologist's page offers (annotation/span_suggestions.py builds them; this module
reads the judge's spans and the option, and is registered as annotation's provider in
judging.apps).

The judge's spans of a text are those of the run's instrument-items answer on that text (the modal
one of its K samples); a text the run did not answer, or answered with no span, still gets the
planted suggestions the rate asks for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.activity_services import activity_record
from annotation.models import Participant, SimplificationText, Source, Study
from annotation.span_suggestions import (
    PageOffers,
    SuggestionRateError,
    assisted_page,
    planted_rate_check,
    suggestions_for,
)
from generation.controls import plant_control
from instruments.schema import Item
from judging.instrument_items import ITEM_TASK
from judging.models import JudgeAnswer, JudgeItem, JudgeRun, SpanAssistance


def span_assistance_set(
    *,
    study: Study,
    run: JudgeRun,
    planted_rate: Any,
    assisted_share: Any = 1.0,
    seed: int = 0,
    enabled: bool = True,
    actor: Any = None,
) -> SpanAssistance:
    """Turn AI-assisted span marking on (or change it) for `study`, recorded in its activity log.
    ValidationError naming the field: `planted_rate` outside (0, 0.5], `assisted_share` outside
    [0, 1], a run of another study. The console's form and `manage.py span_assistance` call it."""
    errors: dict[str, str] = {}
    try:
        rate = planted_rate_check(planted_rate)
    except SuggestionRateError as exc:
        errors[exc.field] = str(exc)
        rate = 0.0
    try:
        share = float(assisted_share)
        if not 0 <= share <= 1:
            raise ValueError
    except (TypeError, ValueError):
        errors["assisted_share"] = f"The share of assisted pages must lie in [0, 1], got {assisted_share!r}."
        share = 1.0
    if run.study_id != study.pk:
        errors["run"] = f"Judge run {run.pk} belongs to another study."
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        option, _ = SpanAssistance.objects.update_or_create(
            study=study,
            defaults={
                "run": run,
                "planted_rate": rate,
                "assisted_share": share,
                "seed": int(seed),
                "enabled": enabled,
            },
        )
        activity_record(
            study=study,
            actor=actor,
            verb="judges.span_assistance_set" if enabled else "judges.span_assistance_off",
            obj=option,
            details={"run": run.pk, "planted_rate": rate, "assisted_share": share, "seed": int(seed)},
        )
    return option


def span_assistance_off(*, study: Study, actor: Any = None) -> bool:
    """Turn the study's span suggestions off (the option is kept, so answers given with
    suggestions keep their run); whether they were on. Recorded in the activity log when they were."""
    with transaction.atomic():
        option = SpanAssistance.objects.select_for_update().filter(study=study, enabled=True).first()
        if option is None:
            return False
        option.enabled = False
        option.save(update_fields=["enabled"])
        activity_record(study=study, actor=actor, verb="judges.span_assistance_off", obj=option)
    return True


def span_assistance_of(*, study: Study) -> SpanAssistance | None:
    """The study's option, on or off, with its run (None: never set)."""
    return SpanAssistance.objects.select_related("run").filter(study=study).first()


def judge_spans_of(*, run_id: int, text_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The run's instrument-items answer on each of `text_ids` ({text id: {item key: value}}), in
    one query; a text the run did not answer is absent."""
    rows = (
        JudgeAnswer.objects.filter(
            item__run_id=run_id,
            item__task=ITEM_TASK,
            item__shown_text_id__in=list(text_ids),
            item__reference_text__isnull=True,
            item__status=JudgeItem.Status.SUCCEEDED,
        )
        .order_by("pk")
        .values_list("item__shown_text_id", "item_values")
    )
    answers: dict[int, dict[str, Any]] = {}
    for text_id, values in rows:
        answers.setdefault(text_id, values or {})
    return answers


def span_suggestions_provider(
    *, participant: Participant, source: Source, texts: Sequence[SimplificationText], items: Sequence[Item]
) -> PageOffers | None:
    """annotation's provider: this rater's suggestions on each of a page's `texts` for each
    error-span item of `items`, or None when the study has no assistance on. Two queries at most
    whatever the number of texts: the option, then the judge's answers on the assisted texts."""
    option = SpanAssistance.objects.filter(study_id=participant.study_id, enabled=True).first()
    if option is None:
        return None
    assisted = {
        text.pk
        for text in texts
        if assisted_page(
            rater=participant.pk, text_key=text.pk, seed=option.seed, share=option.assisted_share
        )
    }
    answers = judge_spans_of(run_id=option.run_id, text_ids=sorted(assisted)) if assisted and items else {}
    offers: PageOffers = {}
    for item in items:
        for text in texts:
            if text.pk not in assisted:
                offers[(item.key, text.pk)] = (False, [])
                continue
            spans = answers.get(text.pk, {}).get(item.key)
            offers[(item.key, text.pk)] = (
                True,
                suggestions_for(
                    text.text,
                    plant=plant_control,
                    source=source.text,
                    judge_spans=list(spans) if isinstance(spans, list) else [],
                    rate=option.planted_rate,
                    rater=participant.pk,
                    text_key=text.pk,
                    seed=option.seed,
                    categories=[o.key for o in item.options],
                    severities=[o.key for o in item.severities],
                ),
            )
    return offers
