"""`{% wording "question" name %}`: the protocol's wording of a key (annotation/wording.py) in the
language of the page (the study's, which the survey views activate)."""

from __future__ import annotations

from django import template
from django.utils import translation
from django.utils.html import json_script
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from annotation.wording import protocol_wording

register = template.Library()


@register.simple_tag
def wording(*parts: object) -> str:
    """The parts joined with ":" make the key: {% wording "level:severity" level.name %}."""
    return protocol_wording(":".join(str(part) for part in parts), translation.get_language())


@register.simple_tag
def survey_strings() -> SafeString:
    """The few messages the survey scripts write themselves (static/radlay/lay.js, expert.js,
    error_spans.js, pairs.js), in the page's language, as a JSON block the scripts read (no inline
    script: the CSP forbids it)."""
    return json_script(
        {
            "sending": _("Saving…"),
            "pending": _("Not saved yet (connection problem); retrying…"),
            "pending_short": _("Not saved yet — retrying…"),
            "unanswered_one": _(
                "This sentence still has %(n)s unanswered row: the first one is highlighted. "
                "Answer it to go on, or use “Skip for now”."
            ),
            "unanswered_other": _(
                "This sentence still has %(n)s unanswered rows: the first one is highlighted. "
                "Answer them to go on, or use “Skip for now”."
            ),
            # The pairs flow's sentence-matching grid (static/radlay/pairs.js).
            "grid_open_one": _("%(n)s reference sentence still to answer before this is saved"),
            "grid_open_other": _("%(n)s reference sentences still to answer before this is saved"),
            # The radiologist page's error-span marking (static/radlay/error_spans.js).
            "span_selected": _("Selected: “%(text)s”. Choose a category and a severity, then “Add mark”."),
            "span_caret": _("Before “%(text)s”."),
            "span_at_end": _("End of the text."),
            "span_need_selection": _("Select the words to mark first (mouse, touch or keyboard)."),
            "span_need_choice": _("Choose a category and a severity for the mark first."),
            "span_duplicate": _("This mark is already in the list."),
            "span_added": _("Mark %(n)s added: “%(text)s”, %(category)s, %(severity)s."),
            "span_removed": _("Mark removed: “%(text)s”."),
            "span_mark_start": _("Mark %(n)s, %(category)s, %(severity)s:"),
            "span_mark_end": _("End of mark %(n)s."),
            "span_remove": _("Remove"),
            "span_remove_label": _("Remove mark %(n)s: “%(text)s”"),
        },
        "survey-strings",
    )
