"""The AI-assisted span-marking section of a study's analysis: how often raters kept the true and
the planted suggestions (measures.stats.suggestion_acceptance), per rater and overall, and the
marks per page on assisted and unassisted pages. Read in the analysis's worker, never in a page.

A page is assisted when its answer stored the suggestions it offered (ItemAnswer.suggestions,
annotation/span_suggestions.py); the other answers to the same error-span items are the unassisted
pages (a team that randomises assistance per page gets both; answers given before assistance was
turned on count as unassisted too).
"""

from __future__ import annotations

from typing import Any

from annotation.models import ItemAnswer, Study


def span_suggestions_section(
    *, study: Study, confidence: float = 0.95, seed: int = 0
) -> dict[str, Any] | None:
    """None when no answer of the study was given with suggestions."""
    from measures.stats.suggestion_acceptance import Page, SuggestionFate, span_rates, suggestion_acceptance

    rows = list(
        ItemAnswer.objects.filter(
            participant__study=study, participant__returned_at__isnull=True, shown_text__isnull=False
        ).values_list("participant__pseudonym", "participant_id", "item_key", "value", "suggestions")
    )
    assisted_items = {key for _, _, key, _, suggestions in rows if (suggestions or {}).get("assisted")}
    if not assisted_items:
        return None
    fates: list[SuggestionFate] = []
    pages: list[Page] = []
    for pseudonym, participant_id, key, value, suggestions in rows:
        if key not in assisted_items or not isinstance(value, list):
            continue
        rater = pseudonym or f"#{participant_id}"
        assisted = bool((suggestions or {}).get("assisted"))
        pages.append(Page(rater, assisted, len(value)))
        for suggestion in (suggestions or {}).get("items", []):
            fates.append(SuggestionFate(rater, suggestion["origin"], suggestion["fate"]))
    return {
        "items": sorted(assisted_items),
        "acceptance": suggestion_acceptance(fates, confidence=confidence),
        "span_rates": span_rates(pages, confidence=confidence, seed=seed),
        "n_suggestions": len(fates),
        "n_planted": sum(1 for f in fates if f.origin == "planted"),
    }
