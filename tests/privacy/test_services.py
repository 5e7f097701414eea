"""The data policy and the de-identification services, the commands and the console page."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import ActivityEvent
from privacy.models import DataPolicy, DeidFinding, SourceDeidentification
from privacy.selectors import data_policy_of, source_text, unresolved_sources
from privacy.services import (
    data_policy_change,
    deidentification_approve,
    finding_add,
    finding_review,
    originals_for_radiologists_set,
)
from studies.source_services import source_upsert
from studies.team_services import study_member_add
from tests.generation.factories import study_with_sources

pytestmark = pytest.mark.django_db

REPORT = "Patient: Amaka Okafor, MRN 00483921. Mild atelectasis at the left base. Read by Dr. Lindqvist."


@pytest.fixture
def team():
    users = get_user_model().objects
    owner, editor = users.create_user("owner", password="pw"), users.create_user("ed", password="pw")
    study = study_with_sources("team", [REPORT])
    study_member_add(study=study, user=owner, role="owner", actor="test")
    study_member_add(study=study, user=editor, role="editor", actor="test")
    return study, owner, editor


def test_a_new_study_is_deidentified_and_sources_are_deidentified_on_import(team):
    study, _, _ = team
    assert (
        data_policy_of(study=study).policy == "deidentified" and not data_policy_of(study=study).is_approved
    )
    source = study.sources.get()
    deidentified = SourceDeidentification.objects.get(source=source).text
    assert (
        deidentified == "Patient: [NAME], MRN [MRN]. Mild atelectasis at the left base. Read by Dr. [NAME]."
    )
    kinds = sorted(source.deid_findings.values_list("kind", flat=True))
    assert kinds == ["MRN", "NAME", "NAME"]
    assert source.text == REPORT  # the original stays in the database


def test_only_an_owner_changes_the_policy_and_always_with_a_reason(team):
    study, owner, editor = team
    with pytest.raises(PermissionDenied):
        data_policy_change(study=study, policy="local-only", reason="DUA", actor=editor)
    with pytest.raises(ValidationError) as missing:
        data_policy_change(study=study, policy="local-only", reason=" ", actor=owner)
    assert "reason" in missing.value.message_dict
    data_policy_change(study=study, policy="local-only", reason="MIMIC agreement", actor=owner)
    with pytest.raises(ValidationError) as bad:
        data_policy_change(study=study, policy="external-approved", reason="Azure", actor=owner)
    assert "endpoint" in bad.value.message_dict
    data_policy_change(
        study=study,
        policy="external-approved",
        endpoint="https://aoai.hospital.example/v1/",
        reason="Azure",
        actor=owner,
    )
    row = DataPolicy.objects.get(study=study)
    assert (row.policy, row.endpoint) == ("external-approved", "https://aoai.hospital.example/v1")
    event = ActivityEvent.objects.filter(study=study, verb="data_policy.changed").first()
    assert event.details["reason"] == "Azure" and event.details["from"]["policy"] == "local-only"


def test_review_actions_change_the_deidentified_text_and_withdraw_an_approval(team):
    study, owner, editor = team
    source = study.sources.get()
    deidentification_approve(study=study, actor=owner)
    assert data_policy_of(study=study).is_approved
    mrn = source.deid_findings.get(kind="MRN")
    finding_review(finding=mrn, action="retype", kind="ID", actor=editor)
    assert "[ID]" in source_text(source=source, audience="lay")
    assert not data_policy_of(study=study).is_approved
    doctor = source.deid_findings.get(original="Lindqvist")
    finding_review(finding=doctor, action="remove", actor=editor)
    assert "Dr. Lindqvist" in source_text(source=source, audience="lay")
    start = REPORT.index("left base")
    finding_add(source=source, start=start, end=start + 4, kind="LOCATION", actor=editor)
    assert "the [LOCATION] base" in source_text(source=source, audience="model")
    with pytest.raises(ValidationError, match="overlaps"):
        finding_add(source=source, start=start, end=start + 2, kind="NAME", actor=editor)
    row = deidentification_approve(study=study, actor=owner)
    assert (row.approved_findings, row.approved_edited) == (3, 3)


def test_an_unresolved_finding_blocks_approval_naming_the_source(team):
    study, owner, editor = team
    source = source_upsert(study=study, key="held", text="Seen on the ward. Mild effusion.")
    DeidFinding.objects.create(
        source=source,
        start=0,
        end=4,
        kind="NAME",
        original="Seen",
        replacement="[NAME]",
        status="review",
        score=0.4,
    )
    assert unresolved_sources(study=study) == ["held"]
    with pytest.raises(ValidationError, match="held"):
        deidentification_approve(study=study, actor=owner)
    with pytest.raises(PermissionDenied):
        deidentification_approve(study=study, actor=editor)
    with pytest.raises(CommandError, match="held"):
        call_command("deidentify", "--study", study.slug, "--approve", stdout=io.StringIO())
    finding_review(finding=source.deid_findings.get(), action="remove", actor=editor)
    deidentification_approve(study=study, actor=owner)


def test_each_audience_gets_the_text_the_policy_allows(team):
    study, owner, _ = team
    source = study.sources.get()
    assert "Okafor" not in source_text(source=source, audience="expert")
    originals_for_radiologists_set(study=study, show=True, reason="our own radiologists", actor=owner)
    assert source_text(source=source, audience="expert") == REPORT
    assert "Okafor" not in source_text(source=source, audience="lay")
    assert "Okafor" not in source_text(source=source, audience="export")
    assert source_text(source=source, audience="export", originals=True) == REPORT


def test_the_commands_print_the_summary_and_the_policy(team):
    study, _, _ = team
    out = io.StringIO()
    call_command("deidentify", "--study", study.slug, stdout=out)
    assert "NAME" in out.getvalue() and "MRN" in out.getvalue()
    out = io.StringIO()
    call_command("study", "policy", study.slug, "local-only", "--reason", "DUA", stdout=out)
    assert '"policy": "local-only"' in out.getvalue()
    with pytest.raises(CommandError, match="Reason"):
        call_command("study", "policy", study.slug, "deidentified", stdout=io.StringIO())
    with pytest.raises(CommandError, match="endpoint"):
        call_command(
            "study", "policy", study.slug, "external-approved", "--reason", "x", stdout=io.StringIO()
        )


def test_the_console_page_highlights_findings_and_reviews_them(client, team):
    study, owner, editor = team
    client.force_login(editor)
    page = client.get(reverse("console:privacy", args=[study.slug])).content.decode()
    assert '<mark class="deid-accepted" title="NAME (Accepted)">Amaka Okafor</mark>' in page
    assert 'id="approve"' not in page  # an editor reviews, an owner approves
    finding = study.sources.get().deid_findings.get(kind="MRN")
    response = client.post(
        reverse("console:privacy-finding", args=[study.slug, finding.pk]), {"action": "remove"}
    )
    assert response.status_code == 302
    finding.refresh_from_db()
    assert finding.status == "removed"
    assert client.post(reverse("console:privacy-approve", args=[study.slug])).status_code == 403
    client.force_login(owner)
    client.post(reverse("console:privacy-approve", args=[study.slug]))
    assert data_policy_of(study=study).is_approved
    page = client.get(reverse("console:privacy", args=[study.slug])).content.decode()
    assert "Approved by owner" in page


def test_the_api_hands_out_deidentified_sources_unless_an_owner_asks_for_originals(client, team):
    study, owner, editor = team
    url = reverse("api:source-list", args=[study.slug])
    client.force_login(editor)
    body = client.get(url).json()
    rows = body["results"] if isinstance(body, dict) else body
    assert rows[0]["text"].startswith("Patient: [NAME], MRN [MRN].")
    assert client.get(url + "?originals=1").status_code == 403
    client.force_login(owner)
    body = client.get(url + "?originals=1").json()
    rows = body["results"] if isinstance(body, dict) else body
    assert rows[0]["text"] == REPORT
    assert ActivityEvent.objects.filter(study=study, verb="sources.originals_released").count() == 1


def test_the_setup_page_and_the_console_header_name_the_policy(client, team):
    study, owner, _ = team
    client.force_login(owner)
    page = client.get(reverse("console:study-setup", args=[study.slug])).content.decode()
    assert '<span class="status-badge" id="data-policy">deidentified</span>' in page
    data_policy_change(study=study, policy="local-only", reason="DUA", actor=owner)
    page = client.get(reverse("console:study-setup", args=[study.slug])).content.decode()
    assert '<span class="status-badge" id="data-policy">local-only</span>' in page
    page = client.get(reverse("console:upload", args=[study.slug])).content.decode()
    assert "data policy: local-only" in page


def test_the_api_names_the_study_s_data_policy(client, team):
    study, owner, _ = team
    client.force_login(owner)
    url = reverse("api:study-detail", args=[study.slug])
    assert client.get(url).json()["data_policy"] == {
        "policy": "deidentified",
        "endpoint": "",
        "deidentification_approved_at": None,
    }
    data_policy_change(study=study, policy="local-only", reason="DUA", actor=owner)
    assert client.get(url).json()["data_policy"]["policy"] == "local-only"
