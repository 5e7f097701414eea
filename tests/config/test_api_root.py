"""/api/ answers with a listing of the API, and /api/docs/ serves Swagger UI from the app itself."""

import pytest

pytestmark = pytest.mark.django_db


def test_api_root_lists_the_endpoints(client):
    response = client.get("/api/")
    assert response.status_code == 200
    listing = response.json()
    assert listing["docs"].endswith("/api/docs/")
    assert listing["schema"].endswith("/api/schema/")
    assert listing["studies"].endswith("/api/studies/")
    assert listing["study"]["analysis"].endswith("/api/studies/{slug}/analysis/")
    assert listing["exports"].endswith("/api/studies/{slug}/exports/{format}/")


def test_docs_load_swagger_ui_from_this_server_only(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("api-reader", password="pw"))
    html = client.get("/api/docs/").content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn.jsdelivr" not in html and "unpkg" not in html
    # The start-up script is a separate file, so the CSP needs no 'unsafe-inline'.
    assert "<style" not in html and "<script>" not in html
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200 and "SwaggerUIBundle" in script.content.decode()
