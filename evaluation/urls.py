from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from evaluation.pages import adjudication_views, dashboard_views, plan_views, team_views

app_name = "evaluation"
urlpatterns = [
    path("", dashboard_views.study_list, name="study-list"),
    # Researchers need not be staff, so they sign in here rather than through the admin.
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="evaluation/login.html",
            redirect_authenticated_user=True,
            next_page=reverse_lazy("evaluation:study-list"),
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(next_page=reverse_lazy("evaluation:login")), name="logout"),
    path("<slug:slug>/", dashboard_views.study_detail, name="study-detail"),
    path("<slug:slug>/freshness/", dashboard_views.study_snapshot_status, name="study-freshness"),
    path(
        "<slug:slug>/progress-section/", dashboard_views.study_progress_section, name="study-progress-section"
    ),
    path("<slug:slug>/counts/", dashboard_views.study_counts_section, name="study-counts"),
    path("<slug:slug>/metrics/", dashboard_views.study_metrics, name="study-metrics"),
    path("<slug:slug>/progress/", dashboard_views.study_progress_page, name="study-progress"),
    path("<slug:slug>/correlations/", dashboard_views.study_correlations, name="study-correlations"),
    path("<slug:slug>/export.<str:file_format>", dashboard_views.study_export, name="study-export"),
    path("<slug:slug>/items.<str:file_format>", dashboard_views.study_item_export, name="study-item-export"),
    path("<slug:slug>/analysis.json", dashboard_views.study_analysis_json, name="study-analysis"),
    path("<slug:slug>/archive.zip", dashboard_views.study_archive, name="study-archive"),
    path("<slug:slug>/metrics.csv", dashboard_views.study_metrics_csv, name="study-metrics-csv"),
    path("<slug:slug>/report.html", dashboard_views.study_report, name="study-report"),
    path("<slug:slug>/adjudication/", adjudication_views.study_adjudication, name="study-adjudication"),
    path("<slug:slug>/plan/", plan_views.study_plan, name="study-plan"),
    path("<slug:slug>/team/", team_views.study_team, name="study-team"),
    path("<slug:slug>/activity/", team_views.study_activity, name="study-activity"),
    path("<slug:slug>/activity.csv", team_views.study_activity_csv, name="study-activity-csv"),
    path("<slug:slug>/plan/<int:plan_id>/", plan_views.study_plan_detail, name="study-plan-detail"),
]
