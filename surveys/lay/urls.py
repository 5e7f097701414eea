"""URL patterns of the lay flow (included by surveys/urls.py, namespace "surveys")."""

from django.urls import path

from surveys.lay import views as lay

urlpatterns = [
    path("join/<slug:slug>/", lay.lay_join, name="lay-join"),
    path("l/<str:token>/", lay.lay_start, name="lay-start"),
    path("l/<str:token>/consent/", lay.lay_consent, name="lay-consent"),
    path("l/<str:token>/background/", lay.lay_background, name="lay-background"),
    path("l/<str:token>/instructions/", lay.lay_instructions, name="lay-instructions"),
    path("l/<str:token>/sentence/<int:item_id>/<str:panel>/", lay.lay_panel, name="lay-panel"),
    path("l/<str:token>/check/<int:check_id>/", lay.lay_check, name="lay-check"),
    path("l/<str:token>/done/", lay.lay_done, name="lay-done"),
]
