"""The analysis of a study's instrument items (docs/analysis/instrument-items.md): every
item a team's instrument or a non-protocol preset asks, from one frame of its answers. Pure
computation: no Django. `evaluation/analysis/instrument_frames.py::instrument_answers_frame` builds the frame
from the study's ItemAnswer rows (one query); a notebook can build it from an export's long format.

Per item and system: the mean with the crossed-design interval (participants × sources, the
protocol's measures/stats/crossed.py), each pair of systems' difference with its interval and the
paired Wilcoxon test of the protocol's comparisons; per participant (seed 002's Table 4: E1, E2, L)
the mean and SD; per target (seed 000's report score) the mean over its raters; agreement chosen
by the item's kind; metric–human correlations per item. Counts
and matched proportions are numbers; choices are categories; free text is listed, never averaged.

Versions of one instrument pool only when their structure fingerprints are equal (only texts
changed, instruments.versioning); otherwise each structure is its own group, labelled so.

The answer frame's columns (`ANSWER_COLUMNS`), one row per answer:
  participant   the participant's label (pseudonym or P<pk>)
  role          the participant's rater group (radiologist, layperson, a judge's "judge:<run>")
  language      the language the item was shown in
  instrument    the instrument's key; version its version; structure its structure fingerprint
  item          the item's key
  source        the source's key
  text_id       the shown text's id (NaN for an item on the source)
  reference_id  the reference text's id of a pair (NaN otherwise)
  systems       tuple of the systems that produced the shown text (empty for the source)
  value         the stored answer (JSON: a code, a key, a list of keys, {generated_count, matches}, text)
  score         its numeric coding (instruments.answers.item_value_code), NaN where it has none
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from evaluation.analysis.document import ORIGINAL
from instruments.schema import NOT_APPLICABLE, Instrument, Item, ItemKind
from measures.stats.agreement import (
    cohen_kappa_pairwise_grid,
    icc,
    krippendorff_alpha,
    krippendorff_alpha_set_cells,
)
from measures.stats.comparisons import paired_system_comparisons
from measures.stats.correlation import BOOTSTRAP_MAX_PAIRS, correlate_columns
from measures.stats.crossed import (
    crossed_group_intervals,
    crossed_mean_ci,
    difference_records,
    interval_record,
)

ANSWER_COLUMNS: tuple[str, ...] = (
    "participant",
    "role",
    "language",
    "instrument",
    "version",
    "structure",
    "item",
    "source",
    "text_id",
    "reference_id",
    "systems",
    "value",
    "score",
)
NUMERIC_KINDS = frozenset(
    {ItemKind.ORDINAL, ItemKind.COUNT, ItemKind.SENTENCE_MATCHING, ItemKind.ERROR_SPANS}
)
CATEGORY_KINDS = frozenset({ItemKind.SINGLE_CHOICE, ItemKind.PAIRWISE})
# A judge's answers enter the frame as a rater whose role starts with this (judging/).
JUDGE_ROLE_PREFIX = "judge:"


def empty_answers() -> pd.DataFrame:
    return pd.DataFrame({column: pd.Series(dtype=object) for column in ANSWER_COLUMNS})


@dataclass(frozen=True)
class ItemGroup:
    """The answers that pool: one instrument key and one structure fingerprint, over its versions."""

    id: str
    instrument: Instrument  # the newest version in the group (its wording labels the items)
    versions: tuple[int, ...]
    label: str
    pooled_note: str


def _float(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def item_groups(answers: pd.DataFrame, instruments: Mapping[tuple[str, int], Instrument]) -> list[ItemGroup]:
    """The pooling groups of the study's instruments: versions of a key whose structure fingerprints
    are equal pool; a key with several structures gets one group each, labelled as kept apart.
    `instruments` maps (key, version) to its instrument; the frame says each version's structure."""
    structures: dict[tuple[str, int], str] = {}
    if len(answers):
        for key, version, structure in (
            answers[["instrument", "version", "structure"]].drop_duplicates().itertuples(index=False)
        ):
            structures[(str(key), int(version))] = str(structure)
    by_key: dict[str, dict[str, list[int]]] = {}
    for key, version in sorted(instruments):
        structure = structures.get((key, version), f"v{version}")
        by_key.setdefault(key, {}).setdefault(structure, []).append(version)
    groups: list[ItemGroup] = []
    for key, by_structure in by_key.items():
        apart = len(by_structure) > 1
        for structure, versions in sorted(by_structure.items(), key=lambda kv: min(kv[1])):
            shown = versions[0] if len(versions) == 1 else f"{versions[0]}–{versions[-1]}"
            label = f"{key} v{shown}"
            note = ""
            if len(versions) > 1:
                note = "versions pooled: they differ in wording only (equal structure fingerprints)"
            if apart:
                others = sorted(v for s, vs in by_structure.items() if s != structure for v in vs)
                note = (note + "; " if note else "") + (
                    "kept apart from v" + ", v".join(map(str, others)) + ": its items or scales differ"
                )
            groups.append(
                ItemGroup(
                    id=f"{key}@v{'+'.join(map(str, versions))}",
                    instrument=instruments[(key, versions[-1])],
                    versions=tuple(versions),
                    label=label,
                    pooled_note=note,
                )
            )
    return groups


def _target(frame: pd.DataFrame) -> np.ndarray:
    """One label per answer naming its target: source, shown text and reference."""

    def part(values: pd.Series) -> list[str]:
        return ["" if pd.isna(v) else str(int(v)) for v in values]

    return np.asarray(
        [
            f"{s}|{t}|{r}"
            for s, t, r in zip(
                frame["source"].astype(str), part(frame["text_id"]), part(frame["reference_id"]), strict=True
            )
        ],
        dtype=object,
    )


def _credited(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (answer, system credited): an answer on a text several systems produced counts
    for each of them (as the protocol's tables do); an item on the source counts for the original."""
    systems = [tuple(s) if len(s) else (ORIGINAL,) for s in frame["systems"]]
    return frame.assign(system=systems).explode("system", ignore_index=True)


def _grid(frame: pd.DataFrame, value: str) -> tuple[np.ndarray, list[Hashable], list[Hashable]]:
    """(coders × units array of `value`, NaN where missing; coders; units), one answer per cell."""
    rows = frame[frame[value].notna()]
    table = rows.pivot_table(index="participant", columns="unit", values=value, aggfunc="first")
    return table.to_numpy(np.float64), list(table.index), list(table.columns)


def _kappas(grid: np.ndarray, coders: Sequence[Hashable], *, labels: Sequence[Any] | None) -> dict[str, Any]:
    """Unweighted Cohen's κ per pair of coders (sklearn), and their mean; with exactly two coders
    this is the single κ seed 000 reports."""
    kappa = cohen_kappa_pairwise_grid(grid, list(coders), weights=None, labels=labels)
    return {
        "cohen_kappa": _float(kappa.mean),
        "cohen_kappa_pairs": [{**pair, "kappa": _float(pair["kappa"])} for pair in kappa.pairs],
    }


def _icc(frame: pd.DataFrame, value: str) -> dict[str, Any]:
    try:
        # A constant grid gives 0/0 (NaN, reported as None), not an error.
        with np.errstate(divide="ignore", invalid="ignore"):
            result = icc(frame.dropna(subset=[value]), unit="unit", rater="participant", score=value)
    except ValueError as exc:
        return {"error": str(exc)}
    return {
        "icc2_1": _float(result.icc2_1),
        "icc3_1": _float(result.icc3_1),
        "icc2_k": _float(result.icc2_k),
        "icc3_k": _float(result.icc3_k),
        "n_units": result.n_units,
        "n_raters": result.n_raters,
    }


def sentence_decisions(item: Item, frame: pd.DataFrame) -> pd.DataFrame:
    """Seed 000's matching as binary decisions, one per (answer, sentence): for `proportion_of:
    generated` whether generated sentence j matches some reference sentence, for `reference`
    whether reference sentence i is matched. The units Cohen's κ between annotators compares."""
    rows: list[tuple[Any, Any, float]] = []
    reference_side = item.proportion_of is not None and item.proportion_of.value == "reference"
    for participant, unit, value in zip(frame["participant"], frame["unit"], frame["value"], strict=True):
        if not isinstance(value, Mapping):
            continue
        matches = [set(row) for row in value.get("matches", [])]
        if reference_side:
            decisions = [1.0 if row else 0.0 for row in matches]
        else:
            matched = set().union(*matches) if matches else set()
            decisions = [1.0 if j in matched else 0.0 for j in range(int(value.get("generated_count", 0)))]
        rows.extend((participant, f"{unit}#{j}", d) for j, d in enumerate(decisions))
    return pd.DataFrame(rows, columns=["participant", "unit", "decision"])


def item_agreement(item: Item, frame: pd.DataFrame) -> dict[str, Any]:
    """Agreement among the coders of `frame` (columns participant, unit, value, score) on `item`,
    the measures chosen by its kind:
      ordinal            Krippendorff's α ordinal (the scale's codes as its domain) and interval,
                         quadratic-weighted Cohen's κ per pair, unweighted κ, ICC
      count              α interval and ratio, ICC
      sentence matching  α interval and ICC on the matched proportions; Cohen's κ and α nominal on
                         the sentence-level match decisions (seed 000 section 4.4)
      single choice      α nominal, Cohen's κ
      multiple choice    α with the MASI distance (the protocol's preference sets)
      free text          none"""
    coders = int(frame["participant"].nunique()) if len(frame) else 0
    result: dict[str, Any] = {
        "n_coders": coders,
        "n_units": int(frame["unit"].nunique()) if len(frame) else 0,
    }
    if coders < 2:
        result["note"] = "Agreement needs two or more raters."
        return result
    kind = item.kind
    if kind in NUMERIC_KINDS:
        grid, grid_coders, _ = _grid(frame, "score")
        if kind is ItemKind.ORDINAL:
            assert item.scale is not None
            codes = list(item.scale.codes)
            result["alpha_ordinal"] = _float(krippendorff_alpha(grid, "ordinal", value_domain=codes))
            result["alpha_interval"] = _float(krippendorff_alpha(grid, "interval"))
            weighted = cohen_kappa_pairwise_grid(grid, grid_coders, weights="quadratic", labels=codes)
            result["kappa_quadratic_mean"] = _float(weighted.mean)
            result["kappa_quadratic_pairs"] = [{**p, "kappa": _float(p["kappa"])} for p in weighted.pairs]
            result.update(_kappas(grid, grid_coders, labels=codes))
        else:
            result["alpha_interval"] = _float(krippendorff_alpha(grid, "interval"))
            if kind is not ItemKind.SENTENCE_MATCHING:
                result["alpha_ratio"] = _float(krippendorff_alpha(grid, "ratio"))
        result["icc"] = _icc(frame, "score")
        if kind is ItemKind.SENTENCE_MATCHING:
            decisions = sentence_decisions(item, frame)
            if len(decisions):
                d_grid, d_coders, _ = _grid(decisions, "decision")
                result["sentence_alpha_nominal"] = _float(krippendorff_alpha(d_grid, "nominal"))
                sentence = _kappas(d_grid, d_coders, labels=[0.0, 1.0])
                result["sentence_cohen_kappa"] = sentence["cohen_kappa"]
                result["sentence_cohen_kappa_pairs"] = sentence["cohen_kappa_pairs"]
                result["n_sentences"] = int(decisions["unit"].nunique())
    elif kind in CATEGORY_KINDS:
        chosen = frame[frame["value"].map(lambda v: isinstance(v, str) and v != "")]
        categories, _ = pd.factorize(chosen["value"], sort=True)
        coded = chosen.assign(category=categories.astype(np.float64))
        grid, grid_coders, _ = _grid(coded, "category")
        result["alpha_nominal"] = _float(krippendorff_alpha(grid, "nominal"))
        result.update(_kappas(grid, grid_coders, labels=None))
    elif kind is ItemKind.MULTIPLE_CHOICE:
        sets = [
            frozenset(v) if isinstance(v, (list, tuple, set, frozenset)) else None for v in frame["value"]
        ]
        result["alpha_masi"] = _float(krippendorff_alpha_set_cells(frame["unit"].tolist(), sets))
    else:
        result["note"] = "Free text has no agreement measure."
    return result


def _by_participant(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Seed 002's Table 4 columns: each rater's mean ± SD (sample SD) over the targets rated."""
    records = []
    for (participant, role), rows in frame.groupby(["participant", "role"], sort=True):
        values = rows["score"].to_numpy(np.float64)
        values = values[~np.isnan(values)]
        records.append(
            {
                "participant": participant,
                "role": role,
                "n": int(values.size),
                "mean": _float(values.mean()) if values.size else None,
                "sd": _float(values.std(ddof=1)) if values.size >= 2 else None,
            }
        )
    return records


def _by_target(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Each target's mean over its human raters, in the order of source, shown text and reference:
    for seed 000's sentence matching the report's score (the mean of its annotators' matched
    proportions, section 4.4). A target whose every answer is "not applicable" has n 0, mean None."""
    if not len(frame):
        return []
    grouped = frame.groupby("unit", sort=False).agg(
        source=("source", "first"),
        text_id=("text_id", "first"),
        reference_id=("reference_id", "first"),
        systems=("systems", "first"),
        n=("score", "count"),
        mean=("score", "mean"),
    )
    grouped = grouped.sort_values(["source", "text_id", "reference_id"], kind="stable", na_position="first")
    return [
        {
            "source": str(source),
            "text_id": None if pd.isna(text_id) else int(text_id),
            "reference_id": None if pd.isna(reference_id) else int(reference_id),
            "systems": list(systems),
            "n": int(n),
            "mean": _float(mean) if n else None,
        }
        for source, text_id, reference_id, systems, n, mean in grouped.itertuples(index=False)
    ]


def _numeric_item(
    item: Item, frame: pd.DataFrame, systems: Sequence[str], *, confidence: float
) -> dict[str, Any]:
    values = frame["score"].to_numpy(np.float64)
    bounds = _bounds(item)
    # A count without a largest value is bounded below only: its means get the count interval.
    rates = item.kind is ItemKind.COUNT and bounds is None
    overall = crossed_mean_ci(
        values,
        frame["participant"].to_numpy(),
        frame["source"].to_numpy(),
        confidence=confidence,
        bounds=bounds,
        rates=rates,
    )
    answered = values[~np.isnan(values)]
    credited = _credited(frame)
    present = [s for s in (ORIGINAL, *systems) if s in set(credited["system"])]
    order = {system: i for i, system in enumerate(present)}
    group_means, group_differences = crossed_group_intervals(
        credited["score"].to_numpy(np.float64),
        credited["participant"].to_numpy(),
        credited["source"].to_numpy(),
        credited["system"].map(order).to_numpy(np.float64),
        confidence=confidence,
        bounds=bounds,
        differences=len(present) >= 2,
        rates=rates,
    )
    empty = interval_record(crossed_mean_ci([], [], [], bounds=bounds, rates=rates))
    by_system = {
        system: interval_record(group_means[float(i)]) if float(i) in group_means else dict(empty)
        for system, i in order.items()
    }
    tests = (
        credited[["source", "system", "score"]].rename(columns={"score": "value"}).dropna(subset=["value"])
    )
    tests = tests.assign(_order=tests["system"].map(order)).sort_values(["_order", "source"], kind="stable")
    record: dict[str, Any] = {
        "mean": interval_record(overall),
        "sd": _float(answered.std(ddof=1)) if answered.size >= 2 else None,
        "by_system": by_system,
        "differences": difference_records(present, group_differences, bounds),
        "comparisons": paired_system_comparisons(tests) if tests["system"].nunique() >= 2 else [],
        "by_participant": _by_participant(frame),
        "by_target": _by_target(frame),
        "by_role": {
            role: {
                "n": int(rows["score"].notna().sum()),
                "participants": int(rows["participant"].nunique()),
                "mean": _float(rows["score"].mean()) if rows["score"].notna().any() else None,
            }
            for role, rows in frame.groupby("role", sort=True)
        },
    }
    if item.kind is ItemKind.ORDINAL:
        assert item.scale is not None
        counts = frame["value"].map(lambda v: str(v)).value_counts()
        record["distribution"] = {str(code): int(counts.get(str(code), 0)) for code in item.scale.codes}
        if item.scale.not_applicable:
            record["distribution"][NOT_APPLICABLE] = int(counts.get(NOT_APPLICABLE, 0))
    return record


def _bounds(item: Item) -> tuple[float, float] | None:
    """The range an item's mean cannot leave: its scale, [0, 1] for a proportion, [0, max] for a
    bounded count."""
    if item.kind is ItemKind.ORDINAL and item.scale is not None:
        return float(min(item.scale.codes)), float(max(item.scale.codes))
    if item.kind is ItemKind.SENTENCE_MATCHING:
        return 0.0, 1.0
    if item.kind is ItemKind.COUNT and item.max_count is not None:
        return 0.0, float(item.max_count)
    return None


def _choice_item(item: Item, frame: pd.DataFrame) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for value in frame["value"]:
        chosen = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
        for key in chosen:
            if isinstance(key, str) and key:
                counts[key] = counts.get(key, 0) + 1
    return {"counts": dict(sorted(counts.items())), "n_answers": int(len(frame))}


def _free_text_item(frame: pd.DataFrame) -> dict[str, Any]:
    texts = [
        {
            "participant": participant,
            "role": role,
            "source": source,
            "text_id": None if pd.isna(text_id) else int(text_id),
            "text": value,
        }
        for participant, role, source, text_id, value in zip(
            frame["participant"],
            frame["role"],
            frame["source"],
            frame["text_id"],
            frame["value"],
            strict=True,
        )
        if isinstance(value, str) and value.strip()
    ]
    return {"texts": texts}


def _item_record(item: Item) -> dict[str, Any]:
    language = next(iter(item.title or item.wording), "")
    title = (item.title or {}).get(language) or item.wording.get(language, item.key)
    return {
        "key": item.key,
        "title": title,
        "wording": item.wording.get(language, ""),
        "kind": item.kind.value,
        "applies_to": item.applies_to.value,
        "roles": list(item.roles),
        "codes": list(item.scale.codes) if item.scale is not None else None,
    }


def item_correlations(
    item_means: Mapping[str, pd.DataFrame],
    per_text: pd.DataFrame | None,
    text_metrics: Sequence[str],
    corpus: Mapping[str, Mapping[str, Any]],
    *,
    n_resamples: int,
    seed: int,
    confidence: float,
    bootstrap_max_pairs: int,
) -> list[dict[str, Any]]:
    """Pearson, Spearman and Kendall (measures/stats/correlation.py) between each numeric item's
    mean per text (over its raters: seed 000 averages its three annotators' matched proportions per
    report) and every per-text metric, and — per system — between the item's system means and the
    metrics' system means and corpus-level scores (corpus BLEU …). `item_means[item]` has columns
    source, text_id, system, value."""
    if per_text is None or not len(per_text) or not item_means:
        return []
    names = [n for n in text_metrics if n in per_text.columns]
    metric_rows = per_text[["source", "text_id", "system", *names]]
    records: list[dict[str, Any]] = []
    for item_id, means in item_means.items():
        joined = means.merge(metric_rows, on=["source", "text_id", "system"], how="inner")
        if not len(joined):
            continue
        per_system = joined.groupby("system", sort=True)[["value", *names]].mean()
        corpus_names = sorted({k for s in per_system.index for k in corpus.get(s, {})})
        for name in corpus_names:
            per_system[name] = [_float(corpus.get(s, {}).get(name)) for s in per_system.index]
        for level, table, metric_names in (
            ("item", joined, names),
            ("system", per_system, [*names, *corpus_names]),
        ):
            columns = {m: table[m].to_numpy(np.float64) for m in metric_names}
            columns = {m: v for m, v in columns.items() if np.isfinite(v).sum() >= 3}
            human = table["value"].to_numpy(np.float64)
            if not columns or np.isfinite(human).sum() < 3:
                continue
            correlated = correlate_columns(
                columns,
                {item_id: human},
                n_resamples=n_resamples,
                seed=seed,
                confidence=confidence,
                bootstrap_max_pairs=bootstrap_max_pairs,
            )
            records += correlation_rows(correlated, level=level, measure_key="item")
    return records


_AS_GIVEN = ("method", "n", "interval", "support")  # a correlation record's fields that are not numbers


def correlation_rows(
    correlated: Mapping[tuple[str, str], Sequence[Mapping[str, Any]]], *, level: str, measure_key: str
) -> list[dict[str, Any]]:
    """`correlate_columns`' records as the analysis document lists them: one row per (metric,
    human measure, method), its figures JSON-ready, the measure under `measure_key`."""
    return [
        {
            "level": level,
            "metric": metric,
            measure_key: measure,
            **{k: (v if k in _AS_GIVEN else _float(v)) for k, v in record.items()},
        }
        for (metric, measure), pair_records in correlated.items()
        for record in pair_records
    ]


def _text_means(frame: pd.DataFrame) -> pd.DataFrame:
    """An item's mean per (source, shown text, system) over its raters."""
    rows = _credited(frame[frame["text_id"].notna()])
    if not len(rows):
        return pd.DataFrame(columns=["source", "text_id", "system", "value"])
    means = rows.groupby(["source", "text_id", "system"], sort=True)["score"].mean().reset_index()
    means["text_id"] = means["text_id"].astype(np.int64)
    return means.rename(columns={"score": "value"})


def _humans(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[~frame["role"].astype(str).str.startswith(JUDGE_ROLE_PREFIX)]


def _judges_vs_humans(item: Item, frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Per judge (run) on this item: agreement of the judge taken as one more rater with the
    humans, and the judge's agreement with the humans' mean per target (for numeric items)."""
    judges = frame[frame["role"].astype(str).str.startswith(JUDGE_ROLE_PREFIX)]
    humans = _humans(frame)
    records = []
    for role, rows in judges.groupby("role", sort=True):
        together = pd.concat([humans, rows], ignore_index=True)
        record: dict[str, Any] = {"judge": role.removeprefix(JUDGE_ROLE_PREFIX)}
        record["with_humans"] = item_agreement(item, together)
        if item.kind in NUMERIC_KINDS and len(humans):
            human_means = humans.groupby("unit")["score"].mean()
            judged = rows.groupby("unit")["score"].mean()
            shared = human_means.index.intersection(judged.index)
            record["n_units"] = int(len(shared))
            if len(shared) >= 2:
                a, b = judged[shared].to_numpy(np.float64), human_means[shared].to_numpy(np.float64)
                record["mean_difference"] = _float((a - b).mean())
                record["pearson_vs_human_mean"] = (
                    _float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else None
                )
        records.append(record)
    return records


def instrument_items_analysis(
    answers: pd.DataFrame,
    instruments: Mapping[tuple[str, int], Instrument],
    *,
    systems: Sequence[str] = (),
    per_text: pd.DataFrame | None = None,
    text_metrics: Sequence[str] = (),
    corpus: Mapping[str, Mapping[str, Any]] | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    correlation_resamples: int = 1000,
    bootstrap_max_pairs: int = BOOTSTRAP_MAX_PAIRS,
    correlations: bool = True,
) -> dict[str, Any]:
    """The "Instrument items" section of the analysis: {"groups": [per pooling group: its label,
    versions, note, items: [per item: what its kind allows]], "correlations": [...],
    "n": {answers, participants}}. Human raters' answers make the means; judges' answers
    (role "judge:<run>") enter only the judge-vs-human agreement."""
    frame = answers.assign(unit=_target(answers)) if len(answers) else answers.assign(unit=[])
    groups = item_groups(answers, instruments)
    result_groups: list[dict[str, Any]] = []
    item_means: dict[str, pd.DataFrame] = {}
    by_instrument = dict(tuple(frame.groupby(["instrument", "version"], sort=False))) if len(frame) else {}
    for group in groups:
        parts = [
            by_instrument[(group.instrument.key, v)]
            for v in group.versions
            if (group.instrument.key, v) in by_instrument
        ]
        rows = pd.concat(parts, ignore_index=True) if parts else frame.iloc[0:0]
        by_item = dict(tuple(rows.groupby("item", sort=False))) if len(rows) else {}
        items = []
        for item in group.instrument.items:
            item_rows = by_item.get(item.key, rows.iloc[0:0])
            humans = _humans(item_rows)
            record = _item_record(item)
            record.update(
                n_answers=int(len(humans)),
                n_participants=int(humans["participant"].nunique()) if len(humans) else 0,
                n_targets=int(humans["unit"].nunique()) if len(humans) else 0,
            )
            if item.kind in NUMERIC_KINDS:
                record.update(
                    _numeric_item(item, humans, systems, confidence=confidence) if len(humans) else {}
                )
                item_id = item.key if len(groups) == 1 else f"{group.id}:{item.key}"
                item_means[item_id] = _text_means(humans)
            elif item.kind is ItemKind.FREE_TEXT:
                record.update(_free_text_item(humans))
            else:
                record.update(_choice_item(item, humans))
            record["agreement"] = item_agreement(item, humans) if len(humans) else {"n_coders": 0}
            if item.kind is not ItemKind.FREE_TEXT:
                by_role = {}
                roles = sorted(humans["role"].unique()) if len(humans) else []
                if len(roles) > 1:
                    for role in roles:
                        role_rows = humans[humans["role"] == role]
                        if role_rows["participant"].nunique() >= 2:
                            by_role[role] = item_agreement(item, role_rows)
                record["agreement_by_role"] = by_role
                record["judges"] = _judges_vs_humans(item, item_rows)
            items.append(record)
        result_groups.append(
            {
                "id": group.id,
                "instrument": group.instrument.key,
                "versions": list(group.versions),
                "label": group.label,
                "note": group.pooled_note,
                "title": next(iter(group.instrument.title.values()), group.instrument.key),
                "citation": {
                    "title": group.instrument.citation.title,
                    "authors": group.instrument.citation.authors,
                    "section": group.instrument.citation.section,
                },
                "items": items,
            }
        )
    humans_all = _humans(frame)
    return {
        "groups": result_groups,
        "n": {
            "answers": int(len(humans_all)),
            "participants": int(humans_all["participant"].nunique()) if len(humans_all) else 0,
            "judge_answers": int(len(frame) - len(humans_all)),
        },
        "correlations": item_correlations(
            item_means,
            per_text,
            text_metrics,
            corpus or {},
            n_resamples=correlation_resamples,
            seed=seed,
            confidence=confidence,
            bootstrap_max_pairs=bootstrap_max_pairs,
        )
        if correlations
        else [],
    }


def judge_items_agreement(
    answers: pd.DataFrame, instruments: Mapping[tuple[str, int], Instrument]
) -> list[dict[str, Any]]:
    """Per pooling group and item that a judge answered: each judge's agreement with the humans
    (the `judges` records of the analysis), for a judge run's own agreement page."""
    if not len(answers):
        return []
    frame = answers.assign(unit=_target(answers))
    records: list[dict[str, Any]] = []
    for group in item_groups(answers, instruments):
        rows = frame[(frame["instrument"] == group.instrument.key) & frame["version"].isin(group.versions)]
        for item in group.instrument.items:
            item_rows = rows[rows["item"] == item.key]
            if (
                item.kind is ItemKind.FREE_TEXT
                or not item_rows["role"].astype(str).str.startswith(JUDGE_ROLE_PREFIX).any()
            ):
                continue
            for record in _judges_vs_humans(item, item_rows):
                records.append({"group": group.label, "item": item.key, "kind": item.kind.value, **record})
    return records
