"""A study whose sources carry identifiers, de-identified by the privacy services, for the tests
that every archive and export hands out de-identified text unless an owner asks for originals."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth import get_user_model

from annotation.models import Source, Study
from privacy.models import DeidFinding, SourceDeidentification
from privacy.services import deidentification_approve, finding_review, study_deidentify
from studies.team_services import study_member_add
from tests.evaluation.analysis.test_study_frames import build_answered_study

# Per source: the identifiers written around its sentence (a name, an MRN, a phone number, a
# clinician's signature). Each must be found by the de-identification, or the tests prove nothing.
IDENTIFIERS = (
    ("Amaka Okafor", "00483921", "(617) 555-0142", "Lindqvist"),
    ("Siobhan Gallagher", "00519377", "(617) 555-0198", "Takahashi"),
    ("Rajesh Venkataraman", "00611402", "(617) 555-0177", "Abernathy"),
    ("Małgorzata Wiśniewska", "00720045", "(617) 555-0110", "Oyelaran"),
)


def identified(sentence: str, name: str, mrn: str, phone: str, doctor: str) -> str:
    return f"Patient: {name}, MRN {mrn}, tel. {phone}. {sentence} Read by Dr. {doctor}."


def identified_study(
    *, slug: str, build: Callable[[str], Study] | None = None
) -> tuple[Study, object, list[str]]:
    """A study built by `build(slug)` (by default an answered study of four sources:
    tests/evaluation/analysis/test_study_frames.build_answered_study) whose first sources' original
    texts carry IDENTIFIERS, de-identified and approved by its owner. Returns the study, the owner
    and the identifiers (every one the de-identification replaced)."""
    study = build(slug) if build else build_answered_study(slug=slug, n_sources=len(IDENTIFIERS))
    owner = get_user_model().objects.create_user(f"{slug}-owner", password="pw")
    study_member_add(study=study, user=owner, role="owner", actor="test")
    sources = list(study.sources.order_by("position"))
    assert len(sources) >= len(IDENTIFIERS)
    for source, ids in zip(sources, IDENTIFIERS, strict=False):
        Source.objects.filter(pk=source.pk).update(text=identified(source.text, *ids))
    study_deidentify(study=study, actor=owner)
    for finding in DeidFinding.objects.filter(source__study=study, status=DeidFinding.Status.REVIEW):
        finding_review(finding=finding, action="accept", actor=owner)
    deidentification_approve(study=study, actor=owner)
    words = [
        word for name, mrn, phone, doctor in IDENTIFIERS for word in (*name.split(), mrn, phone[6:], doctor)
    ]
    for text in SourceDeidentification.objects.filter(source__study=study).values_list("text", flat=True):
        left = [word for word in words if word in text]
        assert not left, f"the de-identification left {left} in {text!r}"
    return study, owner, words
