"""The pairs flow's services, selectors and views (surveys/rate_each_pair/, surveys/rate_each_pair/views.py):
which pairs a study has and what their reference is, attaching a preset, inviting rater groups,
saving a page all or nothing with each refused item named, progress, resume, and the pages'
answers to odd requests (never a 500)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.http import QueryDict
from django.urls import reverse

from annotation import participant_services
from annotation.models import Participant, Simplification, Study, StudyInstrument, System
from instruments.answers import SentenceMatches, sentence_matching_proportion
from instruments.schema import ProportionOf
from measures.metrics.sentences import split_sentences
from studies import source_services
from surveys.rate_each_pair import pages
from surveys.rate_each_pair import selectors as design
from surveys.rate_each_pair.services import pairs_participants_invite, study_instrument_attach
from tests.annotation import answers as typed_answers
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db

CRITERIA = ("factual_correctness", "completeness", "simplicity", "fluency")


def _post(**fields) -> QueryDict:
    data = QueryDict(mutable=True)
    for name, value in fields.items():
        name = name.replace("__", ".")
        if isinstance(value, list):
            data.setlist(name, value)
        else:
            data[name] = value
    return data


def _consented(participant: Participant) -> Participant:
    return participant_services.participant_consent(participant=participant, accepted=True)


@pytest.fixture
def medlay() -> Study:
    study = build_study(slug="medlay", n_sources=3, systems=("a", "b"), shared=((0, "a", "b"),))
    study_instrument_attach(study=study, preset_name="medlaybench_002", actor="test")
    return study


@pytest.fixture
def matching() -> Study:
    study = build_study(slug="match", n_sources=2, systems=("ref", "gen1", "gen2"))
    source_services.system_upsert(study=study, key="ref", is_reference=True)
    source = study.sources.get(key="s01")
    source_services.simplification_upsert(
        source=source,
        system=study.systems.get(key="ref"),
        text="The liver has a spot. It is small. Nothing else.",
    )
    source_services.simplification_upsert(
        source=source,
        system=study.systems.get(key="gen1"),
        text="There is a small spot in the liver. All else is fine.",
    )
    study_instrument_attach(study=study, preset_name="layman_rrg_000_matching", actor="test")
    return study


def test_attach_stores_the_preset_once_and_refuses_what_the_flow_cannot_ask(medlay):
    # Every study also has the protocol's two instruments (the radiologist page's and the lay flow's).
    row = StudyInstrument.objects.get(study=medlay, flow="pairs")
    assert (row.key, row.version, row.flow, row.preset, row.is_current) == (
        "medlaybench_002",
        1,
        "pairs",
        "medlaybench_002",
        True,
    )
    again = study_instrument_attach(study=medlay, preset_name="medlaybench_002")
    assert again.pk == row.pk and StudyInstrument.objects.filter(study=medlay, flow="pairs").count() == 1
    with pytest.raises(ValidationError) as refused:
        study_instrument_attach(study=medlay, preset_name="protocol_003_layperson")
    assert "applies to the source" in str(refused.value)
    with pytest.raises(ValidationError, match="No preset 'nope'"):
        study_instrument_attach(study=medlay, preset_name="nope")


def test_without_a_reference_system_each_distinct_text_is_paired_with_its_source(medlay):
    pairs = design.study_pairs(study=medlay)
    # 3 sources × 2 systems, but source 1's two systems share one text: 5 pages.
    assert len(pairs) == 5
    assert all(pair.reference_text_id is None for pair in pairs)
    assert len({pair.shown_text_id for pair in pairs}) == 5


def test_with_a_reference_system_texts_are_paired_with_its_text_and_sources_without_one_are_left_out(
    matching,
):
    ref = System.objects.get(study=matching, key="ref")
    Simplification.objects.filter(source__key="s02", system=ref).delete()
    pairs = design.study_pairs(study=matching)
    reference = Simplification.objects.get(source__key="s01", system=ref).shown_text_id
    generated = set(
        Simplification.objects.filter(source__key="s01", system__key__in=["gen1", "gen2"]).values_list(
            "shown_text_id", flat=True
        )
    )
    assert {p.shown_text_id for p in pairs} == generated and len(pairs) == 2
    assert {p.reference_text_id for p in pairs} == {reference}


def test_each_participant_has_a_stable_order_of_their_own(medlay):
    one, two = (participant_services.participant_create(study=medlay, role="radiologist") for _ in range(2))
    one.order_seed, two.order_seed = 1, 2
    first = design.participant_pairs(participant=one)
    assert first == design.participant_pairs(participant=one)
    assert sorted(p.shown_text_id for p in first) == sorted(
        p.shown_text_id for p in design.study_pairs(study=medlay)
    )
    assert first != design.participant_pairs(participant=two)


def test_invites_take_the_rater_groups_the_instruments_name(matching):
    annotators = pairs_participants_invite(study=matching, rater_group="annotator", role="layperson", count=3)
    assert [(p.role, p.rater_group) for p in annotators] == [("layperson", "annotator")] * 3
    assert all(design.pairs_participant(p) for p in annotators)
    with pytest.raises(ValidationError, match="not a rater group"):
        pairs_participants_invite(study=matching, rater_group="radiologist", count=1)
    with pytest.raises(ValidationError, match="radiologists or laypeople"):
        pairs_participants_invite(study=matching, rater_group="annotator", count=1)
    # A layperson without the group is not asked anything here: the lay flow is theirs.
    assert not design.pairs_participant(
        participant_services.participant_create(study=matching, role="layperson")
    )


def test_a_page_is_saved_all_or_nothing_with_each_refused_item_named(medlay):
    person = _consented(participant_services.participant_create(study=medlay, role="layperson"))
    pair = design.participant_pairs(participant=person)[0]
    with pytest.raises(ValidationError) as refused:
        pages.pair_answers_save(
            participant=person,
            pair=pair,
            data=_post(
                medlaybench_002__fluency="4",
                medlaybench_002__simplicity="9",
                medlaybench_002__completeness="x",
            ),
        )
    errors = refused.value.message_dict
    assert set(errors) == {"medlaybench_002.simplicity", "medlaybench_002.completeness"}
    assert "Simplicity" in errors["medlaybench_002.simplicity"][0]
    assert not typed_answers.item_answers().exists()

    saved = pages.pair_answers_save(
        participant=person, pair=pair, data=_post(medlaybench_002__fluency="4"), time_spent_ms=1200
    )
    assert saved == ["medlaybench_002.fluency"]
    answer = typed_answers.item_answers().get()
    assert (answer.item_key, answer.value, answer.score, answer.language, answer.time_spent_ms) == (
        "fluency",
        4,
        4.0,
        "en",
        1200,
    )
    assert (answer.source_id, answer.shown_text_id, answer.reference_text_id) == (
        pair.source_id,
        pair.shown_text_id,
        None,
    )
    # Changing the answer updates the one row.
    pages.pair_answers_save(participant=person, pair=pair, data=_post(medlaybench_002__fluency="2"))
    assert list(typed_answers.item_answers().values_list("value", "score")) == [(2, 2.0)]


def test_progress_and_resume_follow_the_required_answers(medlay):
    person = _consented(participant_services.participant_create(study=medlay, role="radiologist"))
    order = design.participant_pairs(participant=person)
    assert pages.pairs_progress(participant=person).done == 0
    assert pages.pairs_resume(participant=person) == order[0]
    answers = {f"medlaybench_002__{c}": "5" for c in CRITERIA}
    pages.pair_answers_save(participant=person, pair=order[0], data=_post(**answers), whole_page=True)
    assert pages.pairs_progress(participant=person).done == 1
    assert pages.pairs_resume(participant=person) == order[1]
    # A plain submit with a criterion left blank stores the rest and leaves the page incomplete.
    partial = {**answers, "medlaybench_002__fluency": ""}
    pages.pair_answers_save(participant=person, pair=order[1], data=_post(**partial), whole_page=True)
    assert pages.pairs_resume(participant=person) == order[1]
    state = pages.pair_page_get(participant=person, pair=order[1])
    assert state.missing == ["medlaybench_002.fluency"]


def test_sentence_matching_stores_the_grid_and_its_proportion(matching):
    person = pairs_participants_invite(study=matching, rater_group="annotator", role="layperson", count=1)[0]
    _consented(person)
    source = matching.sources.get(key="s01")
    pair = next(
        p
        for p in design.study_pairs(study=matching)
        if p.shown_text_id == source.simplifications.get(system__key="gen1").shown_text_id
    )
    state = pages.pair_page_get(participant=person, pair=pair)
    grid = state.items[0]
    assert grid.reference_sentences == split_sentences("The liver has a spot. It is small. Nothing else.")
    assert len(grid.reference_sentences) == 3 and len(grid.generated_sentences) == 2
    field = "layman_rrg_000_matching.sentence_match"
    # A row with no answer yet refuses the grid (it is not "nothing matches").
    with pytest.raises(ValidationError, match="reference sentence 3 has no answer"):
        pages.pair_answers_save(
            participant=person, pair=pair, data=_post(**{field.replace(".", "__"): ["0-0", "1-0"]})
        )
    data = QueryDict(mutable=True)
    data.setlist(field, ["0-0", "1-0"])
    data.setlist(field + ".none", ["2"])
    pages.pair_answers_save(participant=person, pair=pair, data=data)
    answer = typed_answers.item_answers().get()
    assert answer.value == {"generated_count": 2, "matches": [[0], [0], []]}
    expected = sentence_matching_proportion(
        SentenceMatches(generated_count=2, matches=(frozenset({0}), frozenset({0}), frozenset())),
        ProportionOf.GENERATED,
    )
    assert answer.score == expected == 0.5
    assert answer.reference_text_id == pair.reference_text_id is not None
    # Back on the page: the ticks and the "none" row are shown as stored.
    grid = pages.pair_page_get(participant=person, pair=pair).items[0]
    assert grid.ticks == {(0, 0), (1, 0)} and grid.none_rows == {2}
    for bad in (["0-9"], ["x"], ["0-0-0"]):
        refused = QueryDict(mutable=True)
        refused.setlist(field, bad)
        with pytest.raises(ValidationError):
            pages.pair_answers_save(participant=person, pair=pair, data=refused)
    both = QueryDict(mutable=True)
    both.setlist(field, ["0-0", "1-1", "2-0"])
    both.setlist(field + ".none", ["2"])
    with pytest.raises(ValidationError, match="both"):
        pages.pair_answers_save(participant=person, pair=pair, data=both)


def test_pages_walk_from_the_invite_link_to_the_end(client, medlay):
    person = participant_services.participant_create(study=medlay, role="radiologist")
    start = client.get(reverse("surveys:entry", args=[person.token]))
    assert start.url == reverse("surveys:pairs-start", args=[person.token])
    assert client.get(start.url).url == reverse("surveys:pairs-consent", args=[person.token])
    consent = client.get(reverse("surveys:pairs-consent", args=[person.token]))
    assert b"Information and consent" in consent.content and b"Han Jang" in consent.content
    response = client.post(reverse("surveys:pairs-consent", args=[person.token]), {"choice": "accept"})
    person.refresh_from_db()
    assert person.consented_at is not None and person.language == "en"
    order = design.participant_pairs(participant=person)
    assert response.url == reverse("surveys:pairs-page", args=[person.token, order[0].shown_text_id])
    page = client.get(response.url)
    assert page.status_code == 200
    for criterion in ("Factual Correctness", "Completeness", "Simplicity", "Fluency"):
        assert criterion.encode() in page.content
    for index, pair in enumerate(order):
        url = reverse("surveys:pairs-page", args=[person.token, pair.shown_text_id])
        answers = {f"medlaybench_002.{c}": str((index + i) % 5 + 1) for i, c in enumerate(CRITERIA)}
        response = client.post(url, {**answers, "action": "next"})
        assert response.status_code == 302
    assert response.url == reverse("surveys:pairs-done", args=[person.token])
    done = client.get(response.url)
    assert done.status_code == 200 and person.completion_code.encode() in done.content
    assert typed_answers.item_answers().filter(participant=person).count() == 4 * len(order)


def test_odd_requests_get_4xx_never_500(client, medlay, matching):
    person = _consented(participant_services.participant_create(study=medlay, role="layperson"))
    pair = design.participant_pairs(participant=person)[0]
    url = reverse("surveys:pairs-page", args=[person.token, pair.shown_text_id])
    assert client.post(url, {"medlaybench_002.fluency": "7"}).status_code == 400
    assert client.post(url, {"medlaybench_002.fluency": "7"}, HTTP_HX_REQUEST="true").status_code == 400
    assert client.post(url, {"medlaybench_002.fluency": "\x00"}, HTTP_HX_REQUEST="true").status_code == 400
    assert client.post(url, {"medlaybench_002.fluency": "3"}, HTTP_HX_REQUEST="true").status_code == 200
    other = build_study(slug="other", n_sources=1, systems=("z",))
    foreign = other.sources.get().simplifications.get().shown_text_id
    assert client.get(reverse("surveys:pairs-page", args=[person.token, foreign])).status_code == 404
    assert client.get(reverse("surveys:pairs-page", args=["nope", pair.shown_text_id])).status_code == 404
    # The lay flow's own participant (no pairs instrument asks them anything there) is refused here.
    lay = participant_services.participant_create(study=other, role="layperson")
    assert client.get(reverse("surveys:pairs-start", args=[lay.token])).status_code == 403
    # Not consented yet: a save is refused, a page sends to consent.
    fresh = participant_services.participant_create(study=medlay, role="radiologist")
    fresh_url = reverse("surveys:pairs-page", args=[fresh.token, pair.shown_text_id])
    assert client.post(fresh_url, {"medlaybench_002.fluency": "3"}).status_code == 409
    assert client.get(fresh_url).status_code == 302
    grid_person = pairs_participants_invite(
        study=matching, rater_group="annotator", role="layperson", count=1
    )[0]
    _consented(grid_person)
    grid_pair = design.participant_pairs(participant=grid_person)[0]
    grid_url = reverse("surveys:pairs-page", args=[grid_person.token, grid_pair.shown_text_id])
    field = "layman_rrg_000_matching.sentence_match"
    for bad in ({field: "a-b"}, {field: "0-99"}, {field + ".none": "x"}, {field: "1-0"}):
        assert client.post(grid_url, bad).status_code == 400
        assert client.post(grid_url, bad, HTTP_HX_REQUEST="true").status_code == 400
    Study.objects.filter(pk=medlay.pk).update(status=Study.Status.CLOSED)
    assert client.post(url, {"medlaybench_002.fluency": "3"}, HTTP_HX_REQUEST="true").status_code == 403


def test_import_study_attaches_the_instrument_and_marks_the_reference(tmp_path):
    path = tmp_path / "study.csv"
    path.write_text("source_key,source_text,reference,gen\ns1,A finding.,The spot. It is small.,A spot.\n")
    call_command(
        "import_study",
        str(path),
        "--study",
        "imp",
        "--instrument",
        "layman_rrg_000_matching",
        "--reference-system",
        "reference",
    )
    study = Study.objects.get(slug="imp")
    assert study.instruments.get(flow="pairs").key == "layman_rrg_000_matching"
    assert list(study.systems.filter(is_reference=True).values_list("key", flat=True)) == ["reference"]
    assert len(design.study_pairs(study=study)) == 1


ALL_KINDS = {
    "key": "team_pairs",
    "version": 1,
    "title": {"en": "Team pairs"},
    "citation": {
        "title": "Our study",
        "authors": "A. Team",
        "venue": "Preprint",
        "year": 2026,
        "section": "Methods",
        "short": "A. Team, 2026",
    },
    "languages": ["en"],
    "default_language": "en",
    "translation_status": {"en": "source"},
    "items": [
        {
            "key": "actionable",
            "kind": "ordinal",
            "applies_to": "pair",
            "roles": ["nurse"],
            "title": {"en": "Actionability"},
            "wording": {"en": "It says what to do next."},
            "scale": {
                "points": [{"code": c, "label": {"en": f"point {c}"}} for c in (1, 2, 3)],
                "not_applicable": {"en": "Not applicable"},
            },
        },
        {
            "key": "tone",
            "kind": "single_choice",
            "applies_to": "simplification",
            "roles": ["nurse"],
            "wording": {"en": "Its tone is"},
            "options": [{"key": "warm", "label": {"en": "Warm"}}, {"key": "cold", "label": {"en": "Cold"}}],
        },
        {
            "key": "flaws",
            "kind": "multiple_choice",
            "applies_to": "pair",
            "roles": ["nurse"],
            "wording": {"en": "Which flaws?"},
            "required": False,
            "options": [
                {"key": "long", "label": {"en": "Too long"}},
                {"key": "vague", "label": {"en": "Vague"}},
            ],
        },
        {
            "key": "omissions",
            "kind": "count",
            "applies_to": "pair",
            "roles": ["nurse"],
            "wording": {"en": "How many findings are missing?"},
            "max_count": 5,
        },
        {
            "key": "why",
            "kind": "free_text",
            "applies_to": "pair",
            "roles": ["nurse"],
            "required": False,
            "wording": {"en": "Why?"},
            "max_length": 20,
        },
    ],
}


def test_every_kind_is_shown_and_stored_with_its_value_and_score(client):
    from instruments.validation import instrument_from_data, instrument_to_data
    from instruments.versioning import instrument_fingerprint, instrument_structure_fingerprint

    study = build_study(slug="kinds", n_sources=1, systems=("a",))
    instrument = instrument_from_data(ALL_KINDS)
    StudyInstrument.objects.create(
        study=study,
        key=instrument.key,
        version=1,
        flow=StudyInstrument.Flow.PAIRS,
        definition=instrument_to_data(instrument),
        fingerprint=instrument_fingerprint(instrument),
        structure_fingerprint=instrument_structure_fingerprint(instrument),
    )
    nurse = pairs_participants_invite(study=study, rater_group="nurse", role="radiologist", count=1)[0]
    _consented(nurse)
    pair = design.participant_pairs(participant=nurse)[0]
    url = reverse("surveys:pairs-page", args=[nurse.token, pair.shown_text_id])
    page = client.get(url).content.decode()
    for control in (
        'type="radio" name="team_pairs.actionable" value="not_applicable"',
        'type="radio" name="team_pairs.tone" value="cold"',
        'type="checkbox" name="team_pairs.flaws" value="vague"',
        'type="number" name="team_pairs.omissions" min="0" max="5"',
        'name="team_pairs.why" rows="3" maxlength="20"',
        "A. Team, 2026",
    ):
        assert control in page, control
    refused = client.post(
        url, {"team_pairs.omissions": "6", "team_pairs.why": "x" * 21, "team_pairs.tone": "hot"}
    )
    assert refused.status_code == 400 and not typed_answers.item_answers().exists()
    # The refused answers stay on the page, each error named.
    assert "x" * 21 in refused.content.decode() and "at most 5" in refused.content.decode()
    done = client.post(
        url,
        {
            "team_pairs.actionable": "not_applicable",
            "team_pairs.tone": "warm",
            "team_pairs.flaws": ["vague", "long"],
            "team_pairs.omissions": "2",
            "team_pairs.why": "  too terse  ",
        },
    )
    assert done.status_code == 302
    stored = {a.item_key: (a.value, a.score, a.reference_text_id) for a in typed_answers.item_answers().all()}
    assert stored == {
        "actionable": ("not_applicable", None, None),
        "tone": ("warm", None, None),
        "flaws": (["long", "vague"], None, None),
        "omissions": (2, 2.0, None),
        "why": ("too terse", None, None),
    }
    # Clearing an optional answer removes it; a checkbox group sent empty by the autosave too.
    client.post(url, {"team_pairs.why": "", "lists": "team_pairs.flaws"}, HTTP_HX_REQUEST="true")
    assert set(typed_answers.item_answers().values_list("item_key", flat=True)) == {
        "actionable",
        "tone",
        "omissions",
    }
    assert pages.pairs_progress(participant=nurse).done == 1


def test_the_invite_command_takes_a_rater_group(matching, capsys):
    call_command(
        "invite", "--study", "match", "--rater-group", "annotator", "--role", "layperson", "--count", "2"
    )
    links = capsys.readouterr().out.split()
    assert len(links) == 2
    assert sorted(Participant.objects.filter(study=matching).values_list("rater_group", flat=True)) == [
        "annotator",
        "annotator",
    ]


def test_declining_is_recorded_and_shows_the_thank_you_page(client, medlay):
    medlay.expert_consent_text = "Our own consent text for radiologists."
    medlay.save()
    person = participant_services.participant_create(study=medlay, role="radiologist")
    consent_url = reverse("surveys:pairs-consent", args=[person.token])
    assert b"Our own consent text for radiologists." in client.get(consent_url).content
    response = client.post(consent_url, {"choice": "decline"})
    assert response.status_code == 200 and b"chose not to take part" in response.content
    person.refresh_from_db()
    assert person.declined_at is not None and person.consented_at is None
    page = reverse(
        "surveys:pairs-page", args=[person.token, design.study_pairs(study=medlay)[0].shown_text_id]
    )
    assert client.get(page).url == consent_url
