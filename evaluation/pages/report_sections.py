"""Sections that other apps contribute to the study report and the dashboard's navigation.

Evaluation does not import the apps that build on it: an app that has a section of its own (judging's
judges beside the radiologists) registers it here from its `AppConfig.ready()`, and the report
renders every registered section after its own tables. So the arrow points one way: judging →
evaluation.

    # judging/apps.py
    def ready(self):
        from evaluation.pages.report_sections import ReportSection, report_section_register
        from judging.report import judge_report_section

        report_section_register(ReportSection(key="judges", ..., context=judge_report_section))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.template.loader import render_to_string

from annotation.models import Study


@dataclass(frozen=True)
class ReportSection:
    """One contributed section. `context(study=...)` returns the context of `template` (which sees
    nothing else of the report's context); `page`, when given, is the name of a URL taking the
    study's slug that the dashboard links to as `page_label`."""

    key: str
    title: str
    template: str
    context: Callable[..., Mapping[str, Any]]
    page: str = ""
    page_label: str = ""


_SECTIONS: dict[str, ReportSection] = {}


def report_section_register(section: ReportSection) -> None:
    """Add `section` to the report (again under the same key: replaced, as `ready()` may run twice
    in tests that reload the app registry)."""
    _SECTIONS[section.key] = section


def report_sections() -> list[ReportSection]:
    """The registered sections, by key: the order does not depend on the order of INSTALLED_APPS."""
    return [_SECTIONS[key] for key in sorted(_SECTIONS)]


def report_sections_render(*, study: Study) -> list[dict[str, Any]]:
    """Each registered section of `study`'s report: its key, title and rendered HTML."""
    return [
        {
            "key": section.key,
            "title": section.title,
            "html": render_to_string(section.template, dict(section.context(study=study))),
        }
        for section in report_sections()
    ]
