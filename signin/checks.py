"""`manage.py check` (and every start) refuses a RADLAY_OIDC_GROUP_ROLES that names no radlay role,
rather than a hospital sign-in failing on it later."""

from __future__ import annotations

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from signin.role_services import roles_of_groups


def group_roles_check(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    mapping = settings.RADLAY_OIDC_GROUP_ROLES
    try:
        roles_of_groups(groups=mapping.keys(), mapping=mapping)
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), id="signin.E001")]
    return []
