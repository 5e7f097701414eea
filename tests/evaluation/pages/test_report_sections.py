"""The registry through which other apps add sections to the study report (evaluation imports none
of them): registration replaces by key, and the order is the keys', not the apps'."""

from __future__ import annotations

import pytest

from evaluation.pages import report_sections
from evaluation.pages.report_sections import ReportSection, report_section_register, report_sections_render


@pytest.fixture
def empty_registry(monkeypatch):
    monkeypatch.setattr(report_sections, "_SECTIONS", {})


def section(key: str, title: str = "") -> ReportSection:
    return ReportSection(
        key=key,
        title=title or key,
        template="judging/_report_section.html",
        context=lambda *, study: {"judges": {"leaderboard": [], "selected": None, "study": study}},
    )


def test_judging_registered_its_section():
    (judges,) = [s for s in report_sections.report_sections() if s.key == "judges"]
    assert judges.template == "judging/_report_section.html" and judges.page == "judging:study-judges"


def test_sections_come_in_the_order_of_their_keys_whatever_the_order_of_registration(empty_registry):
    report_section_register(section("zeta"))
    report_section_register(section("alpha"))
    assert [s.key for s in report_sections.report_sections()] == ["alpha", "zeta"]


def test_registering_a_key_again_replaces_the_section(empty_registry):
    report_section_register(section("judges", "old"))
    report_section_register(section("judges", "new"))
    assert [s.title for s in report_sections.report_sections()] == ["new"]


def test_a_section_is_rendered_from_its_own_context(empty_registry):
    report_section_register(section("judges", "Judges"))
    (rendered,) = report_sections_render(study=None)
    assert rendered["key"] == "judges" and rendered["title"] == "Judges"
    assert "No judge run of this study has its agreement computed yet." in rendered["html"]
