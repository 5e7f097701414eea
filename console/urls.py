"""The study console's pages, under /console/ (reached from the dashboard's study list)."""

from django.urls import path

from console import study_views

app_name = "console"
urlpatterns: list = [
    path("new/", study_views.study_new, name="study-new"),
    path("<slug:slug>/", study_views.study_setup, name="study-setup"),
    path("<slug:slug>/status/", study_views.study_status, name="study-status"),
    path("<slug:slug>/preview/<str:role>/", study_views.study_preview, name="study-preview"),
    path("<slug:slug>/pilot/", study_views.study_pilot, name="study-pilot"),
    path("<slug:slug>/duplicate/", study_views.study_copy, name="study-duplicate"),
]
