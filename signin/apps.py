from django.apps import AppConfig


class SigninConfig(AppConfig):
    """Researchers' sign-in beyond local passwords: the hospital's identity provider (OpenID
    Connect, mozilla-django-oidc) with its groups mapped to radlay roles, and a second factor
    (TOTP, django-otp) an operator can require of every researcher account."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "signin"
    verbose_name = "Sign-in"

    def ready(self) -> None:
        from django.core import checks

        from signin.checks import group_roles_check

        checks.register(group_roles_check)
