from django.urls import path

from generation import views

app_name = "generation"
urlpatterns = [
    path("batches/", views.batch_list, name="batch_list"),
    path("batches/<int:batch_id>/", views.batch_detail, name="batch_detail"),
    path("batches/<int:batch_id>/cancel/", views.batch_cancel, name="batch_cancel"),
    path("batches/<int:batch_id>/resume/", views.batch_resume, name="batch_resume"),
]
