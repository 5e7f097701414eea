"""AI-assisted span marking from the console's Flows page (console/flow_views.py,
console/span_assistance_forms.py): the same service as `manage.py span_assistance`
(judging.span_assistance), for editors and owners, recorded in the activity log."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.urls import reverse

from judging.models import JudgeRun, SpanAssistance
from judging.span_assistance import span_assistance_off, span_assistance_set
from studies.team_services import study_member_add
from tests.annotation.factories import build_study


@pytest.fixture
def run(draft):
    return JudgeRun.objects.create(
        study=draft, backend="glossary", model_name="glossary", prompt_version="v1"
    )


def _post(client, slug, **data):
    return client.post(reverse("console:flow-span-assistance", args=[slug]), data)


def test_the_service_records_on_and_off_in_the_activity_log(draft, run, editor):
    option = span_assistance_set(study=draft, run=run, planted_rate="0.3", actor=editor)
    assert option.enabled and option.planted_rate == 0.3
    assert draft.activity.filter(verb="judges.span_assistance_set", actor=editor).exists()
    assert span_assistance_off(study=draft, actor=editor) is True
    assert not SpanAssistance.objects.get(study=draft).enabled
    assert draft.activity.filter(verb="judges.span_assistance_off", actor=editor).count() == 1
    assert span_assistance_off(study=draft, actor=editor) is False  # was not on: nothing recorded
    assert draft.activity.filter(verb="judges.span_assistance_off").count() == 1


def test_a_run_of_another_study_is_refused_on_its_field(draft, run):
    other = build_study(slug="other", n_sources=1)
    with pytest.raises(ValidationError) as caught:
        span_assistance_set(study=other, run=run, planted_rate=0.2)
    assert "run" in caught.value.message_dict


def test_an_editor_turns_it_on_changes_it_and_turns_it_off(client, editor, draft, run):
    client.force_login(editor)
    page = client.get(reverse("console:flows", args=["draft"])).content.decode()
    assert 'id="span-assistance-form"' in page and "Off." in page

    response = _post(client, "draft", run=run.pk, planted_rate="0.25", assisted_share="0.5", seed="7")
    assert response.status_code == 302
    option = SpanAssistance.objects.get(study=draft)
    assert (option.run_id, option.planted_rate, option.assisted_share, option.seed, option.enabled) == (
        run.pk,
        0.25,
        0.5,
        7,
        True,
    )
    assert draft.activity.filter(verb="judges.span_assistance_set", actor=editor).exists()
    page = client.get(reverse("console:flows", args=["draft"])).content.decode()
    assert f"On: suggestions from run {run.pk}" in page and 'id="span-assistance-off"' in page

    response = _post(client, "draft", action="off")
    assert response.status_code == 302 and not SpanAssistance.objects.get(study=draft).enabled
    assert draft.activity.filter(verb="judges.span_assistance_off", actor=editor).exists()


@pytest.mark.parametrize("rate", ["0", "0.6", "-0.1"])
def test_a_rate_outside_zero_to_a_half_is_refused_on_its_field_with_the_reason(
    client, editor, draft, run, rate
):
    client.force_login(editor)
    response = _post(client, "draft", run=run.pk, planted_rate=rate, assisted_share="1", seed="0")
    assert response.status_code == 400
    form = response.context["span_form"]
    assert "planted_rate" in form.errors and "at most 0.5" in " ".join(form.errors["planted_rate"])
    assert "above 0 and at most 0.5" in response.content.decode()
    assert not SpanAssistance.objects.filter(study=draft).exists()


def test_a_viewer_is_refused_and_changes_nothing(client, draft, run):
    viewer = get_user_model().objects.create_user("viewer", password="pw")
    study_member_add(study=draft, user=viewer, role="viewer", actor="test")
    client.force_login(viewer)
    assert client.get(reverse("console:flows", args=["draft"])).status_code == 403
    response = _post(client, "draft", run=run.pk, planted_rate="0.2", assisted_share="1", seed="0")
    assert response.status_code == 403
    span_assistance_set(study=draft, run=run, planted_rate=0.2)
    assert _post(client, "draft", action="off").status_code == 403
    assert SpanAssistance.objects.get(study=draft).enabled


def test_the_command_and_the_page_refuse_the_same_rate(client, editor, draft, run):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="at most 0.5"):
        call_command("span_assistance", study="draft", run=run.pk, planted_rate="0.7")
    client.force_login(editor)
    response = _post(client, "draft", run=run.pk, planted_rate="0.7", assisted_share="1", seed="0")
    assert response.status_code == 400 and "at most 0.5" in response.content.decode()
