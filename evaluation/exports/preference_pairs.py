"""Preference pairs (chosen text, rejected text) from a study's human judgments. Django-free.

Three kinds of judgment become pairs of two distinct texts of one source:

* **lay most/least** (panel 3): as the analysis derives pairwise comparisons from best–worst
  answers (measures.stats.pairwise.preferences_to_pairs): the most-preferred texts beat every other
  text shown, every text shown beats the least-preferred ones; a text ticked both most and least
  counts as neither;
* **pairwise**: a "left"/"right" answer of the compare-two flow; "tie" and "neither" say that neither
  text is better (they count as raters of the pair, for neither side);
* **radiologist ratings**: each radiologist's mean over the aspects they rated, averaged per text;
  two texts whose averages differ by at least `threshold` points make a pair.

Judgments are on texts, not systems: a text several systems produced is one text (all of them are
named with it), and two systems that wrote the same text never make a pair (nothing to learn).
For the lay and pairwise kinds, the raters' votes on a pair are added up: the pair is kept in the
direction of the majority, with its number of raters and the votes for and against; an even split
is a tie and is dropped (counted in `PairSummary.ties`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

LAY = "lay_most_least"
PAIRWISE = "pairwise"
RATING = "radiologist_rating"
KINDS = (LAY, PAIRWISE, RATING)


@dataclass(frozen=True)
class Vote:
    """One rater's judgment of two texts of a source: `winner` beat `loser`, or (tie=True) neither."""

    kind: str
    source: Hashable
    rater: Hashable
    winner: Hashable
    loser: Hashable
    tie: bool = False


@dataclass(frozen=True)
class Rating:
    """One radiologist's mean over the aspects they rated of one text."""

    source: Hashable
    rater: Hashable
    text: Hashable
    score: float


@dataclass(frozen=True)
class Pair:
    kind: str
    source: Hashable
    chosen: Hashable
    rejected: Hashable
    rater_count: int
    votes_for: int = 0
    votes_against: int = 0
    margin: float | None = None  # ratings: the difference of the two texts' mean scores


@dataclass
class PairSummary:
    pairs: list[Pair] = field(default_factory=list)
    ties: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))

    def count(self, kind: str) -> int:
        return sum(1 for pair in self.pairs if pair.kind == kind)


def best_worst_votes(
    *,
    source: Hashable,
    rater: Hashable,
    most: Iterable[Hashable],
    least: Iterable[Hashable],
    shown: Sequence[Hashable],
) -> list[Vote]:
    """The votes of one lay most/least answer: the analysis's derivation
    (measures.stats.pairwise.preferences_to_pairs), on texts."""
    # Imported where used: web workers load this module at start-up, never numpy/scipy.
    from measures.stats.pairwise import preferences_to_pairs

    most_set, least_set = set(most), set(least)
    most_set, least_set = most_set - least_set, least_set - most_set  # both ticked: neither
    order = list(dict.fromkeys(shown))
    order += [t for t in sorted(most_set | least_set, key=repr) if t not in order]
    pairs = preferences_to_pairs(
        [t for t in order if t in most_set], [t for t in order if t in least_set], order
    )
    return [Vote(LAY, source, rater, pair.left, pair.right) for pair in pairs]


def aggregate_votes(votes: Iterable[Vote], summary: PairSummary | None = None) -> PairSummary:
    """Majority pairs from votes, per kind, source and unordered pair of texts."""
    summary = summary or PairSummary()
    tally: dict[tuple[str, Hashable, frozenset], dict[Hashable, set]] = defaultdict(lambda: defaultdict(set))
    raters: dict[tuple[str, Hashable, frozenset], set] = defaultdict(set)
    order: dict[tuple[str, Hashable, frozenset], tuple[Hashable, Hashable]] = {}
    for vote in votes:
        if vote.winner == vote.loser:
            continue
        key = (vote.kind, vote.source, frozenset((vote.winner, vote.loser)))
        order.setdefault(key, (vote.winner, vote.loser))
        raters[key].add(vote.rater)
        if not vote.tie:
            tally[key][vote.winner].add(vote.rater)
    for key, (first, second) in order.items():
        kind, source, _ = key
        for_first, for_second = len(tally[key][first]), len(tally[key][second])
        if for_first == for_second:
            summary.ties[kind] += 1
            continue
        chosen, rejected = (first, second) if for_first > for_second else (second, first)
        summary.pairs.append(
            Pair(
                kind,
                source,
                chosen,
                rejected,
                rater_count=len(raters[key]),
                votes_for=max(for_first, for_second),
                votes_against=min(for_first, for_second),
            )
        )
    return summary


def rating_pairs(
    ratings: Iterable[Rating], *, threshold: float, summary: PairSummary | None = None
) -> PairSummary:
    """Pairs of texts of one source whose mean radiologist scores differ by at least `threshold`
    (closer pairs are ties); rater_count = the radiologists who rated either text."""
    if threshold <= 0:
        raise ValueError("the rating threshold must be positive")
    summary = summary or PairSummary()
    scores: dict[Hashable, dict[Hashable, list[float]]] = defaultdict(lambda: defaultdict(list))
    raters: dict[tuple[Hashable, Hashable], set] = defaultdict(set)
    for rating in ratings:
        scores[rating.source][rating.text].append(rating.score)
        raters[rating.source, rating.text].add(rating.rater)
    for source, texts in scores.items():
        means: Mapping[Hashable, float] = {text: sum(v) / len(v) for text, v in texts.items()}
        keys = list(means)
        for i, a in enumerate(keys):
            for b in keys[i + 1 :]:
                difference = means[a] - means[b]
                if abs(difference) < threshold:
                    summary.ties[RATING] += 1
                    continue
                chosen, rejected = (a, b) if difference > 0 else (b, a)
                summary.pairs.append(
                    Pair(
                        RATING,
                        source,
                        chosen,
                        rejected,
                        rater_count=len(raters[source, a] | raters[source, b]),
                        margin=round(abs(difference), 6),
                    )
                )
    return summary
