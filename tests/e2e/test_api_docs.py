"""/api/docs/ renders with the network off: every request that leaves the live server is refused."""

import urllib.request
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db(transaction=True)


def test_api_docs_render_without_internet(page, live_server):
    get_user_model().objects.create_user("offline", password="offline-pw-1")
    local = urlsplit(live_server.url).netloc
    outside: list[str] = []

    def only_local(route):
        if urlsplit(route.request.url).netloc == local:
            return route.continue_()
        outside.append(route.request.url)
        return route.abort()

    # The server's first request imports the analysis stack: slow on a busy machine.
    urllib.request.urlopen(live_server.url + "/", timeout=120).close()
    page.route("**/*", only_local)
    page.goto("/dashboard/login/")
    page.fill("input[name=username]", "offline")
    page.fill("input[name=password]", "offline-pw-1")
    page.click("button[type=submit], input[type=submit]")
    page.goto("/api/docs/")
    page.locator(".swagger-ui .info .title").wait_for(state="visible")
    assert "radlay API" in page.locator(".swagger-ui .info .title").inner_text()
    page.locator(".opblock").first.wait_for(state="visible")
    assert outside == []


def test_pages_of_this_area_render_under_the_enforced_policy(page, live_server, settings):
    """With the production Content-Security-Policy on, the docs, the home page and the error pages
    load without one refused script or style."""
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": settings.CSP_DIRECTIVES}
    get_user_model().objects.create_user("csp", password="csp-pw-1")
    urllib.request.urlopen(live_server.url + "/", timeout=120).close()
    refused: list[str] = []
    page.on(
        "console",
        lambda message: (
            refused.append(f"{page.url}: {message.text}")
            if "Content Security Policy" in message.text
            else None
        ),
    )
    page.goto("/dashboard/login/")
    page.fill("input[name=username]", "csp")
    page.fill("input[name=password]", "csp-pw-1")
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url("**/dashboard/")
    refused.clear()  # the dashboard pages are covered by the template scan (tests/test_templates_csp.py)
    page.goto("/api/docs/")
    page.locator(".swagger-ui .info .title").wait_for(state="visible")
    for url in ("/", "/s/not-a-link/", "/no/such/page/"):
        page.goto(url)
        assert page.locator("h1").count() == 1, url
    assert refused == []
