"""The site's front page (config/views.py) points researchers at the dashboard and the API."""

import pytest
from django.urls import reverse


@pytest.mark.django_db
def test_home_links_the_researcher_pages(client):
    response = client.get("/")
    page = response.content.decode()
    assert response.status_code == 200
    for name in ("admin:index", "evaluation:study-list", "api-docs"):
        assert f'href="{reverse(name)}"' in page, name
