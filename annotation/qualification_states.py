"""The states of Participant.qualification, by name. Django-free: annotation/qualification_gate.py
gates the real pages by them."""

from __future__ import annotations

NONE = ""  # no round asked (no rule for the participant's flow and group, or not yet entered)
DUE = "due"  # practising: the flow's real pages send the participant to the round
PASSED = "passed"
FLAGGED = "flagged"  # failed, and the study went on with the rater flagged
FAILED = "failed"  # failed and screened out

# The states in which a flow's real pages are not shown.
GATED = frozenset({DUE, FAILED})
