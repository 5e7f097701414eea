"""The analysis of instrument items (evaluation/analysis/instrument_items.py) on studies built with the ORM,
each figure checked against an independent reference: pandas, `krippendorff`, sklearn, scipy."""

from __future__ import annotations

import dataclasses

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from evaluation.analysis.protocol import AnalysisOptions
from evaluation.analysis.study import study_analysis
from evaluation.analysis.study_frames import study_frames
from instruments.answers import item_value_validate, sentence_matching_proportion
from tests.annotation import answers as typed_answers
from tests.annotation.factories import build_study
from tests.evaluation.instrument_studies import answer_add, instrument_add, seed000_study, seed002_study

pytestmark = pytest.mark.django_db

OPTIONS = AnalysisOptions(n_resamples=50, correlation_resamples=20, metric_families=("readability",))


def _answers(study) -> pd.DataFrame:
    """The answers read straight from the ORM, independently of the analysis's selector."""
    rows = (
        typed_answers.item_answers()
        .filter(participant__study=study)
        .values(
            "participant__pseudonym",
            "participant__role",
            "item_key",
            "source__key",
            "shown_text_id",
            "reference_text_id",
            "value",
            "score",
            "shown_text__simplifications__system__key",  # each text here has one system
        )
    )
    return pd.DataFrame.from_records(rows).rename(
        columns={"shown_text__simplifications__system__key": "system"}
    )


def _items(analysis) -> dict:
    (group,) = analysis["instrument_items"]["groups"]
    return {item["key"]: item for item in group["items"]}


def test_a_protocol_study_has_no_instrument_section():
    build_study(slug="plain", n_sources=3)
    from annotation.models import Study

    analysis = study_analysis(study_frames(study=Study.objects.get(slug="plain")), options=OPTIONS)
    assert "instrument_items" not in analysis


@pytest.mark.heavy
def test_seed002_means_per_criterion_rater_and_system_and_alpha():
    study, instrument, raters = seed002_study()
    analysis = study_analysis(study_frames(study=study), options=OPTIONS)
    items = _items(analysis)
    assert list(items) == ["factual_correctness", "completeness", "simplicity", "fluency"]
    answers = _answers(study)
    assert analysis["instrument_items"]["n"] == {
        "answers": len(answers),
        "participants": 3,
        "judge_answers": 0,
    }
    for key, record in items.items():
        rows = answers[answers["item_key"] == key]
        assert record["mean"]["mean"] == pytest.approx(rows["value"].astype(float).mean())
        assert record["mean"]["low"] < record["mean"]["mean"] < record["mean"]["high"]
        assert "crossed-design" in record["mean"]["method"]
        # Seed 002's Table 4: per rater mean ± SD.
        table = rows.groupby("participant__pseudonym")["value"].agg(["mean", "std"])
        for entry in record["by_participant"]:
            assert entry["mean"] == pytest.approx(table.loc[entry["participant"], "mean"])
            assert entry["sd"] == pytest.approx(table.loc[entry["participant"], "std"])
        for system, rows_of in rows.groupby("system"):
            assert record["by_system"][system]["mean"] == pytest.approx(rows_of["value"].mean())
        # Krippendorff's α (ordinal, the whole scale as the domain) on raters × pairs.
        grid = rows.pivot_table(
            index="participant__pseudonym", columns=["shown_text_id", "reference_text_id"], values="value"
        )
        expected = krippendorff.alpha(
            reliability_data=grid.to_numpy(float),
            level_of_measurement="ordinal",
            value_domain=[1, 2, 3, 4, 5],
        )
        assert record["agreement"]["alpha_ordinal"] == pytest.approx(expected)
        assert record["agreement"]["alpha_interval"] == pytest.approx(
            krippendorff.alpha(reliability_data=grid.to_numpy(float), level_of_measurement="interval")
        )
        # Quadratic-weighted κ of the two radiologists, with sklearn.
        e1, e2 = grid.loc["E1"].to_numpy(), grid.loc["E2"].to_numpy()
        pair = next(
            p
            for p in record["agreement"]["kappa_quadratic_pairs"]
            if {p["rater_a"], p["rater_b"]} == {"E1", "E2"}
        )
        assert pair["kappa"] == pytest.approx(
            cohen_kappa_score(e1, e2, weights="quadratic", labels=[1, 2, 3, 4, 5])
        )
        # Agreement among the radiologists alone (the lay reader is a group of one).
        assert set(record["agreement_by_role"]) == {"radiologist"}
        assert record["agreement_by_role"]["radiologist"]["cohen_kappa"] == pytest.approx(
            cohen_kappa_score(e1, e2, labels=[1, 2, 3, 4, 5])
        )
        assert sum(record["distribution"].values()) == len(rows)


@pytest.mark.heavy
def test_seed002_paired_system_test_is_wilcoxon_on_source_means():
    study, instrument, raters = seed002_study(slug="medlay2")
    analysis = study_analysis(study_frames(study=study), options=OPTIONS)
    record = _items(analysis)["fluency"]
    answers = _answers(study)
    rows = answers[answers["item_key"] == "fluency"]
    per_source = rows.groupby(["source__key", "system"])["value"].mean().unstack()
    (comparison,) = record["comparisons"]
    assert (comparison["system_a"], comparison["system_b"]) == ("scgr", "baseline")
    expected = stats.wilcoxon(per_source["scgr"], per_source["baseline"])
    assert comparison["p_value"] == pytest.approx(expected.pvalue)
    assert comparison["mean_diff"] == pytest.approx((per_source["scgr"] - per_source["baseline"]).mean())
    (difference,) = record["differences"]
    assert difference["difference"] == pytest.approx(
        rows[rows["system"] == "scgr"]["value"].mean() - rows[rows["system"] == "baseline"]["value"].mean()
    )


def test_seed000_matched_proportions_kappa_and_correlation_with_bleu():
    study, instrument, annotators = seed000_study()
    options = dataclasses.replace(OPTIONS, metric_families=("reference",), correlation_metrics=None)
    analysis = study_analysis(study_frames(study=study), options=options)
    record = _items(analysis)["sentence_match"]
    answers = _answers(study)
    item = instrument.item("sentence_match")
    answers["proportion"] = [
        sentence_matching_proportion(item_value_validate(item, v), item.proportion_of)
        for v in answers["value"]
    ]
    assert record["mean"]["mean"] == pytest.approx(answers["proportion"].dropna().mean())
    assert 0.0 <= record["mean"]["low"] <= record["mean"]["high"] <= 1.0
    # Cohen's κ between annotators on the sentence-level match decisions, as seed 000 reports it.
    decisions: dict[str, dict[tuple, int]] = {}
    for row in answers.itertuples():
        matched = set().union(*map(set, row.value["matches"]))
        for j in range(row.value["generated_count"]):
            decisions.setdefault(row.participant__pseudonym, {})[(row.shown_text_id, j)] = int(j in matched)
    keys = sorted(decisions["A1"])
    kappas = {
        (a, b): cohen_kappa_score([decisions[a][k] for k in keys], [decisions[b][k] for k in keys])
        for a, b in (("A1", "A2"), ("A1", "A3"), ("A2", "A3"))
    }
    got = {
        (p["rater_a"], p["rater_b"]): p["kappa"] for p in record["agreement"]["sentence_cohen_kappa_pairs"]
    }
    assert got == pytest.approx(kappas)
    assert record["agreement"]["sentence_cohen_kappa"] == pytest.approx(np.mean(list(kappas.values())))
    # The report score (mean over annotators) against per-report BLEU and ROUGE-L, with scipy.
    per_report = (
        answers.groupby(["source__key", "shown_text_id", "system"])["proportion"].mean().reset_index()
    )
    metrics = pd.DataFrame(analysis["metrics"]["per_simplification"])
    joined = per_report.merge(
        metrics, left_on=["source__key", "shown_text_id", "system"], right_on=["source", "text_id", "system"]
    )
    correlations = analysis["instrument_items"]["correlations"]
    for metric in ("bleu", "rouge_l"):
        pearson = next(
            c for c in correlations if (c["level"], c["metric"], c["method"]) == ("item", metric, "pearson")
        )
        spearman = next(
            c for c in correlations if (c["level"], c["metric"], c["method"]) == ("item", metric, "spearman")
        )
        assert pearson["n"] == len(joined)
        assert pearson["r"] == pytest.approx(stats.pearsonr(joined[metric], joined["proportion"]).statistic)
        assert spearman["r"] == pytest.approx(stats.spearmanr(joined[metric], joined["proportion"]).statistic)
    # Corpus BLEU per system against the systems' mean scores (three systems).
    corpus = next(
        c
        for c in correlations
        if (c["level"], c["metric"], c["method"]) == ("system", "corpus_bleu", "pearson")
    )
    system_means = joined.groupby("system")["proportion"].mean()
    corpus_bleu = {s: analysis["metrics"]["per_system"][s]["corpus_bleu"] for s in system_means.index}
    assert corpus["r"] == pytest.approx(
        stats.pearsonr([corpus_bleu[s] for s in system_means.index], system_means.to_numpy()).statistic
    )


def test_seed000_report_scores_per_target_and_corpus_rouge():
    """Each report's score (its annotators' mean matched proportion) is in the analysis, kept in the
    snapshot's details; the systems' means correlate with corpus ROUGE (the mean F-measure over a
    system's reports, as rouge-score reports a corpus) and corpus BLEU (sacrebleu)."""
    import json

    import sacrebleu
    from rouge_score import rouge_scorer

    from annotation.models import SimplificationText
    from evaluation.analysis.document import join_details, split_details

    study, instrument, _ = seed000_study(slug="reports", n_sources=10)
    options = dataclasses.replace(OPTIONS, metric_families=("reference",), correlation_metrics=None)
    analysis = json.loads(json.dumps(study_analysis(study_frames(study=study), options=options)))
    record = _items(analysis)["sentence_match"]
    answers = _answers(study)
    item = instrument.item("sentence_match")
    answers["proportion"] = [
        len(set().union(*map(set, v["matches"]))) / v["generated_count"] for v in answers["value"]
    ]
    assert answers["proportion"].tolist() == pytest.approx(
        [
            sentence_matching_proportion(item_value_validate(item, v), item.proportion_of)
            for v in answers["value"]
        ]
    )
    per_report = answers.groupby(["shown_text_id", "reference_text_id", "system", "source__key"])[
        "proportion"
    ]
    expected = {
        (int(text), int(reference)): (source, [system], len(rows), rows.mean())
        for (text, reference, system, source), rows in per_report
    }
    got = {
        (t["text_id"], t["reference_id"]): (t["source"], t["systems"], t["n"], t["mean"])
        for t in record["by_target"]
    }
    assert got.keys() == expected.keys()
    for key, (source, systems, n, mean) in expected.items():
        assert got[key][:3] == (source, systems, n) and got[key][3] == pytest.approx(mean)
    # Kept with the details (it grows with the reports), and put back where it was.
    summary, details = split_details(analysis)
    assert all("by_target" not in i for g in summary["instrument_items"]["groups"] for i in g["items"])
    assert join_details(summary, details) == analysis

    texts = dict(SimplificationText.objects.filter(source__study=study).values_list("pk", "text"))
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    by_system: dict[str, list] = {}
    for (text, reference), (_, (system,), _, mean) in expected.items():
        by_system.setdefault(system, []).append((texts[text], texts[reference], mean))
    systems = sorted(by_system)
    human = [np.mean([m for *_, m in by_system[s]]) for s in systems]
    corpus_rouge = [
        np.mean([scorer.score(r, c)["rougeL"].fmeasure for c, r, _ in by_system[s]]) for s in systems
    ]
    corpus_bleu = [
        sacrebleu.corpus_bleu([c for c, _, _ in by_system[s]], [[r for _, r, _ in by_system[s]]]).score
        for s in systems
    ]
    rows = {
        (c["metric"], c["method"]): c
        for c in analysis["instrument_items"]["correlations"]
        if c["level"] == "system"
    }
    for metric, values in (("rouge_l", corpus_rouge), ("corpus_bleu", corpus_bleu)):
        assert rows[(metric, "pearson")]["n"] == len(systems) == 3
        assert rows[(metric, "pearson")]["r"] == pytest.approx(stats.pearsonr(values, human).statistic)
        assert rows[(metric, "spearman")]["r"] == pytest.approx(stats.spearmanr(values, human).statistic)
        assert rows[(metric, "kendall")]["r"] == pytest.approx(stats.kendalltau(values, human).statistic)


def test_versions_pool_only_when_their_structure_is_equal():
    from instruments.validation import instrument_from_data, instrument_to_data

    study, instrument, raters = seed002_study(slug="versions", n_sources=6, systems=("scgr",))
    data = instrument_to_data(instrument)
    data["version"] = 2
    data["items"][0]["wording"] = {"en": "The lay caption gets the facts of the expert caption right."}
    reworded = instrument_from_data(data)
    data3 = instrument_to_data(reworded)
    data3["version"] = 3
    data3["items"] = data3["items"][:1]  # a structural change: items removed
    shortened = instrument_from_data(data3)
    rows = {
        2: instrument_add(study=study, instrument=reworded),
        3: instrument_add(study=study, instrument=shortened),
    }
    shown = typed_answers.item_answers().filter(participant__study=study).first()
    extra = answer_add(
        participant=raters[0],
        row=rows[2],
        instrument=reworded,
        item_key="factual_correctness",
        raw=1,
        shown=shown.shown_text,
        reference=shown.reference_text,
    )
    answer_add(
        participant=raters[1],
        row=rows[3],
        instrument=shortened,
        item_key="factual_correctness",
        raw=2,
        shown=shown.shown_text,
        reference=shown.reference_text,
    )
    analysis = study_analysis(study_frames(study=study), options=OPTIONS)
    groups = analysis["instrument_items"]["groups"]
    assert [g["label"] for g in groups] == ["medlaybench_002 v1–2", "medlaybench_002 v3"]
    assert groups[0]["versions"] == [1, 2] and "pooled" in groups[0]["note"]
    assert "kept apart" in groups[1]["note"]
    pooled = typed_answers.item_answers().filter(
        instrument__version__in=[1, 2], item_key="factual_correctness"
    )
    assert groups[0]["items"][0]["n_answers"] == pooled.count() and extra in pooled
    assert groups[1]["items"][0]["n_answers"] == 1
    assert groups[1]["items"][0]["mean"]["mean"] == 2.0
