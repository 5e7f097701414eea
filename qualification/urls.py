"""The practice pages (namespace "qualification"), included before the survey's catch-all."""

from django.urls import path

from qualification import views

app_name = "qualification"

urlpatterns = [
    path("q/<str:token>/<slug:flow>/", views.practice, name="practice"),
]
