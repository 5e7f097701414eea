from django.apps import AppConfig


class PrivacyConfig(AppConfig):
    name = "privacy"
    verbose_name = "Data policy and de-identification"
    default_auto_field = "django.db.models.BigAutoField"
