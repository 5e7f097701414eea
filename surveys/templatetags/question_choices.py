"""The options of a lay question (radio buttons, or checkboxes for panel 3's most/least liked),
rendered in Python.

A lay panel has up to five questions of up to five options; written as a template loop they were
about half of a panel GET's CPU (profiled with 2,000 sources). The markup is the one the template
wrote, byte for byte; survey.js reads the inputs' `name` and `value` and the `.key` hints.
"""

from __future__ import annotations

from django import template
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# A panel-3 tick refused because its text is in the other question (lay.js marks it the same way).
_CONFLICT = ' class="conflict" aria-invalid="true" aria-describedby="q-{}-error"'
_DEFINITION = '<span class="level-def">{}</span>'


@register.simple_tag
def question_choices(question, first_error) -> SafeString:
    """One `<label><input>` per option of `question` (surveys.lay.panels.Question): the chosen
    ones checked, the first one focused when this question holds the page's first error, a refused
    overlapping tick marked invalid. Written as one f-string per option, each text escaped once
    (format_html per option was most of the tag's time)."""
    kind = "checkbox" if question.multiple else "radio"
    focus = question.name == first_error
    name = conditional_escape(question.name)
    head = f'\n    <label><input type="{kind}" name="{name}" value="'
    conflict = format_html(_CONFLICT, question.name)
    return mark_safe(
        "".join(
            f'{head}{conditional_escape(option.value)}"'
            f"{' checked' if option.checked else ''}{' autofocus' if number == 1 and focus else ''}"
            f"{conflict if option.conflict else ''}>"
            f'<span class="opt"><span class="opt-name"><span class="key js-only">{number}</span>'
            f"{conditional_escape(option.label)}</span>"
            f"{format_html(_DEFINITION, option.definition) if option.definition else ''}</span></label>"
            for number, option in enumerate(question.options, 1)
        )
    )
