"""Preference pairs from human judgments (evaluation.exports.preference_pairs/_inputs) and their
exports (`export --format preferences|hf-dataset`). The derivation of lay pairs is checked against
measures.stats.pairwise.preferences_to_pairs (the analysis's own derivation, written separately),
the majority and rating rules against pandas; the release test exports the authors' 2024 data."""

from __future__ import annotations

import io
import json
import random

import pandas as pd
import pytest
from django.core.management import CommandError, call_command
from django.db import transaction

from annotation.models import Study
from evaluation.exports.preference_pairs import (
    LAY,
    RATING,
    Rating,
    Vote,
    aggregate_votes,
    best_worst_votes,
    rating_pairs,
)
from measures.stats.pairwise import preferences_to_pairs


def test_best_worst_votes_are_the_analysis_pairs():
    rng = random.Random(4)
    for _ in range(200):
        shown = rng.sample(range(10), rng.randint(2, 6))
        most = set(rng.sample(shown, rng.randint(0, 2)))
        least = set(rng.sample(shown, rng.randint(0, 2)))
        mine = {
            (v.winner, v.loser)
            for v in best_worst_votes(source="s", rater="r", most=most, least=least, shown=shown)
        }
        # The analysis's reading: a text ticked both counts as neither.
        theirs = {
            (c.left, c.right)
            for c in preferences_to_pairs(
                [t for t in shown if t in most - least], [t for t in shown if t in least - most], shown
            )
        }
        assert mine == theirs


def test_majorities_and_ties_against_pandas():
    rng = random.Random(7)
    votes = []
    for rater in range(9):
        for source in "ab":
            for x, y in [(1, 2), (1, 3), (2, 3)]:
                roll = rng.random()
                if roll < 0.1:
                    votes.append(Vote("pairwise", source, rater, x, y, tie=True))
                elif roll < 0.55:
                    votes.append(Vote("pairwise", source, rater, x, y))
                else:
                    votes.append(Vote("pairwise", source, rater, y, x))
    summary = aggregate_votes(votes)
    frame = pd.DataFrame([v.__dict__ for v in votes])
    frame["pair"] = frame.apply(lambda r: tuple(sorted((r.winner, r.loser))), axis=1)
    expected = {}
    ties = 0
    for (source, pair), group in frame.groupby(["source", "pair"]):
        decided = group[~group.tie]
        wins = decided.winner.value_counts()
        a, b = int(wins.get(pair[0], 0)), int(wins.get(pair[1], 0))
        if a == b:
            ties += 1
            continue
        chosen, rejected = (pair[0], pair[1]) if a > b else (pair[1], pair[0])
        expected[(source, chosen, rejected)] = (group.rater.nunique(), max(a, b), min(a, b))
    got = {
        (p.source, p.chosen, p.rejected): (p.rater_count, p.votes_for, p.votes_against) for p in summary.pairs
    }
    assert got == expected and summary.ties["pairwise"] == ties


def test_rating_pairs_against_pandas():
    rng = random.Random(3)
    ratings = [
        Rating(source, rater, text, rng.choice([1, 2, 3, 4, 5]) + rng.random())
        for source in "xy"
        for rater in range(4)
        for text in (10, 11, 12, 13)
        if rng.random() > 0.2
    ]
    summary = rating_pairs(ratings, threshold=0.75)
    frame = pd.DataFrame([r.__dict__ for r in ratings])
    means = frame.groupby(["source", "text"]).score.mean()
    expected = set()
    for source in "xy":
        texts = sorted(means[source].index)
        for i, a in enumerate(texts):
            for b in texts[i + 1 :]:
                gap = means[source][a] - means[source][b]
                if abs(gap) >= 0.75:
                    expected.add((source, a, b) if gap > 0 else (source, b, a))
    assert {(p.source, p.chosen, p.rejected) for p in summary.pairs} == expected
    assert all(p.kind == RATING and p.margin >= 0.75 for p in summary.pairs)
    with pytest.raises(ValueError, match="positive"):
        rating_pairs(ratings, threshold=0)


@pytest.mark.django_db
def test_a_study_without_preferences_is_refused(tmp_path):
    study = Study.objects.create(slug="empty", title="Empty")
    with pytest.raises(CommandError, match="has no preference pairs"):
        call_command(
            "export", "--study", "empty", "--format", "preferences", "--out", str(tmp_path / "p.jsonl")
        )
    with pytest.raises(CommandError, match="has no preference pairs"):
        call_command("export", "--study", study.slug, "--format", "hf-dataset", "--out", str(tmp_path / "ds"))
    assert not (tmp_path / "ds").exists()


# --- the authors' 2024 release ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def release_exports(release_dir, django_db_setup, django_db_blocker, tmp_path_factory):
    """Import the release, export its pairs both ways, and roll the import back."""
    out = tmp_path_factory.mktemp("preferences")
    with django_db_blocker.unblock(), transaction.atomic():
        call_command("import_release", str(release_dir), "--study", "release-pairs", stdout=io.StringIO())
        call_command(
            "export", "--study", "release-pairs", "--format", "preferences", "--out", str(out / "pairs.jsonl")
        )
        call_command("export", "--study", "release-pairs", "--format", "hf-dataset", "--out", str(out / "ds"))
        transaction.set_rollback(True)
    return out


@pytest.mark.release
@pytest.mark.django_db
def test_release_preference_pairs(release_exports):
    records = [json.loads(line) for line in (release_exports / "pairs.jsonl").read_text().splitlines()]
    assert len(records) >= 50
    kinds = {r["preference_source"] for r in records}
    assert {LAY, RATING} <= kinds
    for record in records:
        assert record["chosen"] != record["rejected"] and record["rater_count"] >= 1
        assert record["original"] in record["prompt"] and record["prompt_family"] == "plain"
        assert record["chosen_systems"] and not set(record["chosen_systems"]) & set(
            record["rejected_systems"]
        )
    lay = [r for r in records if r["preference_source"] == LAY]
    assert all(r["votes_for"] > r["votes_against"] for r in lay)


@pytest.mark.release
@pytest.mark.django_db
def test_release_hf_dataset_folder_and_card(release_exports):
    import datasets

    records = (release_exports / "pairs.jsonl").read_text().splitlines()
    dataset = datasets.load_from_disk(str(release_exports / "ds"))
    assert len(dataset) == len(records)
    assert dataset[0] == json.loads(records[0])
    card = (release_exports / "ds" / "README.md").read_text()
    for needed in (
        "## Fields",
        "How the labels were collected",
        "Two-Pronged Human Evaluation",
        "## Licence",
    ):
        assert needed in card
    assert "de-identified" in card


# --- the database reads, against the analysis's own selectors -----------------------------------


@pytest.mark.django_db
def test_pairwise_and_lay_answers_become_the_pairs_the_analysis_reads():
    from collections import Counter

    from annotation import participant_services
    from annotation.models import PairwiseTask, Participant, StudyInstrument
    from evaluation.exports.preference_selectors import study_preferences
    from surveys.compare_two.selectors import derived_comparisons, pairwise_comparisons
    from surveys.compare_two.services import (
        pairwise_answer_save,
        pairwise_instrument_attach,
        pairwise_tasks_prepare,
    )
    from surveys.lay import services as lay_answers
    from tests.annotation.factories import build_study, lay_item_of

    study = build_study(slug="pw-pairs", n_sources=3, systems=("a", "b", "c"))
    instrument = pairwise_instrument_attach(study=study)
    for choice in ("left", "left", "tie", "right"):
        person = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
        pairwise_tasks_prepare(participant=person, instrument=StudyInstrument.objects.get(pk=instrument.pk))
        for task in PairwiseTask.objects.filter(participant=person).select_related(
            "instrument", "participant__study", "left", "right"
        ):
            pairwise_answer_save(task=task, choice=choice)
    lay = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    source = study.sources.order_by("position").first()
    texts = {
        s.system.key: s.shown_text for s in source.simplifications.select_related("system", "shown_text")
    }
    item = lay_item_of(lay, source, study.systems.get(key="a"))
    item.preference_order = [texts[k].pk for k in "abc"]
    item.save(update_fields=["preference_order"])
    lay_answers.lay_preference_save(item=item, most=[texts["b"].pk], least=[texts["c"].pk])

    found = study_preferences(study=study)
    system_of = {text: systems[0] for text, systems in found.systems.items()}
    got = {
        (p.kind, p.source, system_of[p.chosen], system_of[p.rejected]): (
            p.rater_count,
            p.votes_for,
            p.votes_against,
        )
        for p in found.summary.pairs
    }
    # Expected from the analysis's selectors: majority per (source, pair of systems).
    votes: dict = {}
    for c in pairwise_comparisons(study=study):
        key = (c.source, frozenset((c.left, c.right)))
        entry = votes.setdefault(key, {"raters": set(), "wins": Counter()})
        entry["raters"].add(c.rater)
        if c.outcome in ("left", "right"):
            entry["wins"][c.left if c.outcome == "left" else c.right] += 1
    expected = {}
    for (source_key, pair), entry in votes.items():
        x, y = sorted(pair)
        if entry["wins"][x] != entry["wins"][y]:
            chosen, rejected = (x, y) if entry["wins"][x] > entry["wins"][y] else (y, x)
            expected[("pairwise", source_key, chosen, rejected)] = (
                len(entry["raters"]),
                entry["wins"][chosen],
                entry["wins"][rejected],
            )
    for c in derived_comparisons(study=study):
        expected[("lay_most_least", c.source, c.left, c.right)] = (1, 1, 0)
    assert got == expected
    even = sum(1 for (_, pair), e in votes.items() if len({e["wins"][s] for s in pair}) == 1)
    assert any(k[0] == "pairwise" for k in got) and found.summary.ties["pairwise"] == even
