"""What the lay flow refuses for where the participant is (the views answer 409), as ValidationErrors
so that their messages reach the participant."""

from __future__ import annotations

from django.core.exceptions import ValidationError


class LayFlowError(ValidationError):
    """A request the flow refuses for where the participant is."""


class PanelClosed(LayFlowError):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """An answer to a panel the participant has left (or not reached yet)."""


class StudyNotReady(LayFlowError):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """The study has nothing a layperson could be shown (no source with a simplification)."""


class PreferenceConflict(ValidationError):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """Panel 3 ticks refused because the text is in the other question too (everything else of the
    save is stored). `conflicts` maps "most"/"least" to {text id: its label} of the refused ticks,
    so the page can mark those boxes. Not a LayFlowError: the participant may go on answering."""

    def __init__(self, messages: dict[str, list[str]], *, conflicts: dict[str, dict[int, str]]) -> None:
        super().__init__(messages)
        self.conflicts = conflicts
