"""URL patterns of the compare-two flow (included by surveys/urls.py, namespace "surveys")."""

from django.urls import path

from surveys.compare_two import views

urlpatterns = [
    path("c/<str:token>/", views.pairwise_start, name="pairwise-start"),
    path("c/<str:token>/consent/", views.pairwise_consent, name="pairwise-consent"),
    path("c/<str:token>/compare/<int:task_id>/", views.pairwise_task, name="pairwise-task"),
    path("c/<str:token>/done/", views.pairwise_done, name="pairwise-done"),
]
