from django.urls import path

from judging import views

app_name = "judging"
urlpatterns = [
    path("<slug:slug>/", views.study_judges, name="study-judges"),
    path("<slug:slug>/judge-answers.csv", views.judge_answers_csv, name="answers-csv"),
    path("<slug:slug>/runs/<int:run_id>/", views.run_detail, name="run-detail"),
    path("<slug:slug>/runs/<int:run_id>/cancel/", views.run_cancel, name="run-cancel"),
    path("<slug:slug>/runs/<int:run_id>/resume/", views.run_resume, name="run-resume"),
    path("<slug:slug>/runs/<int:run_id>/agreement/", views.run_agreement, name="run-agreement"),
]
