"""SQL queries per lay survey request (the rule: survey requests cost a small constant number of
queries whatever the study's size and the participant's progress). The same requests are counted
on a 2,000-source study at its first sentence and deep into it, and on a 6-source study; each stays
under one bound, so a per-row query or a reload of the participant's whole progress fails here."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation import participant_services
from annotation.instrument_selectors import study_instrument_current
from annotation.instrument_services import study_instruments_attach
from annotation.models import (
    AttentionCheck,
    LayItem,
    Participant,
    Simplification,
    SimplificationText,
    Source,
    Study,
    System,
)
from annotation.models import text_hash as hash_of
from surveys.lay import panels, steps

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}
PANEL1 = {"understanding": "Some parts of it", "confidence": "With low confidence", "severity_guess": "Mild"}
PANEL2 = {**PANEL1, "helpfulness": "I understand much better"}

# Bounds per request, as measured (savepoints count: each answer service is atomic inside the
# request's transaction). A request that starts costing more fails here.
MAX_QUERIES = {
    # Measured on the one answer store: an autosave writes only the answer that changed; a submit
    # reads the panel's answers once, then writes the new ones in one INSERT per target (panel 2:
    # the sentence's questions and Q4 about the text are two targets).
    "get original": 4,
    # An autosave: savepoint, the token's participant and the item under its lock with where the
    # participant is (one statement), the panel's answers, the INSERT (or UPDATE), release.
    "autosave original": 5,
    # A submit: savepoint, the token's participant and the item under its lock (one statement), the
    # panel's answers, the new ones' INSERT, the item moved on, release; then where the
    # participant goes next (no round trip via the start page).
    "submit original": 7,
    "get assisted": 5,
    "autosave assisted": 5,
    "submit assisted": 7,  # the panel's two targets' new answers in one INSERT
    "get preference": 5,
    "autosave preference": 5,  # the first: the choice inserted (no savepoint)
    "autosave preference, one question": 5,  # as survey.js sends it: both choices read in one query
    "submit preference": 7,
    # The submit that answers with the next panel itself (survey.js `navigate`): the submit and
    # that panel's page in one request, instead of a submit and a GET.
    "submit original, next in place": 10,
    "submit assisted, next in place": 10,
    "submit preference, next in place": 9,
}
NAVIGATE = {"HTTP_X_RADLAY_NAVIGATE": "1"}


def _big_study(slug: str, n_sources: int) -> Study:
    """n_sources × 3 systems, written in bulk (the services would take minutes for 2,000)."""
    study = Study.objects.create(slug=slug, title=slug, status=Study.Status.OPEN)
    # Its instruments, as every study made by the services has them (answers name their version),
    # read once as a serving process reads them once per version (then cached).
    study_instruments_attach(study=study)
    study_instrument_current(study=study, flow="lay")
    systems = System.objects.bulk_create(
        [System(study=study, key=key, label=key, position=n) for n, key in enumerate(("a", "b", "c"))]
    )
    sources = Source.objects.bulk_create(
        [Source(study=study, key=f"s{i:05d}", text=f"Sentence {i}.", position=i) for i in range(n_sources)]
    )
    texts = SimplificationText.objects.bulk_create(
        [
            SimplificationText(
                source=source,
                text=f"Plain words {source.pk} {system.key}.",
                text_hash=hash_of(f"Plain words {source.pk} {system.key}."),
            )
            for source in sources
            for system in systems
        ]
    )
    Simplification.objects.bulk_create(
        [
            Simplification(source=source, system=system, shown_text=texts[3 * i + j])
            for i, source in enumerate(sources)
            for j, system in enumerate(systems)
        ]
    )
    return study


def _participant(study: Study) -> Participant:
    participant = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    return participant_services.participant_consent(participant=participant, accepted=True)


def _url(participant, item, panel) -> str:
    return reverse(
        "surveys:lay-panel", kwargs={"token": participant.token, "item_id": item.pk, "panel": panel}
    )


def _one_sentence(client, participant, item, counts, django_assert_max_num_queries, navigate=False) -> None:
    """GET, autosave and submit each panel of `item`, each under its bound; records the counts.
    `navigate`: the submits answer with the next panel, so only the first panel is a GET."""

    def request(name, url, data=None, **headers):
        with django_assert_max_num_queries(MAX_QUERIES[name]), CaptureQueriesContext(connection) as seen:
            response = client.get(url) if data is None else client.post(url, data, **headers)
        counts.setdefault(name, []).append(len(seen))
        assert response.status_code in ((200,) if navigate and "submit" in name else (200, 302)), (
            name,
            response.status_code,
        )

    def stamp(panel):
        return {"rendered_at": panels.panel_stamp(item=item, panel=panel, now=time.time() - 5)}

    def submit(panel, url, data):
        if navigate:
            request(f"submit {panel}, next in place", url, data, **NAVIGATE)
        else:
            request(f"submit {panel}", url, data)

    for panel, answers in (("original", PANEL1), ("assisted", PANEL2)):
        url = _url(participant, item, panel)
        if panel == "original" or not navigate:
            request(f"get {panel}", url)
        first = dict(list(answers.items())[:1])
        request(f"autosave {panel}", url, {**stamp(panel), **first, "autosave": "1"}, **HX)
        submit(panel, url, {**stamp(panel), **answers, "continue": "1"})
    item.refresh_from_db()
    a, b = item.preference_order[:2]
    url = _url(participant, item, "preference")
    fields = {**stamp("preference"), "fields": ["most", "least"]}
    if not navigate:
        request("get preference", url)
    request("autosave preference", url, {**fields, "most": [a], "autosave": "1"}, **HX)
    one = {**stamp("preference"), "fields": "least", "least": [b], "autosave": "1"}
    request("autosave preference, one question", url, one, **HX)
    submit("preference", url, {**fields, "most": [a], "least": [b], "most_justification": "Clear."})


@pytest.mark.heavy
def test_lay_requests_cost_constant_queries(client, django_assert_max_num_queries):
    counts: dict[str, list[int]] = {}
    for slug, n_sources in (("small", 6), ("big", 2000)):
        study = _big_study(slug, n_sources)
        if n_sources > 6:
            # An attention check waiting further on costs nothing until it is due.
            AttentionCheck.objects.create(
                study=study,
                position=1900,
                prompt="Choose Blue.",
                options=["Red", "Blue"],
                expected_answer="Blue",
            )
        participant = _participant(study)
        assert (
            client.post(reverse("surveys:lay-instructions", kwargs={"token": participant.token})).status_code
            == 302
        )
        items = list(LayItem.objects.filter(participant=participant).order_by("position"))
        assert len(items) == n_sources
        _one_sentence(client, participant, items[0], counts, django_assert_max_num_queries)
        _one_sentence(client, participant, items[1], counts, django_assert_max_num_queries, navigate=True)
        if n_sources > 6:
            # Deep into the survey: 1,500 sentences behind (written directly), then the next two.
            LayItem.objects.filter(pk__in=[i.pk for i in items[2:1502]]).update(stage="done")
            _one_sentence(client, participant, items[1502], counts, django_assert_max_num_queries)
            _one_sentence(
                client, participant, items[1503], counts, django_assert_max_num_queries, navigate=True
            )
    print({name: values for name, values in counts.items()})
    # Constant: the same request costs the same whatever the study's size and progress.
    for name, values in counts.items():
        assert max(values) - min(values) <= 1, (name, values)


@pytest.mark.heavy
@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plans of prepared statements")
def test_the_first_unfinished_item_is_found_by_its_index_in_a_generic_plan():
    """psycopg prepares a statement after five runs, and PostgreSQL then keeps a generic plan, made
    without the arguments. The participant's first unfinished item must come from the partial index
    lay_item_unfinished in that plan too; when "not done" was a parameter, the generic plan walked
    the participant's whole position index and skipped the done items (1,500 rows in, ~1 ms)."""
    study = _big_study("deep", 2000)
    participant = _participant(study)
    begin = reverse("surveys:lay-instructions", kwargs={"token": participant.token})
    assert Client().post(begin).status_code == 302
    items = list(LayItem.objects.filter(participant=participant).order_by("position"))
    LayItem.objects.filter(pk__in=[i.pk for i in items[:1500]]).update(stage="done")
    sql, params = steps._first_unfinished(participant.pk).values("pk")[:1].query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE annotation_layitem")
        placeholders = iter(range(1, len(params) + 1))
        generic = sql.replace("%s", "{}").format(*(f"${n}" for n in placeholders))
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute(f"PREPARE first_unfinished AS {generic}")
        # The arguments inline: a utility statement takes no bound parameters.
        cursor.execute(f"EXPLAIN EXECUTE first_unfinished({', '.join(str(int(p)) for p in params)})")
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("DEALLOCATE first_unfinished")
    assert "lay_item_unfinished" in plan, plan
