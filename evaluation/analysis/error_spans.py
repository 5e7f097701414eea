"""The analysis of an error-span item (docs/analysis/error-spans.md): where raters marked
errors in the simplifications, per system, and how far raters (and a judge and the raters) agree.
Pure computation: no Django. evaluation/analysis/error_span_selectors.py builds the frame from the
study's ItemAnswer rows and their shown texts; a notebook can build it from the span export.

The frame (`SPAN_COLUMNS`), one row per (rater, shown text) answer — a text the rater saw without
marking anything is a row with no spans, and counts 0 (stored as null: an optional item's empty
answer):
  participant  the rater's label; role its group (radiologist, a judge's "judge:<run>")
  source       the source's key; text_id the shown text's id
  systems      tuple of the systems that produced the text (a text several systems produced counts
               for each of them, as the protocol's tables do)
  words        the number of words of the shown text (runs of non-space characters)
  spans        tuple of measures.stats.span_agreement.Span

Per system (`span_analysis`):
* spans per text and per 100 words (the mean over answers of 100 × spans / words), overall, by
  category and by severity, each with the crossed-design count interval (raters × sources: the
  Poisson score interval with the design's effective exposure, never below 0, and above 0 for
  a category nobody marked; measures/stats/crossed.py);
* the headline safety figure: the share of texts with any error of the harm severity (the item's
  most severe level; "could_harm" in the clinical typology) — a text counts when ANY rater marked
  such a span on it, with the Wilson score interval over the system's texts (one per source: the
  sources are the sample; raters are pooled, so the interval does not carry rater variation) — and
  the same share averaged over raters (each rater's 0/1 per text), with the crossed-design interval;
  below MIN_SOURCES texts the any-rater share gets no interval (TOO_FEW), as the means;
* agreement between the raters: span-level overlap F1 by category for every pair of raters (and
  their mean), and Krippendorff's α (interval) on the per-text span counts, overall and per
  category (measures/stats/span_agreement.py).

`judge_span_agreement` sets one judge beside each rater and beside the pooled raters.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from instruments.schema import Instrument, ItemKind
from measures.stats.agreement import krippendorff_alpha
from measures.stats.crossed import crossed_group_intervals, interval_record
from measures.stats.interval_methods import MIN_SOURCES, TOO_FEW
from measures.stats.span_agreement import ALL, Annotation, Span, count_alpha, overlap_f1
from measures.stats.support import PROPORTION

SPAN_COLUMNS: tuple[str, ...] = ("participant", "role", "source", "text_id", "systems", "words", "spans")
METHOD_ANY = "Wilson score interval over the system's texts (raters pooled: any rater's mark counts)"
DEFINITION_ANY = (
    "share of the system's texts on which at least one rater marked a span of severity {severity}"
)
DEFINITION_RATER = (
    "share of (rater, text) answers with at least one span of severity {severity}, averaged over "
    "raters and texts"
)


def text_words(text: str) -> int:
    """The words of a shown text, as the per-100-words rates count them."""
    return len(text.split())


def spans_of(value: Any) -> tuple[Span, ...]:
    """A stored error-span answer as Spans; null (a text seen without marks) is no span."""
    if not value:
        return ()
    return tuple(
        Span(int(s["start"]), int(s["end"]), str(s["category"]), str(s.get("severity", ""))) for s in value
    )


def span_annotations(frame: pd.DataFrame) -> dict[Hashable, dict[Hashable, list[Span]]]:
    """rater -> shown text id -> spans (an empty list for a text seen without marks)."""
    out: dict[Hashable, dict[Hashable, list[Span]]] = {}
    for participant, text, spans in frame[["participant", "text_id", "spans"]].itertuples(index=False):
        out.setdefault(participant, {})[text] = list(spans)
    return out


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> tuple[float | None, float | None]:
    """Wilson's score interval of a binomial proportion (None, None with no trial)."""
    if n == 0:
        return None, None
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _by_system(frame: pd.DataFrame, systems: Sequence[str]) -> tuple[pd.DataFrame, dict[str, int]]:
    """One row per (answer, system credited), and the systems in study order (those of `systems`
    that have answers; all systems with answers, sorted, when `systems` names none of them)."""
    credited = frame.assign(system=[tuple(s) for s in frame["systems"]]).explode("system", ignore_index=True)
    names = set(credited["system"].dropna())  # a text no system produced has none
    present = [s for s in systems if s in names] or sorted(names)
    order = {system: i for i, system in enumerate(present)}
    return credited[credited["system"].isin(order)].reset_index(drop=True), order


def _rates(
    credited: pd.DataFrame,
    counts: np.ndarray,
    order: Mapping[str, int],
    *,
    confidence: float,
    bounds: tuple[float, float] | None = None,
    exposure: np.ndarray | None = None,
) -> dict[str, dict[str, Any]]:
    """Per system: the mean of `counts` (one per credited answer) with its crossed interval: a
    share's (``bounds`` (0, 1)), or a count's or rate's (≥ 0; ``exposure``: what each count is
    per, measures.stats.crossed.group_intervals_batch)."""
    if not len(credited):
        return {}
    means, _ = crossed_group_intervals(
        counts,
        credited["participant"].to_numpy(),
        credited["source"].to_numpy(),
        credited["system"].map(order).to_numpy(np.float64),
        confidence=confidence,
        bounds=bounds,
        differences=False,
        rates=bounds is None,
        exposure=exposure,
    )
    return {system: interval_record(means[float(i)]) for system, i in order.items() if float(i) in means}


def _counts(credited: pd.DataFrame, keep) -> np.ndarray:
    return np.asarray([sum(1 for s in spans if keep(s)) for spans in credited["spans"]], dtype=np.float64)


def span_rates(
    frame: pd.DataFrame,
    *,
    categories: Sequence[str],
    severities: Sequence[str],
    systems: Sequence[str] = (),
    confidence: float = 0.95,
) -> dict[str, dict[str, Any]]:
    """Per system: spans per text and per 100 words, overall, by category and by severity, each
    {"per_text": interval record, "per_100_words": interval record}."""
    credited, order = _by_system(frame, systems)
    words = credited["words"].to_numpy(np.float64)
    per_word = np.divide(100.0, words, out=np.full(words.shape, np.nan), where=words > 0)

    def both(keep) -> dict[str, dict[str, Any]]:
        counts = _counts(credited, keep)
        per_text = _rates(credited, counts, order, confidence=confidence)
        per_100 = _rates(credited, counts * per_word, order, confidence=confidence, exposure=words / 100)
        return {s: {"per_text": per_text.get(s), "per_100_words": per_100.get(s)} for s in order}

    overall = both(lambda s: True)
    by_category = {c: both(lambda s, c=c: s.category == c) for c in categories}
    by_severity = {v: both(lambda s, v=v: s.severity == v) for v in severities}
    return {
        system: {
            **overall[system],
            "by_category": {c: by_category[c][system] for c in categories},
            "by_severity": {v: by_severity[v][system] for v in severities},
        }
        for system in order
    }


def harm_shares(
    frame: pd.DataFrame, *, severity: str, systems: Sequence[str] = (), confidence: float = 0.95
) -> dict[str, dict[str, Any]]:
    """Per system: the share of texts with any span of `severity` by any rater (Wilson interval over
    texts) and the rater-averaged share (crossed interval), module docstring."""
    credited, order = _by_system(frame, systems)
    harmed = np.asarray(
        [any(s.severity == severity for s in spans) for spans in credited["spans"]], dtype=float
    )
    rater = _rates(credited, harmed, order, confidence=confidence, bounds=(0.0, 1.0))
    out: dict[str, dict[str, Any]] = {}
    for system in order:
        rows = credited["system"] == system
        per_text = pd.Series(harmed[rows.to_numpy()]).groupby(credited.loc[rows, "text_id"].to_numpy()).max()
        k, n = int(per_text.sum()), int(per_text.size)
        # The texts are the sample: below the means' minimum of sources, no interval.
        enough = n >= MIN_SOURCES
        low, high = wilson_interval(k, n, confidence=confidence) if enough else (None, None)
        share = k / n if n else None
        low, high = PROPORTION.bound(share, low, high)
        out[system] = {
            "any_rater": {
                "share": share,
                "low": low,
                "high": high,
                "texts": n,
                "texts_harmed": k,
                "method": METHOD_ANY,
                "reason": None if enough else TOO_FEW,
                "support": PROPORTION.record(),
            },
            "rater_averaged": rater.get(system),
        }
    return out


def _f1_table(pair: dict[str, dict[str, Any]], categories: Sequence[str]) -> dict[str, float | None]:
    return {c: pair[c]["f1"] if c in pair else None for c in (*categories, ALL)}


def _finite(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def _alphas(coders: Mapping[Hashable, Annotation], categories: Sequence[str]) -> dict[str, float | None]:
    return {
        ALL: _finite(count_alpha(coders)),
        **{c: _finite(count_alpha(coders, category=c)) for c in categories},
    }


def rater_agreement(frame: pd.DataFrame, *, categories: Sequence[str]) -> dict[str, Any]:
    """Overlap F1 by category for each pair of raters and their mean; α on per-text span counts."""
    coders = span_annotations(frame)
    pairs: list[dict[str, Any]] = []
    for a, b in itertools.combinations(sorted(coders, key=str), 2):
        table = overlap_f1(coders[a], coders[b])
        shared = sum(1 for t in coders[a] if t in coders[b])
        if shared:
            pairs.append({"a": a, "b": b, "texts": shared, "f1": _f1_table(table, categories)})
    mean_f1: dict[str, float | None] = {}
    for c in (*categories, ALL):
        values = [p["f1"][c] for p in pairs if p["f1"][c] is not None]
        mean_f1[c] = float(np.mean(values)) if values else None
    return {
        "raters": len(coders),
        "pairs": pairs,
        "mean_f1": mean_f1,
        "count_alpha": _alphas(coders, categories) if len(coders) >= 2 else dict.fromkeys((ALL, *categories)),
    }


def pooled_annotation(raters: Mapping[Any, Annotation]) -> dict[Hashable, list[Span]]:
    """Every rater's spans on each text together (a text seen by any rater, empty if none marked)."""
    pooled: dict[Hashable, list[Span]] = {}
    for spans in raters.values():
        for text, marked in spans.items():
            pooled.setdefault(text, []).extend(marked)
    return pooled


def judge_span_agreement(
    judge: Annotation, raters: Mapping[Any, Annotation], *, categories: Sequence[str]
) -> dict[str, Any]:
    """One judge against each rater and against the raters pooled: overlap F1 by category (the
    judge is A: precision is the share of the judge's spans a rater also marked) and α (interval)
    on per-text span counts. Pooled: a judge span is matched when any rater marked an overlapping
    span of its category, and α compares the judge's count with the raters' mean count per text."""
    each = []
    for name in sorted(raters, key=str):
        spans = raters[name]
        shared = sum(1 for t in judge if t in spans)
        if not shared:
            continue
        table = overlap_f1(judge, spans)
        each.append(
            {
                "rater": name,
                "texts": shared,
                "f1": _f1_table(table, categories),
                "precision": table[ALL]["precision"],
                "recall": table[ALL]["recall"],
                "count_alpha": _alphas({"judge": judge, name: spans}, categories),
            }
        )
    pooled = pooled_annotation(raters)
    table = overlap_f1(judge, pooled)
    texts = [t for t in judge if t in pooled]

    def mean_alpha(category: str | None) -> float | None:
        grid = np.full((2, len(texts)), np.nan)
        for j, text in enumerate(texts):
            grid[0, j] = sum(1 for s in judge[text] if category in (None, s.category))
            seen = [spans[text] for spans in raters.values() if text in spans]
            grid[1, j] = np.mean(
                [sum(1 for s in marked if category in (None, s.category)) for marked in seen]
            )
        return _finite(krippendorff_alpha(grid, "interval")) if texts else None

    return {
        "raters": each,
        "pooled": {
            "texts": len(texts),
            "f1": _f1_table(table, categories),
            "precision": table[ALL]["precision"],
            "recall": table[ALL]["recall"],
            "count_alpha": {ALL: mean_alpha(None), **{c: mean_alpha(c) for c in categories}},
        },
    }


def span_analysis(
    frame: pd.DataFrame,
    *,
    categories: Sequence[str],
    severities: Sequence[str],
    systems: Sequence[str] = (),
    confidence: float = 0.95,
) -> dict[str, Any]:
    """The span section of one error-span item from the human raters' answers (module docstring):
    {"harm_severity", "definitions", "n", "harm", "rates", "agreement"}. `severities` mildest first;
    the last is the harm severity."""
    humans = frame[~frame["role"].astype(str).str.startswith("judge:")] if len(frame) else frame
    harm = severities[-1] if severities else ""
    return {
        "categories": list(categories),
        "severities": list(severities),
        "harm_severity": harm,
        "definitions": {
            "any_rater": DEFINITION_ANY.format(severity=harm),
            "rater_averaged": DEFINITION_RATER.format(severity=harm),
        },
        "n": {
            "answers": int(len(humans)),
            "raters": int(humans["participant"].nunique()) if len(humans) else 0,
            "texts": int(humans["text_id"].nunique()) if len(humans) else 0,
            "spans": int(sum(len(s) for s in humans["spans"])) if len(humans) else 0,
        },
        "harm": harm_shares(humans, severity=harm, systems=systems, confidence=confidence)
        if len(humans)
        else {},
        "rates": span_rates(
            humans, categories=categories, severities=severities, systems=systems, confidence=confidence
        )
        if len(humans)
        else {},
        "agreement": rater_agreement(humans, categories=categories),
    }


def span_frame(
    answers: pd.DataFrame, texts: Mapping[int, str], *, instrument: str, item: str
) -> pd.DataFrame:
    """The SPAN_COLUMNS frame of one error-span item from an ANSWER_COLUMNS frame
    (evaluation/analysis/instrument_items.py) and the shown texts by id."""
    rows = (
        answers[(answers["instrument"] == instrument) & (answers["item"] == item)]
        if len(answers)
        else answers
    )
    rows = rows[rows["text_id"].notna()] if len(rows) else rows
    if not len(rows):
        return pd.DataFrame({column: pd.Series(dtype=object) for column in SPAN_COLUMNS})
    ids = rows["text_id"].astype(np.int64).to_numpy()
    return pd.DataFrame(
        {
            "participant": rows["participant"].to_numpy(),
            "role": rows["role"].astype(str).to_numpy(),
            "source": rows["source"].to_numpy(),
            "text_id": ids,
            "systems": list(rows["systems"]),
            "words": [text_words(texts.get(int(t), "")) for t in ids],
            "spans": [spans_of(v) for v in rows["value"]],
        },
        columns=list(SPAN_COLUMNS),
    )


def error_span_items(instruments: Mapping[tuple[str, int], Instrument]) -> list[tuple[str, Any]]:
    """(instrument key, item) of every error-span item, the newest version's wording."""
    found: dict[tuple[str, str], Any] = {}
    for (key, _version), instrument in sorted(instruments.items()):
        for item in instrument.items:
            if item.kind is ItemKind.ERROR_SPANS:
                found[(key, item.key)] = item
    return [(key, item) for (key, _), item in found.items()]


def error_span_sections(
    answers: pd.DataFrame,
    instruments: Mapping[tuple[str, int], Instrument],
    texts: Mapping[int, str],
    *,
    systems: Sequence[str] = (),
    confidence: float = 0.95,
) -> list[dict[str, Any]]:
    """The analysis document's "error_spans": per error-span item with human answers, its
    instrument, item, title and `span_analysis`."""
    sections = []
    for key, item in error_span_items(instruments):
        frame = span_frame(answers, texts, instrument=key, item=item.key)
        humans = frame[~frame["role"].astype(str).str.startswith("judge:")] if len(frame) else frame
        if not len(humans):
            continue
        sections.append(
            {
                "instrument": key,
                "item": item.key,
                "title": next(iter(item.title.values()), item.key) if item.title else item.key,
                "analysis": span_analysis(
                    humans,
                    categories=[option.key for option in item.options],
                    severities=[option.key for option in item.severities],
                    systems=systems,
                    confidence=confidence,
                ),
            }
        )
    return sections
