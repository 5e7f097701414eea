"""Browser fixtures shared by every e2e test: headless Chromium (the system's /usr/bin/chromium,
driven by the playwright package; no browser download is ever needed) against pytest-django's
live server. Tests using `page` get a transactional database, so the server thread sees their data.

    def test_something(page, live_server):
        page.goto("/s/<token>/")   # relative URLs resolve against the live server
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# The sync Playwright API runs an event loop in the test thread; Django then refuses ORM calls from
# that thread unless told the test knows what it is doing.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = Path(os.environ.get("RADLAY_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS_DIR = Path(__file__).resolve().parents[2] / "test-artifacts"
TABLET = {"width": 1024, "height": 768}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """One headless Chromium for the session; skips when Chromium or playwright is missing."""
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set RADLAY_CHROMIUM)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser, live_server, transactional_db) -> Iterator[object]:
    """A fresh browser context (no cookies) at tablet size, with relative URLs going to the live
    server. Fails the test if the page raised an uncaught JavaScript error."""
    context = browser.new_context(base_url=live_server.url, viewport=TABLET)
    opened = context.new_page()
    opened.set_default_timeout(10_000)
    js_errors: list[str] = []
    opened.on("pageerror", lambda error: js_errors.append(str(error)))
    yield opened
    context.close()
    assert not js_errors, f"uncaught JavaScript errors: {js_errors}"


@pytest.fixture
def artifacts_dir() -> Path:
    """test-artifacts/ at the repository root (gitignored): screenshots for a human to look at."""
    ARTIFACTS_DIR.mkdir(exist_ok=True)
    return ARTIFACTS_DIR
