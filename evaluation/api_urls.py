from django.urls import path

from evaluation import api, api_adjudication, api_plans
from qualification.api import QualificationResultsView

app_name = "api"
urlpatterns = [
    # Throttled like the rest of the API; wrong passwords are also locked out per username and
    # address (AXES_* settings).
    path("token/", api.TokenView.as_view(), name="token"),
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
    path("studies/<slug:slug>/items/<str:file_format>/", api.ItemExportView.as_view(), name="item-export"),
    path(
        "studies/<slug:slug>/adjudication/",
        api_adjudication.AdjudicationQueueView.as_view(),
        name="adjudication-queue",
    ),
    path(
        "studies/<slug:slug>/qualification/", QualificationResultsView.as_view(), name="qualification-results"
    ),
    path("studies/<slug:slug>/plans/", api_plans.PlanListView.as_view(), name="plan-list"),
    path("studies/<slug:slug>/plans/<int:plan_id>/", api_plans.PlanDetailView.as_view(), name="plan-detail"),
]
