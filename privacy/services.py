"""Writing a study's data policy and its sources' de-identification. Every change is recorded in
the study's activity log; a change to the de-identification withdraws an earlier approval."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone

from annotation.activity_services import activity_record
from annotation.models import Source, Study, StudyMembership, text_hash
from privacy.detection.spans import DETECTOR_VERSION, KINDS, REVIEW_BELOW, placeholder, redact
from privacy.models import DataPolicy, DeidFinding, SourceDeidentification
from privacy.selectors import finding_counts, unresolved_sources

Policy = DataPolicy.Policy


def _require_owner(*, study: Study, actor: Any) -> None:
    """Owners decide: a user must own the study (or be a superuser); a command run by the
    operator (`actor` a string such as "manage.py study policy") may."""
    if isinstance(actor, str):
        return
    if getattr(actor, "is_superuser", False):
        return
    is_owner = StudyMembership.objects.filter(
        study=study, user=actor, role=StudyMembership.Role.OWNER
    ).exists()
    if not is_owner:
        raise PermissionDenied(
            "Only an owner of the study may change its data policy or approve its de-identification."
        )


def data_policy_change(
    *, study: Study, policy: str, endpoint: str = "", reason: str, actor: Any
) -> DataPolicy:
    """Set the study's data policy. Needs an owner and a reason; `external-approved` needs the
    endpoint the data's agreement allows (an http(s) URL), the other policies none."""
    _require_owner(study=study, actor=actor)
    errors: dict[str, str] = {}
    if policy not in Policy.values:
        errors["policy"] = f"Data policy: {policy!r} is not one of {', '.join(Policy.values)}."
    endpoint = endpoint.strip().rstrip("/")
    if policy == Policy.EXTERNAL_APPROVED:
        if not endpoint:
            errors["endpoint"] = "Endpoint: external-approved needs the endpoint the data's agreement allows."
        else:
            try:
                URLValidator(schemes=["http", "https"])(endpoint)
            except ValidationError:
                errors["endpoint"] = f"Endpoint: {endpoint!r} is not an http(s) URL."
    elif endpoint:
        errors["endpoint"] = "Endpoint: only the external-approved policy names an endpoint."
    if not reason.strip():
        errors["reason"] = "Reason: say why the policy changes (it is kept in the activity log)."
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        row, _ = DataPolicy.objects.select_for_update().get_or_create(study=study)
        before = {"policy": row.policy, "endpoint": row.endpoint}
        row.policy, row.endpoint = policy, endpoint
        row.full_clean(exclude=["study", "approved_by"])
        row.save()
        activity_record(
            study=study,
            actor=actor,
            verb="data_policy.changed",
            obj=row,
            details={
                "from": before,
                "to": {"policy": policy, "endpoint": endpoint},
                "reason": reason.strip(),
            },
        )
    return row


def originals_for_radiologists_set(*, study: Study, show: bool, reason: str, actor: Any) -> DataPolicy:
    """Whether the study's radiologists see original reports instead of de-identified ones."""
    _require_owner(study=study, actor=actor)
    if not reason.strip():
        raise ValidationError({"reason": "Reason: say why (it is kept in the activity log)."})
    with transaction.atomic():
        row, _ = DataPolicy.objects.select_for_update().get_or_create(study=study)
        row.originals_for_radiologists = show
        row.save(update_fields=["originals_for_radiologists", "updated_at"])
        activity_record(
            study=study,
            actor=actor,
            verb="data_policy.radiologists_see_originals"
            if show
            else "data_policy.radiologists_see_deidentified",
            obj=row,
            details={"reason": reason.strip()},
        )
    return row


def originals_release_record(*, study: Study, actor: Any, purpose: str) -> None:
    """Record that an owner takes the original reports out (an export, the archive, the API)."""
    _require_owner(study=study, actor=actor)
    activity_record(study=study, actor=actor, verb="sources.originals_released", details={"purpose": purpose})


# --- Detection ---------------------------------------------------------------------------------------


def _findings_of(source: Source) -> list[DeidFinding]:
    # Presidio (and the spaCy and numpy it imports) loads where detection runs, never in a web
    # worker at start-up.
    from privacy.detection.engine import detect

    return [
        DeidFinding(
            source=source,
            start=span.start,
            end=span.end,
            kind=span.kind,
            original=source.text[span.start : span.end],
            replacement=placeholder(span.kind),
            status=DeidFinding.Status.REVIEW if span.score < REVIEW_BELOW else DeidFinding.Status.ACCEPTED,
            score=span.score,
            recognizer=span.recognizer[:60],
        )
        for span in detect(source.text)
    ]


def _deidentified_text(source: Source, findings: Iterable[DeidFinding]) -> str:
    # A finding still to review is replaced too: what is unsure stays hidden until resolved.
    kept = [(f.start, f.end, f.replacement) for f in findings if f.status != DeidFinding.Status.REMOVED]
    return redact(source.text, kept)


def _withdraw_approval(*, study: Study, actor: Any, why: str) -> None:
    row = DataPolicy.objects.filter(study=study, approved_at__isnull=False).first()
    if row is None:
        return
    row.approved_at, row.approved_by, row.approved_by_label = None, None, ""
    row.save(update_fields=["approved_at", "approved_by", "approved_by_label", "updated_at"])
    activity_record(
        study=study, actor=actor, verb="deidentification.approval_withdrawn", details={"why": why}
    )


def sources_deidentify(
    *, study: Study, sources: Iterable[Source], actor: Any = None, again: bool = False
) -> int:
    """Detect the identifiers of `sources` whose text has no current de-identification (all of
    them with `again`, reviewers' edits then lost) and store findings and de-identified text, in
    a few queries whatever their number (imports call this per batch). Returns how many were
    de-identified; any withdraws the study's approval."""
    sources = list(sources)
    with transaction.atomic():
        current = dict(
            SourceDeidentification.objects.filter(source__in=[s.pk for s in sources]).values_list(
                "source_id", "source_hash"
            )
        )
        todo = [s for s in sources if again or current.get(s.pk) != text_hash(s.text)]
        if not todo:
            return 0
        DeidFinding.objects.filter(source__in=todo).delete()
        findings: list[DeidFinding] = []
        rows: list[SourceDeidentification] = []
        for source in todo:
            found = _findings_of(source)
            findings.extend(found)
            rows.append(
                SourceDeidentification(
                    source=source,
                    text=_deidentified_text(source, found),
                    source_hash=text_hash(source.text),
                    detector=DETECTOR_VERSION,
                )
            )
        SourceDeidentification.objects.bulk_create(
            rows,
            batch_size=1000,
            update_conflicts=True,
            unique_fields=["source"],
            update_fields=["text", "source_hash", "detector", "detected_at"],
        )
        DeidFinding.objects.bulk_create(findings, batch_size=1000)
        _withdraw_approval(study=study, actor=actor, why=f"{len(todo)} source(s) de-identified again")
    return len(todo)


def study_deidentify(*, study: Study, actor: Any, again: bool = False) -> dict[str, dict[str, int]]:
    """De-identify every source of the study not yet done (all with `again`); the counts per kind."""
    done = sources_deidentify(study=study, sources=list(study.sources.all()), actor=actor, again=again)
    counts = finding_counts(study=study)
    activity_record(
        study=study,
        actor=actor,
        verb="deidentification.run",
        details={
            "sources": done,
            "again": again,
            "findings": {k: v["accepted"] + v["review"] for k, v in counts.items()},
        },
    )
    return counts


# --- Review ------------------------------------------------------------------------------------------


def _source_refresh(source: Source) -> None:
    findings = list(source.deid_findings.all())
    SourceDeidentification.objects.filter(source=source).update(text=_deidentified_text(source, findings))


def finding_review(*, finding: DeidFinding, action: str, kind: str = "", actor: Any) -> DeidFinding:
    """A reviewer's decision on a finding: "accept" it, "retype" it as `kind`, or "remove" it
    (a false positive: the words stay in the text)."""
    errors = {}
    if action not in ("accept", "retype", "remove"):
        errors["action"] = f"Action: {action!r} is not one of accept, retype, remove."
    if action == "retype" and kind not in KINDS:
        errors["kind"] = f"Type: {kind!r} is not one of {', '.join(KINDS)}."
    if errors:
        raise ValidationError(errors)
    source = finding.source
    with transaction.atomic():
        if action == "accept":
            finding.status = DeidFinding.Status.ACCEPTED
        elif action == "retype":
            finding.kind, finding.replacement = kind, placeholder(kind)
            finding.status, finding.edited = DeidFinding.Status.ACCEPTED, True
        else:
            finding.status, finding.edited = DeidFinding.Status.REMOVED, True
        finding.save()
        _source_refresh(source)
        _withdraw_approval(study=source.study, actor=actor, why=f"a finding of {source.key} was reviewed")
        activity_record(
            study=source.study,
            actor=actor,
            verb=f"deidentification.finding_{action}",
            obj=source,
            details={"finding": finding.pk, "kind": finding.kind},
        )
    return finding


def finding_add(*, source: Source, start: int, end: int, kind: str, actor: Any) -> DeidFinding:
    """Mark a span the detector missed. It must lie inside the text and overlap no kept finding
    (a removed one it overlaps gives way)."""
    errors = {}
    if kind not in KINDS:
        errors["kind"] = f"Type: {kind!r} is not one of {', '.join(KINDS)}."
    if not 0 <= start < end <= len(source.text):
        errors["start"] = f"Span: {start}..{end} is not inside the text (0..{len(source.text)})."
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        overlapping = source.deid_findings.filter(start__lt=end, end__gt=start)
        kept = overlapping.exclude(status=DeidFinding.Status.REMOVED).first()
        if kept is not None:
            raise ValidationError(
                {
                    "start": f"Span: it overlaps the {kept.kind} finding "
                    f"{source.text[kept.start : kept.end]!r}."
                }
            )
        overlapping.delete()
        finding = DeidFinding.objects.create(
            source=source,
            start=start,
            end=end,
            kind=kind,
            original=source.text[start:end],
            replacement=placeholder(kind),
            recognizer="reviewer",
            edited=True,
        )
        _source_refresh(source)
        _withdraw_approval(study=source.study, actor=actor, why=f"a span of {source.key} was marked")
        activity_record(
            study=source.study,
            actor=actor,
            verb="deidentification.finding_added",
            obj=source,
            details={"kind": kind},
        )
    return finding


def deidentification_approve(*, study: Study, actor: Any) -> DataPolicy:
    """An owner approves the study's de-identification: from now on external backends may receive
    its de-identified text (under the `deidentified` policy). Refused, naming the sources, while a
    source has a finding to review or no current de-identification."""
    _require_owner(study=study, actor=actor)
    blocked = unresolved_sources(study=study)
    if blocked:
        shown = ", ".join(blocked[:10]) + (f" and {len(blocked) - 10} more" if len(blocked) > 10 else "")
        raise ValidationError(
            f"The de-identification cannot be approved: source(s) {shown} have findings still to review "
            "or are not de-identified (review them, or run `manage.py deidentify`)."
        )
    with transaction.atomic():
        row, _ = DataPolicy.objects.select_for_update().get_or_create(study=study)
        findings = DeidFinding.objects.filter(source__study=study).exclude(status=DeidFinding.Status.REMOVED)
        row.approved_at = timezone.now()
        row.approved_by = actor if getattr(actor, "is_authenticated", False) else None
        row.approved_by_label = (row.approved_by.get_username() if row.approved_by else str(actor))[:150]
        row.approved_findings = findings.count()
        row.approved_edited = DeidFinding.objects.filter(source__study=study, edited=True).count()
        row.save()
        activity_record(
            study=study,
            actor=actor,
            verb="deidentification.approved",
            obj=row,
            details={"findings": row.approved_findings, "edited": row.approved_edited},
        )
    return row


__all__ = [
    "data_policy_change",
    "deidentification_approve",
    "finding_add",
    "finding_review",
    "originals_for_radiologists_set",
    "originals_release_record",
    "sources_deidentify",
    "study_deidentify",
]
