"""The hospital's OpenID Connect provider as radlay's settings name it: its issuer URL (the
endpoints come from its discovery document, fetched once per process and again after a failure),
the client radlay is registered as, and the values mozilla-django-oidc reads through
`get_settings` (signin/oidc.py routes them here)."""

from __future__ import annotations

import threading
from typing import Any

import requests
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from mozilla_django_oidc.utils import import_from_settings

ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
TIMEOUT_SECONDS = 10
_lock = threading.Lock()
_metadata: dict[str, dict[str, Any]] = {}


def oidc_enabled() -> bool:
    return bool(settings.RADLAY_OIDC_ISSUER)


def provider_metadata() -> dict[str, Any]:
    """The issuer's discovery document (/.well-known/openid-configuration), checked to name the
    issuer configured."""
    issuer = settings.RADLAY_OIDC_ISSUER.rstrip("/")
    if not issuer:
        raise ImproperlyConfigured("RADLAY_OIDC_ISSUER is not set: hospital sign-in is off.")
    with _lock:
        known = _metadata.get(issuer)
    if known is not None:
        return known
    response = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=TIMEOUT_SECONDS)
    response.raise_for_status()
    metadata = response.json()
    if metadata.get("issuer", "").rstrip("/") != issuer:
        raise ImproperlyConfigured(
            f"The provider at {issuer} names itself {metadata.get('issuer')!r}: set RADLAY_OIDC_ISSUER "
            "to exactly its issuer."
        )
    with _lock:
        _metadata[issuer] = metadata
    return metadata


def oidc_setting(attr: str, *default: Any) -> Any:
    """What mozilla-django-oidc asks for, from radlay's few settings."""
    if attr in ENDPOINTS:
        return provider_metadata()[ENDPOINTS[attr]]
    values = {
        "OIDC_RP_CLIENT_ID": settings.RADLAY_OIDC_CLIENT_ID,
        "OIDC_RP_CLIENT_SECRET": settings.RADLAY_OIDC_CLIENT_SECRET,
        "OIDC_RP_SIGN_ALGO": "RS256",
        "OIDC_RP_SCOPES": "openid email profile",
        "OIDC_USE_PKCE": True,
        "OIDC_TIMEOUT": TIMEOUT_SECONDS,
        "OIDC_AUTHENTICATION_CALLBACK_URL": "signin:oidc-callback",
        "LOGIN_REDIRECT_URL": "evaluation:study-list",
    }
    if attr in values:
        return values[attr]
    return import_from_settings(attr, *default)
