"""Hospital sign-in through OpenID Connect: mozilla-django-oidc's code flow (with PKCE and a
nonce), reading radlay's settings (signin/provider.py), with what it leaves to its users done
here: the ID token's issuer, audience and expiry are checked; an account is found by the
provider's subject (`sub`), never by e-mail, so a local account cannot be taken over by a provider
account that claims its address; with RADLAY_OIDC_GROUP_ROLES set, someone in none of its groups
is refused, and the roles are applied at each sign-in."""

from __future__ import annotations

import hashlib
import logging
import re
import time

import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.shortcuts import redirect
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from signin.provider import ENDPOINTS, oidc_enabled, oidc_setting, provider_metadata
from signin.role_services import roles_of_groups, user_roles_apply

logger = logging.getLogger(__name__)
USERNAME_PREFIX = "oidc-"
SAFE_SUB = re.compile(r"^[\w.@+-]{1,100}$")
# Seconds of clock difference tolerated between radlay and the provider.
LEEWAY = 60


def oidc_username(sub: str) -> str:
    """The local username of the provider's subject: readable when it can be, hashed otherwise
    (usernames are at most 150 characters of letters, digits and @.+-_)."""
    if SAFE_SUB.match(sub):
        return USERNAME_PREFIX + sub
    return USERNAME_PREFIX + hashlib.sha256(sub.encode()).hexdigest()[:40]


class HospitalOIDCBackend(OIDCAuthenticationBackend):
    def __init__(self, *args, **kwargs):
        # The endpoints are read when a sign-in needs them, not whenever Django builds the
        # backends (every local login does): a provider that is down must not stop local logins.
        self.UserModel = get_user_model()

    def __getattr__(self, name: str):
        if name in ENDPOINTS or name.startswith("OIDC_RP_"):
            return oidc_setting(name, None)
        raise AttributeError(name)

    @staticmethod
    def get_settings(attr, *args):
        return oidc_setting(attr, *args)

    def authenticate(self, request, **kwargs):
        if not oidc_enabled():
            return None
        try:
            return super().authenticate(request, **kwargs)
        except (requests.RequestException, SuspiciousOperation, ValueError) as exc:
            # The provider refused the code, or a token failed its checks: a refused sign-in.
            logger.warning("Hospital sign-in refused: %s", exc)
            return None

    def verify_token(self, token, **kwargs):
        payload = super().verify_token(token, **kwargs)
        if kwargs.get("nonce") is None:
            return payload  # a signed userinfo answer, not the ID token
        issuer = provider_metadata()["issuer"]
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if payload.get("iss") != issuer:
            raise SuspiciousOperation(f"ID token issued by {payload.get('iss')!r}, not {issuer!r}.")
        if settings.RADLAY_OIDC_CLIENT_ID not in audiences:
            raise SuspiciousOperation("ID token not issued to this client.")
        if float(payload.get("exp", 0)) + LEEWAY < time.time():
            raise SuspiciousOperation("ID token expired.")
        return payload

    def verify_claims(self, claims) -> bool:
        if not claims.get("sub"):
            return False
        mapping = settings.RADLAY_OIDC_GROUP_ROLES
        return not mapping or bool(roles_of_groups(groups=self._groups(claims), mapping=mapping))

    def filter_users_by_claims(self, claims):
        return self.UserModel.objects.filter(username=oidc_username(claims["sub"]))

    def create_user(self, claims):
        user = self.UserModel.objects.create_user(oidc_username(claims["sub"]), email=claims.get("email", ""))
        user.set_unusable_password()
        return self.update_user(user, claims)

    def update_user(self, user, claims):
        user.email = claims.get("email", "") or user.email
        user.first_name = (claims.get("given_name") or "")[:150]
        user.last_name = (claims.get("family_name") or "")[:150]
        user.save()
        mapping = settings.RADLAY_OIDC_GROUP_ROLES
        if mapping:
            user_roles_apply(user=user, roles=roles_of_groups(groups=self._groups(claims), mapping=mapping))
        return user

    @staticmethod
    def _groups(claims) -> list[str]:
        groups = claims.get(settings.RADLAY_OIDC_GROUPS_CLAIM) or []
        return [groups] if isinstance(groups, str) else [str(g) for g in groups]


class HospitalSignInView(OIDCAuthenticationRequestView):
    """Sends the browser to the provider (404 while hospital sign-in is off)."""

    def __init__(self, *args, **kwargs):
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)

    @staticmethod
    def get_settings(attr, *args):
        return oidc_setting(attr, *args)

    def get(self, request):
        if not oidc_enabled():
            return redirect("evaluation:login")
        self.OIDC_OP_AUTH_ENDPOINT = oidc_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")
        self.OIDC_RP_CLIENT_ID = settings.RADLAY_OIDC_CLIENT_ID
        return super().get(request)


class HospitalCallbackView(OIDCAuthenticationCallbackView):
    @staticmethod
    def get_settings(attr, *args):
        return oidc_setting(attr, *args)

    def login_failure(self):
        messages.error(
            self.request,
            "The hospital sign-in did not let you in: the provider refused, or your account is in "
            "none of the groups radlay admits. Ask your administrator, or sign in with a radlay account.",
        )
        return redirect("evaluation:login")
