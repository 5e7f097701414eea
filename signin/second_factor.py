"""A second factor for researchers (RADLAY_MFA_REQUIRED): a researcher signed in (local password,
the admin's login or the hospital provider) who has not yet given a TOTP code in this session is
sent to the second-factor page before anything else; one without an authenticator sets one up
there first. A researcher is staff, a superuser, or a member of some study's team; participants
(radiologists' survey accounts, laypeople) are not asked."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import urlencode

from annotation.models import StudyMembership

# Reachable without the second factor: the page itself and its static files, and signing out.
OPEN_PATHS = ("/signin/", "/static/", "/dashboard/logout/", "/radiologist/logout/", "/admin/logout/")


def is_researcher(user) -> bool:
    if not user.is_authenticated:
        return False
    return user.is_staff or user.is_superuser or StudyMembership.objects.filter(user=user).exists()


def second_factor_missing(request: HttpRequest) -> bool:
    """Whether RADLAY_MFA_REQUIRED holds this request back: a researcher's session without a
    verified second factor."""
    if not settings.RADLAY_MFA_REQUIRED:
        return False
    user = request.user
    verified = getattr(user, "is_verified", None)
    return is_researcher(user) and not (verified and verified())


class SecondFactorMiddleware:
    """After django-otp's OTPMiddleware (which sets `request.user.is_verified`)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(OPEN_PATHS) or not second_factor_missing(request):
            return self.get_response(request)
        if request.path.startswith("/api/"):
            return JsonResponse(
                {"detail": "This account needs its second factor: sign in on /signin/second-factor/ first."},
                status=403,
            )
        target = reverse("signin:second-factor")
        return redirect(f"{target}?{urlencode({'next': request.get_full_path()})}")
