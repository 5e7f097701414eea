"""URL patterns of the rate-each-pair flow (included by surveys/urls.py, namespace "surveys")."""

from django.urls import path

from surveys.rate_each_pair import views as pairs

urlpatterns = [
    path("p/<str:token>/", pairs.pairs_start, name="pairs-start"),
    path("p/<str:token>/consent/", pairs.pairs_consent, name="pairs-consent"),
    path("p/<str:token>/pair/<int:text_id>/", pairs.pairs_page, name="pairs-page"),
    path("p/<str:token>/done/", pairs.pairs_done, name="pairs-done"),
]
