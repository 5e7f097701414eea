"""What a page of either survey flow (radiologist, layperson) does the same way: blind labels for
the texts it shows, and the time spent on it (the client's "ms since the last save", or a signed
render time that a plain form POST sends back so a page is timed without JavaScript)."""

from __future__ import annotations

import string
import time
from collections.abc import Mapping
from typing import Any

from django.core import signing

# One timing interval longer than this is someone who walked away with the page open; counting it
# whole would make "time per page" mean "time until they came back".
MAX_INTERVAL_MS = 30 * 60 * 1000


def text_label(index: int) -> str:
    """Blind label of the index-th text on a page: A … Z, then AA, AB, …"""
    letters = string.ascii_uppercase
    label = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        label = letters[rest] + label
    return label


def elapsed_ms_clean(raw: Any) -> int:
    """The client's "ms since the last save": a whole number in [0, MAX_INTERVAL_MS]; anything else
    counts as 0 (timing is telemetry and must never cost a participant an answer)."""
    try:
        value = int(float(raw))
    except (TypeError, ValueError, OverflowError):
        return 0
    return max(0, min(value, MAX_INTERVAL_MS))


def render_stamp(*, salt: str, page: Mapping[str, Any], now: float | None = None) -> str:
    """A signed render time of the page identified by `page` (e.g. {"item": 3})."""
    return signing.dumps({**page, "at": time.time() if now is None else now}, salt=salt)


def render_stamp_elapsed_ms(
    *, salt: str, page: Mapping[str, Any], stamp: str, now: float | None = None
) -> int:
    """Time since `stamp` was made for this same page; 0 for a forged stamp or another page's."""
    try:
        payload = signing.loads(stamp, salt=salt)
    except signing.BadSignature:
        return 0
    if not isinstance(payload, dict) or any(payload.get(key) != value for key, value in page.items()):
        return 0
    seconds = (time.time() if now is None else now) - float(payload.get("at", 0))
    return elapsed_ms_clean(seconds * 1000)
