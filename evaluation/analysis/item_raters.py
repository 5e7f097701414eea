"""Raters of instrument items that other apps hold (judging's LLM judges): each a function
(study=...) -> frame in evaluation/analysis/instrument_items.py's ANSWER_COLUMNS, registered from that app's
AppConfig.ready(), so that evaluation imports none of the apps that build on it. Light on purpose:
a web worker imports it at start-up (no pandas here; the providers import theirs when called)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_ITEM_RATERS: dict[str, Callable[..., Any]] = {}


def item_raters_register(key: str, frame: Callable[..., Any]) -> None:
    """Add (or, under the same key, replace) a source of non-human raters' item answers."""
    _ITEM_RATERS[key] = frame


def item_raters() -> list[Callable[..., Any]]:
    """The registered sources, by key (the order does not depend on INSTALLED_APPS)."""
    return [_ITEM_RATERS[key] for key in sorted(_ITEM_RATERS)]
