"""Reading a study's data policy and the texts each audience is given."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from django.db.models import Count, F, Q, QuerySet
from django.db.models.functions import Coalesce

from annotation.models import Source, Study, text_hash
from privacy.models import DataPolicy, DeidFinding, SourceDeidentification

# Who receives a source's text: a model (generation, judges), a layperson, a radiologist, or
# whoever takes an export, the study archive or the API.
Audience = Literal["model", "lay", "expert", "export"]


def data_policy_of(*, study: Study) -> DataPolicy:
    """The study's policy row, or an unsaved default one (`deidentified`) when it has none."""
    policy = DataPolicy.objects.filter(study=study).first()
    return policy if policy is not None else DataPolicy(study=study)


def source_texts(*, sources: Iterable[Source], audience: Audience, originals: bool = False) -> dict[int, str]:
    """The text each source is shown as, by source id: its de-identified text, except that
    radiologists see originals where an owner chose so, and an export does where an owner asked
    (`originals=True`, recorded by `privacy.services.originals_release_record`). A source never
    de-identified (imported before de-identification existed) keeps its original."""
    sources = list(sources)
    if not sources:
        return {}
    if audience == "export" and originals:
        return {s.pk: s.text for s in sources}
    # One query: each source's de-identified text and whether its study shows radiologists the
    # originals (a survey page asks this on every GET).
    rows = Source.objects.filter(pk__in=[s.pk for s in sources]).values_list(
        "pk", "deidentification__text", "study__data_policy__originals_for_radiologists"
    )
    shown: dict[int, str | None] = {}
    for pk, deidentified, originals_for_radiologists in rows:
        shown[pk] = None if audience == "expert" and originals_for_radiologists else deidentified
    return {s.pk: shown.get(s.pk) or s.text for s in sources}


def sources_with_export_text(sources: QuerySet[Source], *, originals: bool = False) -> QuerySet[Source]:
    """`sources` annotated with `shown_text`, the text an export hands out (the rule of
    `source_texts` for the "export" audience, in SQL, for paginated lists such as the API's)."""
    if originals:
        return sources.annotate(shown_text=F("text"))
    return sources.annotate(shown_text=Coalesce(F("deidentification__text"), F("text")))


def source_text(*, source: Source, audience: Audience, originals: bool = False) -> str:
    """One source's text for `audience`. A survey page's source comes with what the rule needs
    read by the page's own query (annotation/access.py sets `deidentified_text`, and for a
    radiologist `originals_for_radiologists`): then no query is made."""
    if audience in ("lay", "expert") and hasattr(source, "deidentified_text"):
        if audience == "expert" and not hasattr(source, "originals_for_radiologists"):
            return source_texts(sources=[source], audience=audience)[source.pk]
        if audience == "expert" and source.originals_for_radiologists:
            return source.text
        return source.deidentified_text or source.text
    return source_texts(sources=[source], audience=audience, originals=originals)[source.pk]


def unresolved_sources(*, study: Study) -> list[str]:
    """Keys of the study's sources that block approval: a finding still to review, or no
    de-identification of their current text."""
    blocked = set(
        DeidFinding.objects.filter(source__study=study, status=DeidFinding.Status.REVIEW).values_list(
            "source__key", flat=True
        )
    )
    done = dict(
        SourceDeidentification.objects.filter(source__study=study).values_list("source_id", "source_hash")
    )
    for source_id, key, text in Source.objects.filter(study=study).values_list("pk", "key", "text"):
        if done.get(source_id) != text_hash(text):
            blocked.add(key)
    return sorted(blocked)


def finding_counts(*, study: Study) -> dict[str, dict[str, int]]:
    """Per kind: findings kept (accepted), to review, removed; and how many a reviewer edited."""
    counts: dict[str, dict[str, int]] = {}
    for kind, status, edited in DeidFinding.objects.filter(source__study=study).values_list(
        "kind", "status", "edited"
    ):
        row = counts.setdefault(kind, {"accepted": 0, "review": 0, "removed": 0, "edited": 0})
        row[status] += 1
        row["edited"] += int(edited)
    return dict(sorted(counts.items()))


def review_page(*, study: Study, offset: int = 0, limit: int = 25) -> list[dict]:
    """Sources for the review page, those with a finding to review first: each with its text cut
    into segments, a finding's segment carrying the finding (highlighted in place)."""
    sources = list(
        Source.objects.filter(study=study)
        .annotate(to_review=Count("deid_findings", filter=Q(deid_findings__status=DeidFinding.Status.REVIEW)))
        .order_by("-to_review", "position")[offset : offset + limit]
    )
    findings: dict[int, list[DeidFinding]] = {}
    for finding in DeidFinding.objects.filter(source__in=sources).order_by("start"):
        findings.setdefault(finding.source_id, []).append(finding)
    rows = []
    for source in sources:
        segments: list[tuple[str, DeidFinding | None]] = []
        at = 0
        for finding in findings.get(source.pk, []):
            segments.append((source.text[at : finding.start], None))
            segments.append((source.text[finding.start : finding.end], finding))
            at = finding.end
        segments.append((source.text[at:], None))
        rows.append({"source": source, "segments": segments, "to_review": source.to_review})
    return rows
