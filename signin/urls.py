from django.urls import path

from signin import views
from signin.oidc import HospitalCallbackView, HospitalSignInView

app_name = "signin"
urlpatterns = [
    path("oidc/start/", HospitalSignInView.as_view(), name="oidc-start"),
    path("oidc/callback/", HospitalCallbackView.as_view(), name="oidc-callback"),
    path("second-factor/", views.second_factor, name="second-factor"),
]
