"""URL patterns of the radiologist flow (included by surveys/urls.py, namespace "surveys")."""

from django.urls import path

from surveys.radiologist import views as expert

urlpatterns = [
    path("radiologist/", expert.expert_studies, name="expert-studies"),
    path("radiologist/login/", expert.expert_login, name="expert-login"),
    path("radiologist/logout/", expert.expert_logout, name="expert-logout"),
    path("r/<str:token>/", expert.expert_start, name="expert-start"),
    path("r/<str:token>/instructions/", expert.expert_instructions, name="expert-instructions"),
    path("r/<str:token>/page/<int:item_id>/", expert.expert_page, name="expert-page"),
    path("r/<str:token>/index/", expert.expert_index, name="expert-index"),
    path("r/<str:token>/done/", expert.expert_done, name="expert-done"),
]
