"""`{% wording "question" name %}`: the protocol's wording of a key (annotation/wording.py) in the
language of the page (the study's, which the survey views activate)."""

from __future__ import annotations

from django import template
from django.utils import translation

from annotation.wording import protocol_wording

register = template.Library()


@register.simple_tag
def wording(*parts: object) -> str:
    """The parts joined with ":" make the key: {% wording "level:severity" level.name %}."""
    return protocol_wording(":".join(str(part) for part in parts), translation.get_language())
