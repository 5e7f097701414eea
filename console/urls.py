"""The study console's pages, under /console/ (reached from the dashboard's study list)."""

from django.urls import path  # noqa: F401 (the page modules add their routes below)

app_name = "console"
urlpatterns: list = []
