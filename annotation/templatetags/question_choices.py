"""The options of a lay question (radio buttons, or checkboxes for panel 3's most/least liked),
rendered in Python.

A lay panel has up to five questions of up to five options; written as a template loop they were
about half of a panel GET's CPU (profiled with 2,000 sources). The markup is the one the template
wrote, byte for byte; survey.js reads the inputs' `name` and `value` and the `.key` hints.
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_CHECKED = mark_safe(" checked")
_AUTOFOCUS = mark_safe(" autofocus")
# A panel-3 tick refused because its text is in the other question (lay.js marks it the same way).
_CONFLICT = ' class="conflict" aria-invalid="true" aria-describedby="q-{}-error"'
_DEFINITION = '<span class="level-def">{}</span>'


@register.simple_tag
def question_choices(question, first_error) -> SafeString:
    """One `<label><input>` per option of `question` (annotation.lay.panels.Question): the chosen
    ones checked, the first one focused when this question holds the page's first error, a refused
    overlapping tick marked invalid."""
    kind = "checkbox" if question.multiple else "radio"
    focus = question.name == first_error
    return format_html_join(
        "",
        '\n    <label><input type="{}" name="{}" value="{}"{}{}{}><span class="opt"><span class="opt-name">'
        '<span class="key js-only">{}</span>{}</span>{}</span></label>',
        (
            (
                kind,
                question.name,
                option.value,
                _CHECKED if option.checked else "",
                _AUTOFOCUS if number == 1 and focus else "",
                format_html(_CONFLICT, question.name) if option.conflict else "",
                number,
                option.label,
                format_html(_DEFINITION, option.definition) if option.definition else "",
            )
            for number, option in enumerate(question.options, 1)
        ),
    )
