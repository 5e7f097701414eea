"""What a page of either survey flow (radiologist, layperson) does the same way: the seeded orders
of what it shows, blind labels for its texts, and the time spent on it (the client's "ms since the
last save", capped by a signed render time that every form POST sends back, so a page is timed
without JavaScript and an autosave cannot claim more time than the page was open)."""

from __future__ import annotations

import random
import string
import time
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from django.core import signing
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

# One timing interval longer than this is someone who walked away with the page open; counting it
# whole would make "time per page" mean "time until they came back".
MAX_INTERVAL_MS = 30 * 60 * 1000
T = TypeVar("T")


def seeded_shuffle(values: Iterable[T], *, seed: int, purpose: str) -> list[T]:
    """`values` in the random order drawn from a participant's stored `order_seed` for `purpose`
    (e.g. "lay-order", f"pref:{source_id}"): the same participant always sees the same order, and
    different purposes draw independent orders."""
    shuffled = list(values)
    random.Random(f"{seed}:{purpose}").shuffle(shuffled)
    return shuffled


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


def page_elapsed_ms(
    *, salt: str, page: Mapping[str, Any], stamp: str, client_ms: Any = None, now: float | None = None
) -> int:
    """The time a save adds to its page: the client's "ms since the last save" when it sent one,
    never more than the real time since the page was rendered (the signed `stamp`), else that
    render time itself (a plain POST without JavaScript). A forged or foreign stamp counts 0."""
    since_render = render_stamp_elapsed_ms(salt=salt, page=page, stamp=stamp, now=now)
    if client_ms in (None, ""):
        return since_render
    return min(elapsed_ms_clean(client_ms), since_render)


def free_text_clean(name: str, value: Any, *, max_length: int, what: str = "answer") -> str:
    """A participant's typed text, stripped; refuses what the database cannot store (NUL
    characters) and what is longer than `max_length`, naming the field, so it is a 4xx."""
    text = ("" if value is None else str(value)).strip()
    noun = _("justification") if what == "justification" else _("answer")
    if "\x00" in text:
        raise ValidationError(
            {name: _("Your %(what)s contains a character that cannot be saved (NUL).") % {"what": noun}}
        )
    if len(text) > max_length:
        raise ValidationError(
            {name: _("Please keep your %(what)s under %(n)d characters.") % {"what": noun, "n": max_length}}
        )
    return text
