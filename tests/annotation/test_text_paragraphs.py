"""A simplification's text keeps its paragraphs (a whole report's rewrite has several) while
whitespace within a paragraph is collapsed as before, so that identical texts still share one
SimplificationText and every text without a blank line hashes as it always did."""

from __future__ import annotations

import hashlib
import unicodedata

import pytest

from annotation.models import normalize_text, text_hash
from studies import source_services
from tests.annotation.factories import build_study


def collapsed(text: str) -> str:
    """The normalisation before paragraphs were kept."""
    return " ".join(unicodedata.normalize("NFC", text).split())


@pytest.mark.parametrize("text", ["No  acute\nfracture. ", "Cœur normal 🫀", "a\tb\r\nc", "", "   "])
def test_text_without_a_blank_line_normalizes_and_hashes_as_before(text):
    assert normalize_text(text) == collapsed(text)
    assert text_hash(text) == hashlib.sha256(collapsed(text).encode()).hexdigest()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("One.\n\nTwo.", "One.\n\nTwo."),
        ("  One  a.\n \n\n\tTwo\nb.\r\n\r\nThree. ", "One a.\n\nTwo b.\n\nThree."),
        ("\n\nOnly.\n\n", "Only."),
    ],
)
def test_paragraphs_are_kept_one_blank_line_apart(text, expected):
    assert normalize_text(text) == expected


@pytest.mark.django_db
def test_the_same_paragraphs_spaced_differently_share_one_text():
    study = build_study(slug="paragraphs", n_sources=1, systems=("a", "b"))
    source = study.sources.get()
    a, b = study.systems.order_by("position")
    first = source_services.simplification_upsert(source=source, system=a, text="One  part.\n\nTwo.")
    second = source_services.simplification_upsert(source=source, system=b, text="One part.\n \n\nTwo. ")
    assert first.shown_text_id == second.shown_text_id
    assert first.shown_text.text == "One part.\n\nTwo."
