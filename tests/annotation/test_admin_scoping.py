"""A staff researcher of one study sees, filters, chooses and acts on that study's rows only, in every
admin changelist and change view (annotation, generation, ml); superusers see everything."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.urls import reverse

from annotation.activity_services import activity_record
from annotation.admin_access import STUDY_PATHS, StudyScopedAdmin
from annotation.models import (
    AttentionCheck,
    AttentionCheckResponse,
    ConsentRefusal,
    ExpertItem,
    LayItem,
    Participant,
    PlantedControl,
    Simplification,
    Study,
    StudyMembership,
)
from generation.models import GenerationBatch, GenerationJob, LLMCallCache
from judging.models import JudgeAnswer, JudgeItem, JudgeRun
from ml.models import EmbeddingCacheEntry, ModelArtifact, TrainingJob
from surveys.lay import services as lay_answers
from surveys.radiologist import services as expert_answers
from surveys.radiologist.controls import control_answer_save
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db

THEIRS = "theirs-secret"


def fill(study: Study, tag: str) -> dict[str, object]:
    """One row of every model that belongs to a study."""
    source = study.sources.first()
    simplification = Simplification.objects.filter(source=source).first()
    text = simplification.shown_text
    radiologist = Participant.objects.create(
        study=study, role="radiologist", pseudonym=f"R-{tag}", external_id=f"PID-{tag}"
    )
    lay = Participant.objects.create(
        study=study, role="layperson", pseudonym=f"L-{tag}", external_id=f"LPID-{tag}"
    )
    ExpertItem.objects.create(participant=radiologist, source=source, position=0, text_order=[text.pk])
    expert_answers.expert_rating_save(
        participant=radiologist, shown_text=text, scores={"correctness": 4}, comment=f"note {tag}"
    )
    expert_answers.expert_source_judgement_save(participant=radiologist, source=source, severity="Mild")
    control = PlantedControl.objects.create(
        study=study,
        degrades=text,
        kind="reassurance",
        text=f"{text.text} Fine {tag}.",
        start=0,
        end=1,
        original_start=0,
        original_end=0,
        category="wrong_severity_or_false_reassurance",
        severity="could_harm",
    )
    control_answer_save(participant=radiologist, control=control, scores={"correctness": 2})
    item = LayItem.objects.create(
        participant=lay, source=source, position=0, assigned_system=simplification.system, shown_text=text
    )
    lay_answers.lay_answer_save(item=item, phase="original", answers={"understanding": "Completely"})
    lay_answers.lay_preference_save(item=item, most_justification=f"because {tag}")
    check = AttentionCheck.objects.create(
        study=study, position=0, prompt=f"Pick blue {tag}", options=["blue", "red"], expected_answer="blue"
    )
    AttentionCheckResponse.objects.create(participant=lay, check_item=check, answer="blue", passed=True)
    ConsentRefusal.objects.create(study=study, role="layperson")
    batch = GenerationBatch.objects.create(
        study=study, systems=["plain_bs"], backend="glossary", prompt_version="v1", concurrency=1
    )
    GenerationJob.objects.create(batch=batch, source=source, family="plain", systems=["plain_bs"])
    job = TrainingJob.objects.create(
        study=study, pair_filter="all", base_model_path="/tmp/base", output_dir=f"/tmp/out-{tag}"
    )
    ModelArtifact.objects.create(
        name=f"tuned-{tag}", path=f"/tmp/m-{tag}", architecture="seq2seq", training_job=job
    )
    run = JudgeRun.objects.create(
        study=study, backend="glossary", model_name="glossary", prompt_version="judge-v1"
    )
    judge_item = JudgeItem.objects.create(run=run, task="radiologist_text", source=source, shown_text=text)
    JudgeAnswer.objects.create(item=judge_item, correctness=4, n_samples=1)
    activity_record(study=study, actor=f"PID-{tag}", verb="study.changed")
    return {"radiologist": radiologist, "lay": lay, "batch": batch, "job": job}


@pytest.fixture
def two_studies():
    mine = build_study(slug="mine", n_sources=2)
    theirs = build_study(slug=THEIRS, n_sources=2)
    return mine, theirs, fill(mine, "mine"), fill(theirs, "theirs")


@pytest.fixture
def staff_researcher(two_studies):
    mine = two_studies[0]
    user = get_user_model().objects.create_user("alice", password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label__in=["annotation", "generation", "ml", "judging"])
    )
    mine.researchers.add(user)
    return user


def scoped_admins():
    return [
        (model, model_admin)
        for model, model_admin in admin.site._registry.items()
        if model._meta.label in STUDY_PATHS
    ]


def study_of(obj) -> Study | None:
    path, _ = STUDY_PATHS[obj._meta.label]
    value = obj
    for part in filter(None, path.split("__")):
        value = getattr(value, part)
        if value is None:
            return None
    return value


def test_every_model_with_a_study_has_a_scoped_admin():
    registered = {model._meta.label for model in admin.site._registry}
    assert set(STUDY_PATHS) - {"annotation.AttentionCheck"} <= registered
    for model, model_admin in scoped_admins():
        assert isinstance(model_admin, StudyScopedAdmin), model


def test_every_changelist_shows_only_the_researchers_study(client, two_studies, staff_researcher):
    mine = two_studies[0]
    client.force_login(staff_researcher)
    checked = 0
    for model, _ in scoped_admins():
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        response = client.get(url)
        assert response.status_code == 200, url
        rows = list(response.context["cl"].queryset)
        assert rows, f"{url}: the researcher's own rows are missing"
        assert all(study_of(row) in (mine, None) for row in rows), url
        html = response.content.decode()
        # Neither the rows nor the filters nor the lookups name the other study.
        assert THEIRS not in html and "PID-theirs" not in html, url
        checked += 1
    assert checked == len(STUDY_PATHS) - 1  # AttentionCheck is edited inline on its study


def test_change_views_of_the_other_study_are_refused(client, two_studies, staff_researcher):
    _, theirs, _, their_rows = two_studies
    client.force_login(staff_researcher)
    targets = [theirs, their_rows["radiologist"], their_rows["batch"], their_rows["job"]]
    targets += [
        model.objects.filter(**{STUDY_PATHS[model._meta.label][0] or "pk": theirs}).first()
        for model, _ in scoped_admins()
        if STUDY_PATHS[model._meta.label][0]
    ]
    for obj in targets:
        url = reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])
        response = client.get(url)
        assert response.status_code in (302, 404), url
        assert THEIRS not in response.content.decode(), url


def test_actions_touch_only_the_researchers_study(client, two_studies, staff_researcher):
    mine, theirs, my_rows, their_rows = two_studies
    client.force_login(staff_researcher)
    client.post(
        reverse("admin:annotation_participant_changelist"),
        {"action": "mark_returned", "_selected_action": [my_rows["lay"].pk, their_rows["lay"].pk]},
    )
    assert Participant.objects.get(pk=my_rows["lay"].pk).returned_at is not None
    assert Participant.objects.get(pk=their_rows["lay"].pk).returned_at is None
    client.post(
        reverse("admin:annotation_study_changelist"),
        {"action": "close_studies", "_selected_action": [mine.pk, theirs.pk]},
    )
    assert Study.objects.get(pk=theirs.pk).status == Study.Status.OPEN
    assert Study.objects.get(pk=mine.pk).status == Study.Status.CLOSED


def test_form_choices_offer_only_the_researchers_studies(client, two_studies, staff_researcher):
    client.force_login(staff_researcher)
    for url in (
        reverse("admin:annotation_source_add"),
        reverse("admin:ml_trainingjob_add"),
        reverse("admin:generation_generationbatch_launch"),
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert "mine" in html and THEIRS not in html, url


def test_launching_generation_for_another_study_is_refused(client, two_studies, staff_researcher):
    theirs = two_studies[1]
    client.force_login(staff_researcher)
    before = GenerationBatch.objects.filter(study=theirs).count()
    response = client.post(
        reverse("admin:generation_generationbatch_launch"),
        {
            "study": theirs.pk,
            "systems": ["plain_bs"],
            "backend": "glossary",
            "temperature": 0.8,
            "max_rounds": 5,
            "sample_index": 0,
        },
    )
    assert response.status_code == 200  # the form again, with the study refused
    assert "Select a valid choice" in response.content.decode()
    assert GenerationBatch.objects.filter(study=theirs).count() == before


def test_shared_caches_are_for_superusers_only(client, two_studies, staff_researcher):
    LLMCallCache.objects.create(key="k" * 64, backend="openai", model_name="m", completion={"text": "secret"})
    EmbeddingCacheEntry.objects.create(key="e" * 64, model_id="m", dimension=1, vector=b"\0\0\0\0")
    client.force_login(staff_researcher)
    for model in (LLMCallCache, EmbeddingCacheEntry):
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        assert client.get(url).status_code == 403, url
    root = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    client.force_login(root)
    for model in (LLMCallCache, EmbeddingCacheEntry):
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        assert client.get(url).status_code == 200, url


def test_superusers_see_every_study(client, two_studies):
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.org", "pw"))
    response = client.get(reverse("admin:annotation_participant_changelist"))
    assert {p.study.slug for p in response.context["cl"].queryset} == {"mine", THEIRS}


def test_a_researcher_who_creates_a_study_can_see_it(client, staff_researcher):
    client.force_login(staff_researcher)
    response = client.post(
        reverse("admin:annotation_study_add"),
        {
            "slug": "new-one",
            "title": "New",
            "status": "draft",
            "unit": "sentence",
            "background_questions": "[]",
            "abandon_after_minutes": 120,
            "safety_gate_threshold": 2,
            "systems-TOTAL_FORMS": 0,
            "systems-INITIAL_FORMS": 0,
            "attention_checks-TOTAL_FORMS": 0,
            "attention_checks-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Study.objects.get(slug="new-one").researchers.filter(pk=staff_researcher.pk).exists()


def _account_choices(response, field: str) -> set[str]:
    return {str(user) for user in response.context["adminform"].form.fields[field].queryset}


def test_account_dropdowns_list_only_the_researchers_people(client, two_studies, staff_researcher):
    mine, theirs, filled_mine, filled_theirs = two_studies
    accounts = get_user_model().objects
    accounts.create_superuser("root", "root@example.org", "pw")
    colleague = accounts.create_user("colleague", password="pw", is_staff=True)
    mine.researchers.add(colleague)
    other_researcher = accounts.create_user("other-lab", password="pw", is_staff=True)
    theirs.researchers.add(other_researcher)
    my_radiologist = accounts.create_user("my-radiologist", password="pw")
    Participant.objects.filter(pk=filled_mine["radiologist"].pk).update(user=my_radiologist)
    their_radiologist = accounts.create_user("their-radiologist", password="pw")
    Participant.objects.filter(pk=filled_theirs["radiologist"].pk).update(user=their_radiologist)
    accounts.create_user("new-radiologist", password="pw")
    expected = {"alice", "colleague", "my-radiologist", "new-radiologist"}
    client.force_login(staff_researcher)
    study_page = client.get(reverse("admin:annotation_study_change", args=[mine.pk]))
    # The team is managed on the study's Team page (owners), not in the admin's study form.
    assert "researchers" not in study_page.context["adminform"].form.fields
    assert not [f for f in study_page.context["inline_admin_formsets"] if f.opts.model is StudyMembership]
    participant_page = client.get(
        reverse("admin:annotation_participant_change", args=[filled_mine["radiologist"].pk])
    )
    assert _account_choices(participant_page, "user") == expected
    html = study_page.content.decode() + participant_page.content.decode()
    assert "root" not in html and "other-lab" not in html and "their-radiologist" not in html
    # A superuser who is a co-researcher stays listed, so saving the participant keeps them.
    root = accounts.get(username="root")
    mine.researchers.add(root)
    participant_page = client.get(
        reverse("admin:annotation_participant_change", args=[filled_mine["radiologist"].pk])
    )
    assert _account_choices(participant_page, "user") == expected | {"root"}
    # A superuser edits the team in the admin, picking from every account.
    client.force_login(root)
    study_page = client.get(reverse("admin:annotation_study_change", args=[mine.pk]))
    (team,) = [f for f in study_page.context["inline_admin_formsets"] if f.opts.model is StudyMembership]
    choices = {str(user) for user in team.formset.forms[0].fields["user"].queryset}
    assert choices == set(accounts.values_list("username", flat=True))
