"""`{{ source|shown_to:"lay" }}`: a source's text as its audience may see it (privacy.selectors:
laypeople the de-identified text always, radiologists unless an owner chose originals)."""

from django import template

from annotation.models import Source
from privacy.selectors import source_text

register = template.Library()


@register.filter
def shown_to(source: Source, audience: str) -> str:
    return source_text(source=source, audience=audience)  # type: ignore[arg-type]
