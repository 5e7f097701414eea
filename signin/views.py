"""The second-factor page: set up an authenticator app (a POST creates its key, which the page then
shows with an otpauth link; a GET never writes) or give its current code."""

from __future__ import annotations

import base64

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from signin.second_factor_services import (
    has_authenticator,
    second_factor_check,
    totp_device_pending,
    totp_device_pending_get,
)


class CodeForm(forms.Form):
    token = forms.CharField(
        label="Code from your authenticator app",
        max_length=12,
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "inputmode": "numeric"}),
    )


@never_cache
@login_required(login_url="evaluation:login")
@require_http_methods(["GET", "POST"])
def second_factor(request: HttpRequest) -> HttpResponse:
    next_url = request.POST.get("next") or request.GET.get("next") or ""
    if not url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}):
        next_url = ""
    if request.method == "POST" and "start" in request.POST:
        totp_device_pending(user=request.user)
        query = f"?{urlencode({'next': next_url})}" if next_url else ""
        return redirect(reverse("signin:second-factor") + query)
    form = CodeForm(request.POST or None)
    status = 200
    if request.method == "POST" and form.is_valid():
        if second_factor_check(request=request, token=form.cleaned_data["token"]):
            return redirect(next_url or "evaluation:study-list")
        form.add_error(
            "token",
            "That code was not accepted: type the one your app shows now (after a wrong one, wait a moment).",
        )
    if request.method == "POST":
        status = 400
    context = {"form": form, "next": next_url, "setting_up": not has_authenticator(user=request.user)}
    device = totp_device_pending_get(user=request.user) if context["setting_up"] else None
    if device is not None:
        context["key"] = base64.b32encode(device.bin_key).decode()
        context["config_url"] = device.config_url
    return render(request, "signin/second_factor.html", context, status=status)
