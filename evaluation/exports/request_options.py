"""The options an export request carries in its query string, read once for the API and the
dashboard's download links alike."""

from __future__ import annotations

from collections.abc import Mapping

# Spellings of "yes" in a query string (any case): ?include_external_ids=1, =true, =True, =yes, =on
# (an HTML checkbox's value).
_YES = frozenset({"1", "true", "yes", "on"})


def include_external_ids_asked(query: Mapping[str, str]) -> bool:
    """Whether the request asks for the recruiters' ids (`include_external_ids`). Whether the user
    may have them is the exporter's role rule, not this."""
    return str(query.get("include_external_ids", "")).strip().lower() in _YES


def originals_asked(query: Mapping[str, str]) -> bool:
    """Whether the request asks for the original reports instead of the de-identified sources
    (`originals`). Only an owner may have them, and the release is recorded
    (privacy.services.originals_release_record): that is the caller's rule, not this."""
    return str(query.get("originals", "")).strip().lower() in _YES
