"""Team roles (annotation/access.py): owner, editor, viewer, a non-member and an anonymous visitor
over every researcher page, export and API endpoint that takes a study (or one of its batches),
the membership migration, the team page and `--owner` of the import commands."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotation.activity_services import activity_record
from annotation.models import Participant, SourceUpload, Study, StudyMembership
from generation.services import batches
from judging import services as judging_services
from studies.team_services import study_member_add, study_member_remove, study_member_role_set
from tests.annotation.factories import build_study

pytestmark = pytest.mark.usefixtures("fast_analysis")

Role = StudyMembership.Role
ALLOWED = {200, 201, 202, 302, 400, 503}
PEOPLE = ("owner", "editor", "viewer", "adjudicator", "outsider", "anonymous")


@dataclass(frozen=True)
class Endpoint:
    name: str  # URL name
    need: str  # "view", "edit", "own" or "adjudicate"
    method: str = "get"
    args: tuple[str, ...] = ()  # after the study's slug (or instead of it: "batch")
    data: dict = field(default_factory=dict)
    api: bool = False


# Every researcher URL that takes a study or a batch. test_the_matrix_covers_every_url checks that
# nothing is left out: a new endpoint must be added here with the capability it needs.
ENDPOINTS = [
    Endpoint("evaluation:study-detail", "view"),
    Endpoint("evaluation:study-detail", "view", method="post"),
    Endpoint("evaluation:study-freshness", "view"),
    Endpoint("evaluation:study-progress-section", "view"),
    Endpoint("evaluation:study-counts", "view"),
    Endpoint("evaluation:study-metrics", "view"),
    Endpoint("evaluation:study-progress", "view"),
    Endpoint("evaluation:study-correlations", "view"),
    Endpoint("evaluation:study-export", "view", args=("csv",)),
    Endpoint("evaluation:study-item-export", "view", args=("csv",)),
    Endpoint("evaluation:study-analysis", "view"),
    Endpoint("evaluation:study-metrics-csv", "view"),
    Endpoint("evaluation:study-archive", "edit"),
    Endpoint("evaluation:study-report", "view"),
    Endpoint("evaluation:study-plan", "view"),
    Endpoint("evaluation:study-plan", "edit", method="post", data={"outcome": "nonsense"}),
    Endpoint("evaluation:study-plan-detail", "view", args=("plan",)),
    Endpoint("evaluation:study-team", "own"),
    Endpoint("evaluation:study-activity", "edit"),
    Endpoint("evaluation:study-activity-csv", "edit"),
    Endpoint("evaluation:study-team", "own", method="post", data={"action": "add", "username": "nobody"}),
    Endpoint("console:study-setup", "edit"),
    Endpoint("console:study-setup", "edit", method="post", data={"title": ""}),
    Endpoint("console:study-status", "edit", method="post", data={"action": "pause"}),
    Endpoint("console:study-preview", "edit", method="post", args=("layperson",)),
    Endpoint("console:study-pilot", "edit"),
    Endpoint("console:study-pilot", "edit", method="post", data={"expected": "0"}),
    Endpoint("console:study-duplicate", "edit"),
    Endpoint("console:study-duplicate", "edit", method="post", data={"slug": "", "title": ""}),
    Endpoint("judging:study-judges", "view"),
    Endpoint("judging:answers-csv", "view"),
    Endpoint("judging:run-detail", "view", args=("run",)),
    Endpoint("judging:run-cancel", "edit", method="post", args=("run",)),
    Endpoint("judging:run-resume", "edit", method="post", args=("run",)),
    Endpoint("judging:run-agreement", "edit", method="post", args=("run",)),
    Endpoint("generation:batch_detail", "view", args=("batch",)),
    Endpoint("generation:batch_cancel", "edit", method="post", args=("batch",)),
    Endpoint("generation:batch_resume", "edit", method="post", args=("batch",)),
    Endpoint("console:instruments", "edit"),
    Endpoint("console:flows", "edit"),
    Endpoint("console:flow-add", "edit", method="post", data={"kind": "nonsense"}),
    Endpoint("console:flow-reference", "edit", method="post", data={"reference_system": "nonsense"}),
    Endpoint("console:flows-launch", "edit", method="post"),
    Endpoint("console:flow-controls", "edit", method="post", data={"rate": "0", "action": "preview"}),
    Endpoint("console:instrument-error-spans", "edit", method="post"),
    Endpoint("console:instrument-edit", "edit", args=("protocol_003_radiologist",)),
    Endpoint(
        "console:instrument-edit",
        "edit",
        method="post",
        args=("protocol_003_radiologist",),
        data={"op": "add"},
    ),
    Endpoint(
        "console:instrument-preview",
        "edit",
        method="post",
        args=("protocol_003_radiologist",),
        data={"op": "add"},
    ),
    Endpoint("console:instrument-item", "edit", args=("protocol_003_radiologist", "correctness")),
    Endpoint(
        "console:instrument-item",
        "edit",
        method="post",
        args=("protocol_003_radiologist", "correctness"),
        data={"op": "texts"},
    ),
    Endpoint("console:instrument-download", "edit", args=("protocol_003_radiologist", "yaml")),
    Endpoint("console:upload", "edit"),
    Endpoint("console:upload", "edit", method="post"),
    Endpoint("console:upload-detail", "edit", args=("upload",)),
    Endpoint("console:launch-generation", "edit"),
    Endpoint("console:launch-generation", "edit", method="post", data={"backend": "nonsense"}),
    Endpoint("console:launch-judges", "edit"),
    Endpoint("console:launch-judges", "edit", method="post", data={"backend": "nonsense"}),
    Endpoint("console:participants", "edit"),
    Endpoint("console:participants-invite", "edit", method="post", data={"role": "layperson", "count": "1"}),
    Endpoint("console:participants-links", "edit"),
    Endpoint("console:participant-link", "edit", method="post", args=("participant",)),
    Endpoint("console:participant-withdraw", "edit", args=("participant",)),
    Endpoint("console:participant-withdraw", "edit", method="post", args=("participant",)),
    Endpoint("console:privacy", "edit"),
    Endpoint("console:privacy-policy", "own", method="post", data={"policy": "nonsense"}),
    Endpoint("console:privacy-originals", "own", method="post"),
    Endpoint("console:privacy-detect", "edit", method="post"),
    Endpoint("console:privacy-approve", "own", method="post"),
    Endpoint(
        "console:privacy-finding", "edit", method="post", args=("finding",), data={"action": "nonsense"}
    ),
    Endpoint("console:privacy-mark", "edit", method="post", args=("source",), data={"words": "nonsense"}),
    Endpoint("console:flow-span-assistance", "edit", method="post", data={"planted_rate": "nonsense"}),
    Endpoint("api:study-detail", "view", api=True),
    Endpoint("api:source-list", "view", api=True),
    Endpoint("api:system-list", "view", api=True),
    Endpoint("api:simplification-list", "view", api=True),
    Endpoint("api:progress", "view", api=True),
    Endpoint("api:answer-list", "view", api=True),
    Endpoint("api:analysis", "view", api=True),
    Endpoint("api:audit", "view", api=True),
    Endpoint("api:export", "view", args=("csv",), api=True),
    Endpoint("api:item-export", "view", args=("csv",), api=True),
    Endpoint("api:plan-list", "view", api=True),
    Endpoint("api:plan-list", "edit", method="post", data={"outcome": "nonsense"}, api=True),
    Endpoint("api:plan-detail", "view", args=("plan",), api=True),
    Endpoint("judging-api:run-list", "view", api=True),
    Endpoint("judging-api:run-list", "edit", method="post", data={"backend": "nonsense"}, api=True),
    Endpoint("judging-api:answers-csv", "view", api=True),
    Endpoint("judging-api:run-detail", "view", args=("run",), api=True),
    Endpoint("evaluation:study-adjudication", "view"),
    Endpoint("console:adjudication", "adjudicate"),
    Endpoint("console:adjudication-unit", "adjudicate", args=("unit",)),
    Endpoint("console:adjudication-unit", "adjudicate", method="post", args=("unit",), data={"value": "9"}),
    Endpoint("api:adjudication-queue", "adjudicate", api=True),
    Endpoint("api:adjudication-queue", "adjudicate", method="post", data={"unit": "nonsense"}, api=True),
    Endpoint("console:qualification", "edit"),
    Endpoint("console:adaptive", "edit"),
    Endpoint("api:qualification-results", "view", api=True),
]


def _names(patterns, prefix: str = "") -> set[str]:
    names = set()
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            namespace = f"{prefix}{pattern.namespace}:" if pattern.namespace else prefix
            names |= _names(pattern.url_patterns, namespace)
        elif isinstance(pattern, URLPattern) and pattern.name:
            route = str(pattern.pattern)
            if "<slug:slug>" in route or "<int:batch_id>" in route:
                names.add(f"{prefix}{pattern.name}")
    return names


def test_the_matrix_covers_every_url():
    # The survey's own study link (the open recruitment page) is for participants, not the team.
    researcher_urls = {
        name for name in _names(get_resolver().url_patterns) if not name.startswith("surveys:")
    }
    assert researcher_urls == {endpoint.name for endpoint in ENDPOINTS}


def test_a_missing_api_namespace_would_show():
    # The names above are real: reversing one of each namespace works.
    assert reverse("api:study-detail", args=["x"]).startswith("/api/")
    assert reverse("judging-api:run-list", args=["x"]).startswith("/api/")


@pytest.fixture
def team(db):
    accounts = get_user_model().objects
    # Staff, so that the judge launch's own staff rule does not hide the role's.
    people = {name: accounts.create_user(name, password="pw", is_staff=True) for name in PEOPLE[:5]}
    study = build_study(slug="roles", n_sources=2)
    for name in ("owner", "editor", "viewer", "adjudicator"):
        study_member_add(study=study, user=people[name], role=name, actor="test")
    build_study(slug="elsewhere", n_sources=1).researchers.add(people["outsider"])
    run = judging_services.judge_run_create(study=study, backend="glossary")
    batch = batches.generation_batch_create(study=study, systems=["plain_bs"], backend="glossary")
    from evaluation.planning import plans

    plan = plans.plan_create(study=study, parameters={"outcome": "understanding", "effect": 0.25}, user=None)
    upload = SourceUpload.objects.create(study=study, original_name="sources.csv")
    participant = Participant.objects.create(study=study, role="layperson", pseudonym="L100")
    from privacy import services as privacy_services

    source = study.sources.order_by("position").first()
    finding = privacy_services.finding_add(source=source, start=0, end=3, kind="NAME", actor=None)
    ids = {"source": str(source.pk), "finding": str(finding.pk)} | {
        "run": str(run.pk),
        "batch": str(batch.pk),
        "plan": str(plan.pk),
        "upload": str(upload.pk),
    }
    return study, people, {**ids, "participant": str(participant.pk), "unit": _disagreement(study)}


def _disagreement(study: Study) -> str:
    """Two radiologists far apart on one text's correctness: the token of that unit."""
    from annotation.models import SimplificationText, StudyInstrument
    from evaluation.adjudication_selectors import UnitKey
    from surveys.radiologist.services import expert_rating_save

    text = SimplificationText.objects.filter(source__study=study).order_by("pk").first()
    for pseudonym, correctness in (("R100", 1), ("R101", 5)):
        rater = Participant.objects.create(study=study, role="radiologist", pseudonym=pseudonym)
        expert_rating_save(participant=rater, shown_text=text, scores={"correctness": correctness})
    protocol = StudyInstrument.objects.get(study=study, key="protocol_003_radiologist", is_current=True)
    return UnitKey(protocol.pk, "correctness", text.source_id, text.pk).token


def _url(endpoint: Endpoint, study: Study, ids: dict[str, str]) -> str:
    args = [ids.get(arg, arg) for arg in endpoint.args]
    if endpoint.args[:1] == ("batch",):
        return reverse(endpoint.name, args=args)
    return reverse(endpoint.name, args=[study.slug, *args])


def _expected(endpoint: Endpoint, person: str) -> str:
    if person == "anonymous":
        return "login"
    if person == "outsider":
        return "404"
    listed = endpoint.args[:1] == ("batch",) or endpoint.name == "api:study-detail"
    if listed and not Role(person).allows("view"):
        # Batches and the API's study are looked up among the studies a member may view: an
        # adjudicator (whose role reaches the adjudication queue alone) has none.
        return "404"
    return "allowed" if Role(person).allows(endpoint.need) else "403"


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: f"{e.method}-{e.name}-{e.need}")
def test_role_matrix(client, team, endpoint, settings, django_capture_on_commit_callbacks):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    study, people, ids = team
    url = _url(endpoint, study, ids)
    seen = {}
    for person in PEOPLE:
        client.logout()
        if person != "anonymous":
            client.force_login(people[person])
        if endpoint.method == "post" and endpoint.api:
            response = client.post(url, json.dumps(endpoint.data), content_type="application/json")
        else:
            response = getattr(client, endpoint.method)(url, endpoint.data)
        seen[person] = response.status_code
        expected = _expected(endpoint, person)
        if expected == "login":
            if endpoint.api:
                assert response.status_code == 401, (person, response.status_code)
            else:
                assert response.status_code == 302 and "/login/" in response["Location"]
        elif expected == "allowed":
            # 503: the analysis is not computed yet (the designed answer of the analysis downloads).
            assert response.status_code not in (401, 403, 404) and response.status_code in ALLOWED, (
                person,
                response.status_code,
            )
        else:
            assert response.status_code == int(expected), (person, response.status_code)
    # Each role was told apart by its own answer (not, say, every request failing alike).
    assert len(set(seen.values())) >= 2, seen


def _export(client, user, url: str) -> list[str]:
    client.force_login(user)
    response = client.get(url, {"include_external_ids": "1"})
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode("utf-8-sig")
    return next(csv.reader(io.StringIO(body)))


@pytest.mark.parametrize(
    "name", ["evaluation:study-export", "api:export", "evaluation:study-item-export", "api:item-export"]
)
def test_viewers_exports_have_no_identifying_columns(client, team, name):
    study, people, _ = team
    Participant.objects.create(
        study=study, role=Participant.Role.LAYPERSON, pseudonym="L9", external_id="PROLIFIC9"
    )
    url = reverse(name, args=[study.slug, "csv"])
    assert "external_id" in _export(client, people["owner"], url)
    assert "external_id" in _export(client, people["editor"], url)
    viewer_header = _export(client, people["viewer"], url)
    assert "external_id" not in viewer_header and "participant" in viewer_header


def test_team_page_adds_changes_and_removes_members(client, team):
    study, people, _ = team
    newcomer = get_user_model().objects.create_user("newcomer")
    client.force_login(people["owner"])
    url = reverse("evaluation:study-team", args=[study.slug])
    assert client.post(url, {"action": "add", "username": "newcomer", "role": "viewer"}).status_code == 302
    assert StudyMembership.objects.get(study=study, user=newcomer).role == "viewer"
    assert client.post(url, {"action": "role", "username": "newcomer", "role": "editor"}).status_code == 302
    assert StudyMembership.objects.get(study=study, user=newcomer).role == "editor"
    page = client.get(url)
    assert b"newcomer" in page.content
    assert client.post(url, {"action": "remove", "username": "newcomer"}).status_code == 302
    assert not StudyMembership.objects.filter(study=study, user=newcomer).exists()
    refused = client.post(url, {"action": "add", "username": "ghost", "role": "viewer"})
    assert refused.status_code == 400 and "no account named" in refused.content.decode()
    bad_role = client.post(url, {"action": "add", "username": "newcomer", "role": "boss"})
    assert bad_role.status_code == 400 and not StudyMembership.objects.filter(user=newcomer).exists()


def test_the_last_owner_stays(team):
    study, people, _ = team
    owner = people["owner"]
    with pytest.raises(ValidationError, match="last owner"):
        study_member_remove(study=study, user=owner, actor=owner)
    with pytest.raises(ValidationError, match="last owner"):
        study_member_role_set(study=study, user=owner, role="viewer", actor=owner)
    study_member_role_set(study=study, user=people["editor"], role="owner", actor=owner)
    study_member_remove(study=study, user=owner, actor=owner)
    assert list(study.memberships.filter(role="owner").values_list("user__username", flat=True)) == ["editor"]


def test_the_database_refuses_an_unknown_role_and_a_second_membership(team):
    from django.db import IntegrityError, transaction

    study, people, _ = team
    with pytest.raises(IntegrityError), transaction.atomic():
        StudyMembership.objects.filter(study=study, user=people["viewer"]).update(role="boss")
    with pytest.raises(IntegrityError), transaction.atomic():
        StudyMembership.objects.create(study=study, user=people["viewer"], role="owner")


@pytest.mark.heavy
@pytest.mark.parametrize("command", ["import_study", "import_release"])
def test_the_import_commands_take_the_owner(db, tmp_path, release_dir, command):
    source = release_dir
    if command == "import_study":
        source = tmp_path / "study.csv"
        source.write_text(
            "source_key,source_text,plain\na,No acute fracture.,No broken bone.\n", encoding="utf-8"
        )
    with pytest.raises(CommandError, match="no account named 'ghost'"):
        call_command(command, str(source), study="owned", owner="ghost")
    assert not Study.objects.filter(slug="owned").exists()
    user = get_user_model().objects.create_user("pi")
    call_command(command, str(source), study="owned", owner="pi", stdout=io.StringIO())
    assert StudyMembership.objects.get(study__slug="owned", user=user).role == "owner"


@pytest.mark.heavy
@pytest.mark.django_db(transaction=True)
def test_the_migration_makes_every_researcher_an_owner():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = (
        [("annotation", "0003_study_consent_details_and_attention_screening")],
        [("annotation", "0004_study_memberships")],
    )
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    user = old.get_model("auth", "User").objects.create(username="pi")
    study = old.get_model("annotation", "Study").objects.create(slug="old", title="Old")
    study.researchers.add(user)
    old.get_model("annotation", "Study").objects.create(slug="nobody", title="No team")
    executor = MigrationExecutor(connection)
    executor.migrate(after)
    executor.loader.build_graph()
    MigrationExecutor(connection).migrate(executor.loader.graph.leaf_nodes())
    memberships = StudyMembership.objects.values_list("study__slug", "user__username", "role")
    assert list(memberships) == [("old", "pi", "owner")]


def test_only_owners_delete_a_study_in_the_admin(client, team):
    from django.contrib.auth.models import Permission

    _, people, _ = team
    # A study without texts (simplifications are protected from a study's deletion in the admin).
    study = Study.objects.create(slug="bare", title="Bare")
    study_member_add(study=study, user=people["owner"], role="owner", actor="test")
    study_member_add(study=study, user=people["editor"], role="editor", actor="test")
    activity_record(study=study, actor="test", verb="study.changed")
    url = reverse("admin:annotation_study_delete", args=[study.pk])
    for name in ("owner", "editor"):
        people[name].user_permissions.set(
            Permission.objects.filter(
                content_type__app_label__in=["annotation", "generation", "judging", "evaluation"]
            )
        )
    client.force_login(people["editor"])
    assert client.get(url).status_code == 403
    client.force_login(people["owner"])
    assert client.get(url).status_code == 200
    deleted = client.post(url, {"post": "yes"})
    assert deleted.status_code == 302, (deleted.context["perms_lacking"], deleted.context["protected"])
    assert not Study.objects.filter(pk=study.pk).exists()
