from django.urls import path

from evaluation import views

app_name = "evaluation"
urlpatterns = [
    path("", views.study_list, name="study-list"),
    path("<slug:slug>/", views.study_detail, name="study-detail"),
    path("<slug:slug>/correlations/", views.study_correlations, name="study-correlations"),
    path("<slug:slug>/export.<str:file_format>", views.study_export, name="study-export"),
    path("<slug:slug>/analysis.json", views.study_analysis_json, name="study-analysis"),
    path("<slug:slug>/report.html", views.study_report, name="study-report"),
]
