"""TOTP authenticators (django-otp's TOTPDevice): setting one up and checking a code. django-otp
throttles wrong codes per device (a growing delay after each failure)."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django_otp import login as otp_login
from django_otp.plugins.otp_totp.models import TOTPDevice

DEVICE_NAME = "authenticator app"


def totp_device_pending_get(*, user) -> TOTPDevice | None:
    """The unconfirmed authenticator being set up, if one was started."""
    return TOTPDevice.objects.filter(user=user, confirmed=False).first()


def totp_device_pending(*, user) -> TOTPDevice:
    """The unconfirmed authenticator being set up, created (with a new random key) if none."""
    device = totp_device_pending_get(user=user)
    if device is None:
        device = TOTPDevice.objects.create(user=user, name=DEVICE_NAME, confirmed=False)
    return device


def has_authenticator(*, user) -> bool:
    return TOTPDevice.objects.filter(user=user, confirmed=True).exists()


def second_factor_check(*, request, token: str) -> bool:
    """Check `token` against the user's confirmed authenticators, or, while there is none, the
    one being set up (confirming it). A right code marks the session verified."""
    user = request.user
    token = "".join(token.split())
    with transaction.atomic():
        devices = list(TOTPDevice.objects.select_for_update().filter(user=user, confirmed=True))
        if not devices:
            devices = list(TOTPDevice.objects.select_for_update().filter(user=user, confirmed=False))
        for device in devices:
            if device.verify_is_allowed()[0] and device.verify_token(token):
                if not device.confirmed:
                    device.confirmed = True
                    device.save(update_fields=["confirmed"])
                    TOTPDevice.objects.filter(user=user, confirmed=False).delete()
                otp_login(request, device)
                return True
    return False


def api_token_second_factor_missing(*, user, code: str) -> str:
    """Why an API token may not be issued to `user` with `code` (RADLAY_MFA_REQUIRED: a
    researcher's token needs the current TOTP code beside the password, or a password alone would
    get round the second factor); empty when it may."""
    from signin.second_factor import is_researcher

    if not settings.RADLAY_MFA_REQUIRED or not is_researcher(user):
        return ""
    code = "".join(code.split())
    if not code:
        return "This account needs its second factor: send the current code of its authenticator app as otp."
    with transaction.atomic():
        for device in TOTPDevice.objects.select_for_update().filter(user=user, confirmed=True):
            if device.verify_is_allowed()[0] and device.verify_token(code):
                return ""
    if not has_authenticator(user=user):
        return "This account has no authenticator yet: sign in on the web once to set it up."
    return "That otp code was not accepted: send the current one (after a wrong one, wait a few seconds)."
