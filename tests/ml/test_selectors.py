import pytest

from annotation import participant_services
from annotation.models import Participant, Simplification, SimplificationText
from ml.corpora import SimplificationPair
from ml.selectors import PairFilter, training_pairs_for_study
from surveys.lay import services as lay_answers
from surveys.radiologist import services as expert_answers
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db

ASPECTS = ("correctness", "completeness", "hallucination", "structure", "simplicity")


def text_of(study, source_key, system_key) -> SimplificationText:
    return Simplification.objects.get(
        source__study=study, source__key=source_key, system__key=system_key
    ).shown_text


def rate(participant, text, *scores):
    expert_answers.expert_rating_save(
        participant=participant, shown_text=text, scores=dict(zip(ASPECTS, scores, strict=True))
    )


@pytest.fixture
def study():
    # 3 sources x 3 systems; in s02, plain_sc and cot_bs produced the same text (one shared row).
    return build_study(
        slug="ml-pairs",
        n_sources=3,
        systems=("plain_bs", "plain_sc", "cot_bs"),
        shared=((1, "plain_sc", "cot_bs"),),
    )


def pair(study, source_key, system_key) -> SimplificationPair:
    text = text_of(study, source_key, system_key)
    return SimplificationPair(text.source.text, text.text)


def test_all_gives_every_distinct_text_once(study):
    pairs = training_pairs_for_study(study=study, filter="all")
    assert len(pairs) == 8  # 9 simplifications, two of which share a text
    assert pairs[0] == pair(study, "s01", "plain_bs")
    assert len(set(pairs)) == 8


def test_expert_min_needs_every_radiologist_at_or_above_k_on_all_aspects(study):
    r1, r2 = (
        participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST) for _ in "ab"
    )
    good = text_of(study, "s01", "plain_bs")
    rate(r1, good, 5, 4, 5, 4, 4)
    rate(r2, good, 4, 4, 4, 4, 5)
    one_low = text_of(study, "s01", "plain_sc")
    rate(r1, one_low, 5, 5, 5, 5, 5)
    rate(r2, one_low, 5, 5, 3, 5, 5)  # r2 found a hallucination
    partial = text_of(study, "s02", "plain_bs")
    expert_answers.expert_rating_save(participant=r1, shown_text=partial, scores={"correctness": 5})
    shared = text_of(study, "s02", "plain_sc")
    rate(r1, shared, 4, 4, 4, 4, 4)
    # A layperson cannot rate; texts nobody rated (s03) never qualify.

    assert training_pairs_for_study(study=study, filter="expert_min:4") == [
        pair(study, "s01", "plain_bs"),
        pair(study, "s02", "plain_sc"),
    ]
    assert training_pairs_for_study(study=study, filter={"kind": "expert_min", "min_score": 5}) == []
    assert training_pairs_for_study(study=study, filter="expert_min:3") == [
        pair(study, "s01", "plain_bs"),
        pair(study, "s01", "plain_sc"),
        pair(study, "s02", "plain_sc"),
    ]


def test_lay_preferred_keeps_each_sources_most_voted_texts(study):
    def vote(source_key, *system_keys):
        participant = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
        source = study.sources.get(key=source_key)
        item = lay_answers.lay_item_create(
            participant=participant,
            source=source,
            position=0,
            shown_text=text_of(study, source_key, "plain_bs"),
            assigned_system=None,
        )
        lay_answers.lay_preference_save(
            item=item, most=[text_of(study, source_key, k).pk for k in system_keys]
        )

    vote("s01", "plain_sc")
    vote("s01", "plain_sc", "cot_bs")
    vote("s01", "plain_bs")
    vote("s02", "plain_bs")
    vote("s02", "plain_sc")  # a tie: both texts of s02 won once
    # s03: nobody voted, so nothing from it.

    assert training_pairs_for_study(study=study, filter="lay_preferred") == [
        pair(study, "s01", "plain_sc"),
        pair(study, "s02", "plain_bs"),
        pair(study, "s02", "plain_sc"),
    ]


def test_other_studies_do_not_leak_in(study):
    other = build_study(slug="other", n_sources=2, systems=("plain_bs",))
    assert len(training_pairs_for_study(study=other, filter="all")) == 2
    assert all(p.source.startswith("Sentence") for p in training_pairs_for_study(study=study))
    assert len(training_pairs_for_study(study=study)) == 8


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("expert_min:4", PairFilter("expert_min", 4)),
        ("expert_min", PairFilter("expert_min", 4)),
        ({"kind": "lay_preferred"}, PairFilter("lay_preferred")),
        (None, PairFilter("all")),
    ],
)
def test_pair_filter_parses(value, expected):
    assert PairFilter.parse(value) == expected
    assert PairFilter.parse(expected.as_json()) == expected


@pytest.mark.parametrize("value", ["expert_min:9", "expert_min:x", "lay_preferred:2", "best"])
def test_pair_filter_refuses_nonsense(value):
    with pytest.raises(ValueError):
        PairFilter.parse(value)
