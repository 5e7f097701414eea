"""A researcher in a browser test: logged in to the dashboard in a context of their own, and the
files the dashboard's download links give."""

from __future__ import annotations

from pathlib import Path


def researcher_page(browser, live_server, study, *, analysed: bool = True):
    """(context, page): a new researcher of `study` (its owner), logged in, on the study's dashboard
    page; with `analysed` the analysis is computed first, as the worker does when answers change.
    Close the context when done."""
    from django.contrib.auth import get_user_model

    from evaluation.services import analysis_snapshot_compute_here

    if analysed:
        analysis_snapshot_compute_here(study=study)
    user = get_user_model().objects.create_user(f"{study.slug}-researcher", password="e2e-pass-1")
    study.researchers.add(user)
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto("/dashboard/login/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", "e2e-pass-1")
    with page.expect_navigation():
        page.click("form button[type=submit]")
    page.goto(f"/dashboard/{study.slug}/")
    return context, page


def download(page, control) -> bytes:
    """The bytes of the file that clicking `control` (a link or a form's button) downloads."""
    with page.expect_download() as started:
        control.click()
    return Path(started.value.path()).read_bytes()
