from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/", include("evaluation.api_urls")),
    path("dashboard/", include("evaluation.urls")),
    path("generation/", include("generation.urls")),
    path("ml/", include("ml.urls")),
    path("", include("annotation.urls")),
]

handler404 = "evaluation.api_errors.page_not_found"
