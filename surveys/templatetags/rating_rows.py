"""The radio buttons of a radiologist's 1-5 answer row, rendered in Python.

A rating page has 16 such rows of 5 buttons; written as template loops they were about 640 template
nodes, most of the page's render time (~60 % of a page GET's CPU, profiled with 2,000 sources).
The markup is the one the template wrote, byte for byte; survey.js reads its `name`, `value` and
`data-key` attributes.
"""

from __future__ import annotations

from collections.abc import Sequence

from django import template
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_CHECKED = " checked"
# Each level's markup around the row's field name, escaped once per scale wording (the levels come
# from the instrument's cached wording, so every row of every page reuses them): formatting each
# button of each row anew was most of a page's render time. Kept with the levels object itself, so
# that an id reused by a later object is never taken for it; a few wordings per process at most.
_PARTS: dict[int, tuple[Sequence, tuple[tuple[str, str, str, object], ...]]] = {}
_PARTS_KEPT = 256


def _level_parts(levels: Sequence) -> tuple[tuple[str, str, str, object], ...]:
    known = _PARTS.get(id(levels))
    if known is not None and known[0] is levels:
        return known[1]
    parts = tuple(
        (
            format_html('\n    <label title="{} – {}"><input type="radio" name="', level.value, level.label),
            format_html('" value="{}" data-key="{}"', level.value, number),
            format_html("><span>{}</span></label>", level.value),
            level.value,
        )
        for number, level in enumerate(levels, 1)
    )
    if len(_PARTS) >= _PARTS_KEPT:
        _PARTS.clear()
    _PARTS[id(levels)] = (levels, parts)
    return parts


@register.simple_tag
def likert_choices(cell, levels: Sequence) -> SafeString:
    """One `<label><input type="radio">` per level, the one given already checked; the level's label
    as the instrument words it in the page's language (the value sent stays the number)."""
    name = conditional_escape(cell.field)
    return mark_safe(
        "".join(
            f"{head}{name}{middle}{_CHECKED if cell.value == value else ''}{tail}"
            for head, middle, tail, value in _level_parts(levels)
        )
    )
