from django.apps import AppConfig


class MlConfig(AppConfig):
    name = "ml"
    default_auto_field = "django.db.models.BigAutoField"
