from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from config import api_root, errors
from config.views import home

urlpatterns = [
    # First: the surveys' URLs are most of the traffic (an autosave per answer), and a URL is tried
    # against every pattern before it in turn. Their prefixes (s/, r/, l/, p/, c/, radiologist/,
    # join/) are no other app's. Last in surveys.urls: a cut or mistyped survey link gets the
    # survey's "link not valid" page.
    path("", include("surveys.urls")),
    # The qualification round's practice pages (q/…: a prefix the survey's catch-all leaves alone).
    path("", include("qualification.urls")),
    path("", home, name="home"),
    path("admin/", admin.site.urls),
    path("api/", api_root.api_root, name="api-root"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its start-up script as a file: no inline script for the CSP to allow.
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api/swagger_ui.html"),
        name="api-docs",
    ),
    path("api/", include("judging.api_urls")),
    path("api/", include("evaluation.api_urls")),
    path("dashboard/", include("evaluation.urls")),
    path("console/", include("console.urls")),
    path("signin/", include("signin.urls")),
    path("generation/", include("generation.urls")),
    path("judging/", include("judging.urls")),
    path("ml/", include("ml.urls")),
    path("favicon.ico", errors.favicon),
]

handler400 = errors.bad_request
handler403 = errors.permission_denied
# JSON for unknown /api/ URLs, the branded page elsewhere.
handler404 = "evaluation.api_errors.page_not_found"
handler500 = errors.server_error
