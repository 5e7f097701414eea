"""What the lay flow refuses for where the participant is (the views answer 409), as ValidationErrors
so that their messages reach the participant."""

from __future__ import annotations

from django.core.exceptions import ValidationError


class LayFlowError(ValidationError):
    """A request the flow refuses for where the participant is."""


class PanelClosed(LayFlowError):
    """An answer to a panel the participant has left (or not reached yet)."""


class StudyNotReady(LayFlowError):
    """The study has nothing a layperson could be shown (no source with a simplification)."""
