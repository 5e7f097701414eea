"""A researcher's walk through the console in a browser test, step by step as a person clicks it:
log in, create a study from a kind's card on the new-study form, upload its texts, invite a rater
group picked from the list, read the participants' links off the Participants page, download the
dashboard's files, and move the study through a study archive (downloaded from the dashboard,
uploaded on the console's import page) to check that the copy's dashboard gives the same files.

Everything here goes through pages and downloads, never through the answer tables, so the tests
that use it hold whichever way the answers are stored."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from django.contrib.auth import get_user_model

from tests.e2e.dashboard import download

PASSWORD = "ada-pw-123"
# Database keys differ in a copy: columns and JSON keys named like one are left out of comparisons.
KEY = re.compile(r"(^|_)(id|pk|ids)$")


def log_in(page, username: str = "ada") -> None:
    """A staff account (one that may create studies) signs in on the dashboard's login page."""
    get_user_model().objects.create_user(username, password=PASSWORD, is_staff=True)
    page.goto("/dashboard/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.get_by_role("button", name="Sign in").click()


def follow(page, link: str) -> None:
    """Click the first link named `link` (the console's own navigation, not typed URLs)."""
    with page.expect_navigation():
        page.get_by_role("link", name=link, exact=True).first.click()


def create(page, *, title: str, slug: str, kind: str) -> None:
    """From the study list's "New study": the kind's card (which cites its paper), then Create."""
    from playwright.sync_api import expect

    page.goto("/dashboard/")
    with page.expect_navigation():
        page.click("#new-study")
    page.fill("#id_title", title)
    page.fill("#id_slug", slug)
    card = page.locator(f'.kind[data-kind="{kind}"]')
    expect(card.locator(".citation")).to_contain_text("From:")
    page.check(f"#kind-{kind}")
    with page.expect_navigation():
        page.click("#create-study")
    expect(page.locator("#study-status")).to_have_text("Draft")


def upload(page, path: Path, sources: int) -> None:
    from playwright.sync_api import expect

    follow(page, "Upload sources")
    page.set_input_files("input[type=file]", str(path))
    with page.expect_navigation():
        page.get_by_role("button", name="Upload and import").click()
    expect(page.locator("[data-upload-status=succeeded]")).to_contain_text(f"Imported: {sources} sources")


def invite(page, group_label: str, count: int) -> None:
    """Invite `count` of the group the list names `group_label` (e.g. "radiologist (0 invited)")."""
    follow(page, "Participants")
    page.select_option("#id_role", label=group_label)
    page.fill("#id_count", str(count))
    with page.expect_navigation():
        page.get_by_role("button", name="Create invites").click()


def links(page, slug: str) -> dict[str, str]:
    """Each participant's invitation link, by pseudonym, as the Participants page shows them."""
    page.goto(f"/console/{slug}/participants/")
    rows = page.locator("tr[data-participant]")
    return {
        rows.nth(i).get_attribute("data-participant"): rows.nth(i).locator("input.link-box").input_value()
        for i in range(rows.count())
    }


def launch(page) -> None:
    """The Flows page's Launch button opens the study."""
    from playwright.sync_api import expect

    follow(page, "Flows")
    with page.expect_navigation():
        page.click("#launch-study")
    expect(page.locator("#study-status")).to_have_text("Open")


def screenshots(page, artifacts_dir: Path, name: str) -> None:
    """Screenshots at a laptop's width and a phone's, where the page must not scroll sideways."""
    for width, height in ((1280, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(artifacts_dir / f"{name}_{width}.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390, name
    page.set_viewport_size({"width": 1280, "height": 900})


def answers_csv(page, slug: str) -> list[dict]:
    """The dashboard's "Answers · CSV", as rows."""
    page.goto(f"/dashboard/{slug}/")
    document = download(page, page.get_by_role("button", name="Answers · CSV"))
    return list(csv.DictReader(io.StringIO(document.decode("utf-8-sig"))))


# --- the archive, moved in the browser ------------------------------------------------------------


def archive_moved(page, *, slug: str, copy: str, tmp_path: Path) -> dict[str, int]:
    """Download the study's archive with the original reports from its dashboard (the researcher
    owns the study), upload it on the console's import page, read the manifest's counts and
    import it as `copy`. Returns the manifest's rows per table."""
    from playwright.sync_api import expect

    page.goto(f"/dashboard/{slug}/")
    archive = tmp_path / f"{slug}.zip"
    archive.write_bytes(download(page, page.locator("#archive-originals")))
    page.goto("/dashboard/")
    with page.expect_navigation():
        page.get_by_role("link", name="Import a study archive").click()
    page.set_input_files("input[type=file]", str(archive))
    with page.expect_navigation():
        page.get_by_role("button", name="Read the archive").click()
    expect(page.locator("#archive-sources")).to_contain_text("carries the original reports")
    rows = page.locator("#archive-counts tbody tr")
    counts = {
        rows.nth(i).locator("td").first.inner_text(): int(rows.nth(i).locator("td.num").inner_text())
        for i in range(rows.count())
    }
    page.fill("#id_slug", copy)
    with page.expect_navigation():
        page.get_by_role("button", name="Import the study").click()
    assert page.url.endswith(f"/console/{copy}/"), page.url
    expect(page.locator("body")).to_contain_text(f"imported from the archive of {slug}")
    return counts


def _without_keys(value, slugs: tuple[str, str]):
    """`value` without its database keys, with the original's and the copy's slugs made one."""
    if isinstance(value, dict):
        return {k: _without_keys(v, slugs) for k, v in value.items() if not KEY.search(str(k))}
    if isinstance(value, list):
        return [_without_keys(v, slugs) for v in value]
    if isinstance(value, str):
        for slug in sorted(slugs, key=len, reverse=True):
            value = value.replace(slug, "SLUG")
    return value


def _csv_without_keys(document: bytes, slugs: tuple[str, str]) -> list[list]:
    rows = list(csv.reader(io.StringIO(document.decode("utf-8-sig"))))
    if not rows:
        return rows
    keep = [i for i, name in enumerate(rows[0]) if not KEY.search(name)]
    return [[_without_keys(row[i] if i < len(row) else "", slugs) for i in keep] for row in rows]


def dashboard_files(page, slug: str, slugs: tuple[str, str]) -> dict[str, object]:
    """What the study's dashboard gives to download, by its own buttons and links: the analysis
    (JSON), the answers (CSV and JSON), the metrics (CSV), and the protocol's wide CSV and the
    instrument items' long CSV where the page offers them; database keys left out."""
    page.goto(f"/dashboard/{slug}/", timeout=180_000)
    files: dict[str, object] = {
        "analysis.json": json.loads(download(page, page.get_by_role("link", name="Analysis · JSON"))),
        "answers.json": json.loads(download(page, page.get_by_role("button", name="Answers · JSON"))),
    }
    for name, control in (
        ("answers.csv", page.get_by_role("button", name="Answers · CSV")),
        ("metrics.csv", page.get_by_role("link", name="Metrics · CSV")),
        ("protocol-wide.csv", page.locator("#protocol-wide-csv")),
        ("items-long.csv", page.locator("#instrument-items + p").get_by_role("link", name="long CSV")),
    ):
        if control.count():
            files[name] = _csv_without_keys(download(page, control), slugs)
    files["analysis.json"] = _without_keys(files["analysis.json"], slugs)
    files["answers.json"] = _without_keys(files["answers.json"], slugs)
    return files


def copy_reproduces_the_files(page, *, slug: str, copy: str, tmp_path: Path) -> dict[str, int]:
    """Move the study through its archive in the browser and check that the copy's dashboard gives
    the same analysis and exports as the original's. Returns the manifest's counts."""
    slugs = (slug, copy)
    before = dashboard_files(page, slug, slugs)
    counts = archive_moved(page, slug=slug, copy=copy, tmp_path=tmp_path)
    after = dashboard_files(page, copy, slugs)
    assert set(after) == set(before)
    for name in before:
        assert after[name] == before[name], name
    return counts
