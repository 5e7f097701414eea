"""Clinical Association Displacement (CAD) and Weighted Association Erasure (WAE), seed 004.

For a binary group attribute of the sources (e.g. sex: groups a and b), each word w
of the vocabulary V (both corpora, stop words removed) gets, in the reference corpus
and in the predictions separately:

    p_g(w) = (c_g(w) + alpha) / (N_g + alpha |V|)         Dirichlet-smoothed, alpha = 0.1
    s(w)   = log p_a(w) / p_b(w)                          > 0: associated with group a
    Var[s] = 1 / (c_a(w) + alpha) + 1 / (c_b(w) + alpha)  delta method, multinomial
    z(w)   = s(w) / sqrt(Var[s])

and the displacement z_disp = (s_pred - s_ref) / sqrt(Var_pred + Var_ref). As seed 004
defines it (section 2, "Clinical Categories of Shift"), a word is displaced when
|z_disp| > z_crit = Phi^-1(1 - p*/2), p* = 0.05, and stable otherwise (rule "z_crit",
the default). Rule "bh" instead calls a word displaced when its two-sided p-value,
Benjamini-Hochberg-adjusted over the vocabulary (statsmodels fdr_bh), is below p*;
both p-values are kept in the table and the rule used is reported with the result.
Displaced words are classified (z_neutral = 1, z_strong = 2):

- erasure: |z_ref| > z_strong and |z_pred| < z_neutral
- new bias: |z_ref| < z_neutral and |z_pred| >= z_neutral
- bias flip: both non-neutral (|z| >= z_neutral) with opposite signs
- preservation: both non-neutral with the same sign
- other: displaced but none of these (e.g. an association weakened from 1 < |z| <= 2)

WAE = sum_w omega(w) z_disp(w)^2 / sum_w omega(w), with omega the word's count in the
predictions (prediction-based) or in the reference (reference-based); WAE_g restricts
the sums to words associated with group g in the reference (sign of s_ref), and
delta WAE = WAE_a - WAE_b.

Note what the variance implies: a word the predictions never produce has Var_pred =
2 / alpha = 20, so dropping a word outright is rarely significant; CAD flags erasure
when the word is still produced but has lost its group association.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy.stats import norm
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
from statsmodels.stats.multitest import multipletests

from measures.metrics.registry import (
    MetricContext,
    MetricFamily,
    MetricRecord,
    MetricUnavailable,
    MetricValue,
    register,
)

__all__ = [
    "CATEGORIES",
    "CadResult",
    "association",
    "clinical_association_displacement",
    "erasure_tokens",
]

DEFAULT_ALPHA = 0.1
DEFAULT_P_STAR = 0.05
Z_NEUTRAL = 1.0
Z_STRONG = 2.0
CATEGORIES = ("erasure", "new_bias", "bias_flip", "preservation", "other", "stable")
DISPLACEMENT_RULES = ("z_crit", "bh")
DisplacementRule = Literal["z_crit", "bh"]
DEFAULT_RULE: DisplacementRule = "z_crit"

_WORD = re.compile(r"[a-z]+(?:[-'][a-z]+)*")


def erasure_tokens(text: str, stop_words: Collection[str] = ENGLISH_STOP_WORDS) -> list[str]:
    """Lower-cased words of ``text`` without stop words (numbers are not words)."""
    return [word for word in _WORD.findall(text.lower()) if word not in stop_words]


def association(
    counts_a: np.ndarray, counts_b: np.ndarray, alpha: float = DEFAULT_ALPHA
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(s, Var[s], z) for every word, from its counts in group a and group b."""
    smoothed_a = np.asarray(counts_a, dtype=float) + alpha
    smoothed_b = np.asarray(counts_b, dtype=float) + alpha
    log_ratio = np.log(smoothed_a / smoothed_a.sum()) - np.log(smoothed_b / smoothed_b.sum())
    variance = 1 / smoothed_a + 1 / smoothed_b
    return log_ratio, variance, log_ratio / np.sqrt(variance)


@dataclass(frozen=True)
class CadResult:
    """``terms`` has one row per vocabulary word (index) with its counts, s/var/z in
    both corpora, z_disp, p-values, ``displaced`` and ``category``."""

    terms: pd.DataFrame
    groups: tuple[Hashable, Hashable]
    z_critical: float
    rule: DisplacementRule = DEFAULT_RULE

    def category_counts(self) -> dict[str, int]:
        counts = self.terms["category"].value_counts()
        return {category: int(counts.get(category, 0)) for category in CATEGORIES}

    def words(self, category: str) -> list[str]:
        return list(self.terms.index[self.terms["category"] == category])

    def wae(self, weights: Literal["pred", "ref"] = "pred", group: Hashable | None = None) -> float | None:
        """Weighted Association Erasure; restricted to words the reference associates
        with ``group`` when given. None when no word carries weight."""
        terms = self.terms
        if group is not None:
            if group not in self.groups:
                raise ValueError(f"group {group!r} is not one of {self.groups}")
            sign = 1 if group == self.groups[0] else -1
            terms = terms[np.sign(terms["s_ref"]) == sign]
        omega = terms["count_pred"] if weights == "pred" else terms["count_ref"]
        if omega.sum() == 0:
            return None
        return float((omega * terms["z_disp"] ** 2).sum() / omega.sum())

    def delta_wae(self, weights: Literal["pred", "ref"] = "pred") -> float | None:
        """WAE of group a's words minus WAE of group b's words."""
        first, second = (self.wae(weights, group) for group in self.groups)
        return None if first is None or second is None else first - second


def _group_counts(
    texts: Sequence[str], labels: Sequence[Hashable], group: Hashable, stop_words: Collection[str]
) -> Counter[str]:
    counts: Counter[str] = Counter()
    for text, label in zip(texts, labels, strict=True):
        if label == group:
            counts.update(erasure_tokens(text, stop_words))
    return counts


def _resolve_groups(
    labels: Sequence[Hashable], groups: tuple[Hashable, Hashable] | None
) -> tuple[Hashable, Hashable]:
    if groups is not None:
        if len(groups) != 2 or groups[0] == groups[1]:
            raise ValueError("groups must be two different labels")
        return groups
    present = sorted({label for label in labels if label is not None}, key=str)
    if len(present) != 2:
        raise ValueError(f"CAD needs exactly two groups, found {present}")
    return present[0], present[1]


def clinical_association_displacement(
    reference_texts: Sequence[str],
    reference_groups: Sequence[Hashable],
    prediction_texts: Sequence[str],
    prediction_groups: Sequence[Hashable],
    *,
    groups: tuple[Hashable, Hashable] | None = None,
    alpha: float = DEFAULT_ALPHA,
    p_star: float = DEFAULT_P_STAR,
    z_neutral: float = Z_NEUTRAL,
    z_strong: float = Z_STRONG,
    stop_words: Collection[str] = ENGLISH_STOP_WORDS,
    rule: DisplacementRule = DEFAULT_RULE,
) -> CadResult:
    """CAD of the predictions against the reference corpus.

    ``groups`` = (a, b) orders the log ratio (positive = associated with a); by default
    the two labels present, sorted. Texts whose label is neither group are ignored.
    ``rule`` decides "displaced": "z_crit" (seed 004: |z_disp| > z_crit) or "bh"
    (Benjamini-Hochberg-adjusted p-value < p*).
    """
    if rule not in DISPLACEMENT_RULES:
        raise ValueError(f"unknown displacement rule {rule!r}; use one of {DISPLACEMENT_RULES}")
    if len(reference_texts) != len(reference_groups) or len(prediction_texts) != len(prediction_groups):
        raise ValueError("texts and group labels must align")
    group_a, group_b = _resolve_groups([*reference_groups, *prediction_groups], groups)
    counts = {
        (corpus, group): _group_counts(texts, labels, group, stop_words)
        for corpus, texts, labels in (
            ("ref", reference_texts, reference_groups),
            ("pred", prediction_texts, prediction_groups),
        )
        for group in (group_a, group_b)
    }
    vocabulary = sorted(set().union(*(counter.keys() for counter in counts.values())))
    if not vocabulary:
        raise ValueError("the corpora have no words outside the stop list")
    table = pd.DataFrame(index=pd.Index(vocabulary, name="word"))
    for (corpus, group), counter in counts.items():
        suffix = "a" if group == group_a else "b"
        table[f"count_{corpus}_{suffix}"] = [counter.get(word, 0) for word in vocabulary]
    for corpus in ("ref", "pred"):
        s, var, z = association(
            table[f"count_{corpus}_a"].to_numpy(), table[f"count_{corpus}_b"].to_numpy(), alpha
        )
        table[f"count_{corpus}"] = table[f"count_{corpus}_a"] + table[f"count_{corpus}_b"]
        table[f"s_{corpus}"], table[f"var_{corpus}"], table[f"z_{corpus}"] = s, var, z

    table["z_disp"] = (table["s_pred"] - table["s_ref"]) / np.sqrt(table["var_pred"] + table["var_ref"])
    z_critical = float(norm.ppf(1 - p_star / 2))
    table["p_value"] = 2 * norm.sf(np.abs(table["z_disp"]))
    reject, adjusted, _, _ = multipletests(table["p_value"].to_numpy(), alpha=p_star, method="fdr_bh")
    table["p_adjusted"] = adjusted
    table["displaced"] = reject if rule == "bh" else (table["z_disp"].abs() > z_critical).to_numpy()

    z_ref, z_pred = table["z_ref"].abs(), table["z_pred"].abs()
    both_strong = (z_ref >= z_neutral) & (z_pred >= z_neutral)
    same_sign = np.sign(table["z_ref"]) == np.sign(table["z_pred"])
    displaced = table["displaced"]
    table["category"] = np.select(
        [
            displaced & (z_ref > z_strong) & (z_pred < z_neutral),
            displaced & (z_ref < z_neutral) & (z_pred >= z_neutral),
            displaced & both_strong & ~same_sign,
            displaced & both_strong & same_sign,
            displaced,
        ],
        ["erasure", "new_bias", "bias_flip", "preservation", "other"],
        default="stable",
    )
    return CadResult(terms=table, groups=(group_a, group_b), z_critical=z_critical, rule=rule)


# ---------------------------------------------------------------------------- family


def _corpus(
    records: Sequence[MetricRecord], context: MetricContext, texts: Sequence[Mapping[str, MetricValue]]
) -> dict[str, MetricValue]:
    key = context.option("erasure_group_key", "sex")
    labelled = [record for record in records if record.source_metadata.get(key) is not None]
    if not labelled:
        raise MetricUnavailable(f"CAD/WAE need the group attribute {key!r} in the sources' metadata")
    reference = context.option("erasure_reference")
    if reference is None:
        reference = "reference" if all(record.reference_text for record in labelled) else "source"
    reference_texts = [
        (record.reference_text or "") if reference == "reference" else record.source_text
        for record in labelled
    ]
    labels = [record.source_metadata[key] for record in labelled]
    try:
        result = clinical_association_displacement(
            reference_texts,
            labels,
            [record.candidate_text for record in labelled],
            labels,
            groups=context.option("erasure_groups"),
            alpha=context.option("erasure_alpha", DEFAULT_ALPHA),
            p_star=context.option("erasure_p", DEFAULT_P_STAR),
            rule=context.option("erasure_rule", DEFAULT_RULE),
        )
    except ValueError as exc:
        raise MetricUnavailable(f"CAD/WAE: {exc}") from exc
    counts = result.category_counts()
    return {
        "cad_erasure": counts["erasure"],
        "cad_new_bias": counts["new_bias"],
        "cad_bias_flip": counts["bias_flip"],
        "cad_preservation": counts["preservation"],
        "wae_pred": result.wae("pred"),
        "wae_ref": result.wae("ref"),
        "delta_wae_pred": result.delta_wae("pred"),
        "delta_wae_ref": result.delta_wae("ref"),
    }


def _settings(context: MetricContext) -> dict[str, object]:
    rule = context.option("erasure_rule", DEFAULT_RULE)
    p_star = context.option("erasure_p", DEFAULT_P_STAR)
    described = (
        f"displaced when |z_disp| > z_crit = {norm.ppf(1 - p_star / 2):.4f} (seed 004, p* = {p_star})"
        if rule == "z_crit"
        else f"displaced when the Benjamini-Hochberg-adjusted p-value of z_disp < {p_star}"
    )
    return {"erasure_rule": rule, "erasure_p": p_star, "displacement": described}


FAMILY = register(
    MetricFamily(
        name="erasure",
        corpus_options=(
            "erasure_group_key",
            "erasure_reference",
            "erasure_groups",
            "erasure_alpha",
            "erasure_p",
            "erasure_rule",
        ),
        description="Seed 004 CAD category counts and WAE per system, for the binary source attribute "
        "erasure_group_key (default 'sex'; erasure_groups=(a, b) orders it), predictions against "
        "erasure_reference ('reference' texts when every record has one, else 'source'); a word is "
        "displaced when |z_disp| > z_crit (erasure_rule 'z_crit', seed 004's rule, the default) or when "
        "its Benjamini-Hochberg-adjusted p-value < p* (erasure_rule 'bh').",
        corpus_metrics=(
            "cad_erasure",
            "cad_new_bias",
            "cad_bias_flip",
            "cad_preservation",
            "wae_pred",
            "wae_ref",
            "delta_wae_pred",
            "delta_wae_ref",
        ),
        compute_corpus=_corpus,
        needs_source=True,
        settings=_settings,
        definitions={
            "cad_erasure": "CAD erasure (seed 004): displaced words strongly associated with a group in "
            "the reference (|z_ref| > 2) and neutral in the predictions (|z_pred| < 1).",
            "cad_new_bias": "CAD new bias (seed 004): displaced words neutral in the reference "
            "(|z_ref| < 1) and associated in the predictions (|z_pred| >= 1).",
            "cad_bias_flip": "CAD bias flip (seed 004): displaced words associated with opposite groups "
            "in the reference and the predictions (both |z| >= 1).",
            "cad_preservation": "CAD preservation (seed 004): displaced words associated with the same "
            "group in both (both |z| >= 1).",
            "wae_pred": "WAE (seed 004): mean of z_disp^2 over words, weighted by their count in the "
            "predictions.",
            "wae_ref": "WAE (seed 004): mean of z_disp^2 over words, weighted by their count in the "
            "reference.",
            "delta_wae_pred": "Delta WAE (seed 004, prediction weights): WAE over words the reference "
            "associates with the first group minus WAE over the second group's words.",
            "delta_wae_ref": "Delta WAE (seed 004, reference weights): WAE over words the reference "
            "associates with the first group minus WAE over the second group's words.",
        },
    )
)
