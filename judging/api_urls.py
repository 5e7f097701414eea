from django.urls import path

from judging import api

app_name = "judging-api"
urlpatterns = [
    path("studies/<slug:slug>/judges/", api.JudgeRunListView.as_view(), name="run-list"),
    path("studies/<slug:slug>/judges/answers.csv", api.JudgeAnswerExportView.as_view(), name="answers-csv"),
    path("studies/<slug:slug>/judges/<int:run_id>/", api.JudgeRunDetailView.as_view(), name="run-detail"),
]
