from django import template

from signin.provider import oidc_enabled

register = template.Library()


@register.simple_tag
def hospital_signin() -> bool:
    """Whether the login pages offer the hospital's sign-in (RADLAY_OIDC_ISSUER is set)."""
    return oidc_enabled()
