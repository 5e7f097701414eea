from django.urls import path
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.settings import api_settings

from evaluation import api, plan_api

app_name = "api"
urlpatterns = [
    # DRF's token view opts out of throttling; radlay's API throttles apply to it like to the rest
    # (wrong passwords are also locked out per username and IP, see AXES_* settings).
    path(
        "token/",
        ObtainAuthToken.as_view(throttle_classes=api_settings.DEFAULT_THROTTLE_CLASSES),
        name="token",
    ),
    path("studies/", api.StudyListView.as_view(), name="study-list"),
    path("studies/<slug:slug>/", api.StudyDetailView.as_view(), name="study-detail"),
    path("studies/<slug:slug>/sources/", api.SourceListView.as_view(), name="source-list"),
    path("studies/<slug:slug>/systems/", api.SystemListView.as_view(), name="system-list"),
    path(
        "studies/<slug:slug>/simplifications/",
        api.SimplificationListView.as_view(),
        name="simplification-list",
    ),
    path("studies/<slug:slug>/progress/", api.ProgressView.as_view(), name="progress"),
    path("studies/<slug:slug>/answers/", api.AnswerListView.as_view(), name="answer-list"),
    path("studies/<slug:slug>/analysis/", api.AnalysisView.as_view(), name="analysis"),
    path("studies/<slug:slug>/audit/", api.AuditView.as_view(), name="audit"),
    path("studies/<slug:slug>/exports/<str:file_format>/", api.ExportView.as_view(), name="export"),
    path("studies/<slug:slug>/plans/", plan_api.PlanListView.as_view(), name="plan-list"),
    path("studies/<slug:slug>/plans/<int:plan_id>/", plan_api.PlanDetailView.as_view(), name="plan-detail"),
]
