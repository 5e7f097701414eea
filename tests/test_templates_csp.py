"""The templates need no 'unsafe-inline' in the Content-Security-Policy: no inline <script>, no
<style> block, no style="" attribute, no inline event handler (onclick=, hx-on)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from django.conf import settings

TEMPLATES = Path(settings.BASE_DIR) / "templates"
# The downloadable report is one self-contained file (its styles inline, no scripts); the view
# serves it with a policy of its own (evaluation.pages.dashboard_views.study_report).
EXEMPT = {"evaluation/report.html"}
# Files that still break the rule, to be fixed by their owners; the list may only shrink.
KNOWN_OFFENDERS: set[str] = set()


class InlineFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name for name, _ in attrs}
        line = self.getpos()[0]
        if tag == "script" and "src" not in names:
            self.found.append(f"line {line}: inline <script>")
        if tag == "style":
            self.found.append(f"line {line}: <style> block")
        for name in names:
            if name == "style":
                self.found.append(f"line {line}: style attribute on <{tag}>")
            elif name.startswith("on") or name.startswith("hx-on"):
                self.found.append(f"line {line}: inline event handler {name}= on <{tag}>")


DJANGO_COMMENTS = re.compile(r"{#.*?#}|{% comment %}.*?{% endcomment %}", re.DOTALL)


def inline_code(text: str) -> list[str]:
    finder = InlineFinder()
    finder.feed(DJANGO_COMMENTS.sub("", text))
    finder.close()
    return finder.found


def offenders() -> dict[str, list[str]]:
    found = {}
    for path in sorted(TEMPLATES.rglob("*.html")):
        name = path.relative_to(TEMPLATES).as_posix()
        problems = inline_code(path.read_text(encoding="utf-8"))
        if problems and name not in EXEMPT:
            found[name] = problems
    return found


def test_the_finder_sees_every_kind_of_inline_code():
    assert inline_code("<script>alert(1)</script>")
    assert inline_code("<style>p{color:red}</style>")
    assert inline_code('<p style="color:red">x</p>')
    assert inline_code('<button onclick="go()">x</button>')
    assert inline_code('<select onchange="this.form.submit()"></select>')
    assert inline_code('<div hx-on:click="go()"></div>')
    assert not inline_code('<script src="/static/x.js"></script><link rel="stylesheet" href="/s.css">')
    assert not inline_code('<body hx-headers=\'{"X-CSRFToken": "t"}\' class="x">')
    assert not inline_code("{# not a <style> block #}<p>x</p>")


def test_no_new_template_needs_unsafe_inline():
    new = {name: problems for name, problems in offenders().items() if name not in KNOWN_OFFENDERS}
    assert not new, f"inline code that the Content-Security-Policy forbids: {new}"


def test_the_list_of_known_offenders_only_shrinks():
    fixed = KNOWN_OFFENDERS - set(offenders())
    assert not fixed, f"these templates are clean now; remove them from KNOWN_OFFENDERS: {sorted(fixed)}"
