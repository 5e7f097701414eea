"""Sections other apps add to a study's analysis document (judging's judges: their calibration and
position bias, from the stored agreement of each run). Each is a function (study=...) -> a
JSON-ready value or None, registered from the app's AppConfig.ready(), so that evaluation imports
none of the apps that build on it. Light on purpose: a web worker imports it at start-up."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_SECTIONS: dict[str, Callable[..., Any]] = {}


def analysis_section_register(key: str, section: Callable[..., Any]) -> None:
    """Add (or, under the same key, replace) a section of the analysis document."""
    _SECTIONS[key] = section


def analysis_sections(*, study: Any) -> dict[str, Any]:
    """Every registered section's value for `study`, by key; a section that is None is left out."""
    out = {}
    for key in sorted(_SECTIONS):
        value = _SECTIONS[key](study=study)
        if value is not None:
            out[key] = value
    return out
