"""The radio buttons of a radiologist's 1-5 answer row, rendered in Python.

A rating page has 16 such rows of 5 buttons; written as template loops they were about 640 template
nodes, most of the page's render time (~60 % of a page GET's CPU, profiled with 2,000 sources).
The markup is the one the template wrote, byte for byte; survey.js reads its `name`, `value` and
`data-key` attributes.
"""

from __future__ import annotations

from collections.abc import Sequence

from django import template
from django.utils.html import format_html_join
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_CHECKED = mark_safe(" checked")


@register.simple_tag
def likert_choices(cell, levels: Sequence) -> SafeString:
    """One `<label><input type="radio">` per level, the one given already checked; the level's label
    as the instrument words it in the page's language (the value sent stays the number)."""
    return format_html_join(
        "",
        '\n    <label title="{} – {}"><input type="radio" name="{}" value="{}" data-key="{}"{}>'
        "<span>{}</span></label>",
        (
            (
                level.value,
                level.label,
                cell.field,
                level.value,
                number,
                _CHECKED if cell.value == level.value else "",
                level.value,
            )
            for number, level in enumerate(levels, 1)
        ),
    )
