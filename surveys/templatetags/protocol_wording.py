"""`{% wording "question" name %}`: the protocol's wording of a key (annotation/wording.py) in the
language of the page (the study's, which the survey views activate). `{% survey_strings %}` and
`{% language_part "template" %}` give what depends on the page's language alone, built once per
language and process: the survey pages are rendered on every request, and these parts were a fifth
of a radiologist page's render time."""

from __future__ import annotations

from django import template
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.html import json_script
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from annotation.wording import protocol_wording

register = template.Library()


@register.simple_tag
def wording(*parts: object) -> str:
    """The parts joined with ":" make the key: {% wording "level:severity" level.name %}."""
    return protocol_wording(":".join(str(part) for part in parts), translation.get_language())


# (what, language) -> the rendered part. The catalogues and templates do not change while a process runs.
_BY_LANGUAGE: dict[tuple[str, str], SafeString] = {}


@register.simple_tag
def language_part(template_name: str) -> SafeString:
    """A partial that shows nothing but texts in the page's language (the keyboard help), rendered
    once per language: it must read no context variable, since it is rendered without any."""
    key = (template_name, translation.get_language())
    html = _BY_LANGUAGE.get(key)
    if html is None:
        html = _BY_LANGUAGE[key] = mark_safe(render_to_string(template_name))
    return html


@register.simple_tag
def survey_strings() -> SafeString:
    """The few messages the survey scripts write themselves (static/radlay/lay.js, radiologist.js,
    error_spans.js, rate_each_pair.js), in the page's language, as a JSON block the scripts read (no inline
    script: the CSP forbids it)."""
    key = ("survey-strings", translation.get_language())
    strings = _BY_LANGUAGE.get(key)
    if strings is None:
        strings = _BY_LANGUAGE[key] = _survey_strings()
    return strings


def _survey_strings() -> SafeString:
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
            # The rate-each-pair flow's sentence-matching grid (static/radlay/rate_each_pair.js).
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
            # AI-assisted marking: the suggestions' buttons and what they announce.
            "span_accept": _("Accept"),
            "span_edit": _("Edit"),
            "span_delete": _("Delete"),
            "span_accept_label": _("Accept the suggestion “%(text)s” (%(category)s, %(severity)s)"),
            "span_edit_label": _("Edit the suggestion “%(text)s” (%(category)s, %(severity)s)"),
            "span_delete_label": _("Delete the suggestion “%(text)s” (%(category)s, %(severity)s)"),
            "span_accepted": _("Suggestion accepted: “%(text)s”."),
            "span_deleted": _("Suggestion deleted: “%(text)s”."),
            "span_editing": _(
                "Editing the suggestion “%(text)s”: change the selection, category or severity, "
                "then “Add mark”."
            ),
        },
        "survey-strings",
    )
