"""Where the adaptive allocation (evaluation/planning/adaptive.py) plugs into the lay flow's row handout:
the allocation reads the analysis, which builds on annotation, so annotation imports nothing of
it; `EvaluationConfig.ready()` registers the handout here. With nothing registered the fixed
Latin square hands out every row."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from annotation.models import Study


class RecruitmentClosed(Exception):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """The study reached its target and closes recruitment itself: no row for a newcomer."""


RowHandout = Callable[..., "int | None"]
_handouts: list[RowHandout] = []


def row_handout_register(handout: RowHandout) -> None:
    """`handout(study=..., design=..., live_rows=[...])` returns the row for a newcomer, or None
    where the fixed square applies; it raises RecruitmentClosed when recruitment closed."""
    # ready() may run more than once (tests that reload apps): one registration.
    if handout not in _handouts:
        _handouts.append(handout)


def adaptive_row(*, study: Study, design: Any, live_rows: list[int]) -> int | None:
    for handout in _handouts:
        row = handout(study=study, design=design, live_rows=live_rows)
        if row is not None:
            return row
    return None
