"""The pairs flow in headless Chromium, end to end, for the two designs it was built for (seed
002's and seed 000's): raters answer by clicking, the stored ItemAnswer values equal their clicks,
then a researcher logs in, downloads the item export and the analysis from the dashboard, and every
figure the analysis gives — and the dashboard shows — is recomputed here from the exported file with
the reference libraries:

(a) seed 002 (MedLayBench-V, section 4.3): two radiologists and one lay reader rate caption pairs on
    Factual Correctness, Completeness, Simplicity and Fluency (1-5): per-criterion means per system
    and per rater, Krippendorff's α ordinal (`krippendorff`), Cohen's κ and quadratic-weighted κ
    between the radiologists (sklearn);
(b) seed 000 (Layman's RRG, section 4.4): three annotators tick, per reference sentence, the
    generated sentences that match it: each report's matched proportion (the annotators' mean),
    Cohen's κ between each pair of annotators on the sentence decisions (sklearn), and the
    correlations of the report scores with BLEU and ROUGE-L per report and of the systems' means with
    corpus BLEU (sacrebleu) and corpus ROUGE-L (rouge-score), scipy."""

from __future__ import annotations

import io
import itertools
import json
import random
import re

import numpy as np
import pandas as pd
import pytest

from instruments.answers import SentenceMatches, sentence_matching_proportion
from instruments.schema import ProportionOf
from measures.metrics.sentences import split_sentences
from studies import source_services
from surveys.rate_each_pair import selectors as design
from surveys.rate_each_pair.services import pairs_participants_invite, study_instrument_attach
from tests.annotation import answers as typed_answers
from tests.annotation.factories import build_study
from tests.e2e.dashboard import download, researcher_page

CRITERIA = ("factual_correctness", "completeness", "simplicity", "fluency")
PHONE = {"width": 390, "height": 844}
CODES = [1, 2, 3, 4, 5]


def _agree(page, token: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"/s/{token}/")
    expect(page.locator("h2", has_text="Information and consent")).to_be_visible()
    page.click("#agree")
    page.wait_for_selector("#pairs-form[data-ready]", state="attached")


def _wait_saved(page, field: str) -> None:
    from playwright.sync_api import expect

    expect(page.locator(f'.item[data-field="{field}"] .row-status .saved')).to_be_visible()


def _dashboard_exports(page) -> tuple[pd.DataFrame, dict]:
    """The long item export (CSV) and the analysis (JSON), by the dashboard's own links."""
    section = page.locator("#instrument-items + p")
    long_csv = download(page, section.get_by_role("link", name="long CSV"))
    analysis = json.loads(download(page, page.get_by_role("link", name="Analysis · JSON")))
    return pd.read_csv(io.BytesIO(long_csv), keep_default_na=False), analysis


def _items(analysis: dict) -> dict:
    (group,) = analysis["instrument_items"]["groups"]
    return {item["key"]: item for item in group["items"]}


def _row(page, key: str):
    """The dashboard's row of an item in the "Instrument items" table."""
    return page.locator(f'table.data tr:has(td[title="{key}"])')


def _pairs(records: list[dict]) -> dict[frozenset, float | None]:
    return {frozenset((p["rater_a"], p["rater_b"])): p["kappa"] for p in records}


@pytest.mark.django_db(transaction=True)
def test_seed_002_two_radiologists_and_a_lay_reader_rate_caption_pairs(
    page, browser, live_server, artifacts_dir, settings
):
    from krippendorff import alpha as krippendorff_alpha
    from playwright.sync_api import expect
    from sklearn.metrics import cohen_kappa_score

    from evaluation.pages.report import fmt

    settings.RADLAY_ANALYSIS_OPTIONS = {
        "embeddings": False,
        "n_resamples": 50,
        "correlation_resamples": 20,
        "metric_families": ["readability"],
    }
    study = build_study(slug="medlay", n_sources=4, systems=("lay_a", "lay_b"))
    study_instrument_attach(study=study, preset_name="medlaybench_002", actor="test")
    raters = [
        *pairs_participants_invite(study=study, rater_group="radiologist", count=2),
        *pairs_participants_invite(study=study, rater_group="layperson", count=1),
    ]
    n_pairs = 4 * 2
    # Each pair has a quality per criterion that the raters share, and each rater strays from it
    # now and then: agreement that is real but not perfect.
    rng = random.Random(2)
    quality = {}
    clicked: dict[tuple[int, int, str], int] = {}  # (participant, shown text, criterion) -> code
    for n, rater in enumerate(raters):
        _agree(page, rater.token)
        order = design.participant_pairs(participant=rater)
        assert len(order) == n_pairs
        for index, pair in enumerate(order):
            expect(page).to_have_url(re.compile(rf"/p/{rater.token}/pair/{pair.shown_text_id}/$"))
            page.wait_for_selector("#pairs-form[data-ready]", state="attached")
            expect(page.locator("#progress")).to_contain_text(f"{index} of {n_pairs} pairs done")
            for criterion in CRITERIA:
                base = quality.setdefault((pair.shown_text_id, criterion), rng.randint(1, 5))
                code = min(5, max(1, base + rng.choice((-1, 0, 0, 0, 1))))
                field = f"medlaybench_002.{criterion}"
                if n == 0 and index == 0:
                    # Changing one's mind: the last click is what is stored.
                    page.locator(
                        f'.item[data-field="{field}"] label:has(input[value="{code % 5 + 1}"])'
                    ).click()
                    _wait_saved(page, field)
                page.locator(f'.item[data-field="{field}"] label:has(input[value="{code}"])').click()
                _wait_saved(page, field)
                clicked[(rater.pk, pair.shown_text_id, criterion)] = code
            if n == 0 and index == 0:
                _no_serious_violation(page)
                page.set_viewport_size(PHONE)
                page.screenshot(path=str(artifacts_dir / "pairs_medlay_phone.png"), full_page=True)
                assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
                _no_serious_violation(page)
                page.set_viewport_size({"width": 1024, "height": 768})
            page.click("#next-page")
        expect(page.locator("#done")).to_contain_text("you have finished")
    stored = {
        (a.participant_id, a.shown_text_id, a.item_key): (a.value, a.score)
        for a in typed_answers.item_answers().filter(participant__study=study)
    }
    assert stored == {key: (code, float(code)) for key, code in clicked.items()}
    assert all(
        a.reference_text_id is None and a.instrument.key == "medlaybench_002" and a.time_spent_ms >= 0
        for a in typed_answers.item_answers().filter(participant__study=study)
    )

    context, dashboard = researcher_page(browser, live_server, study)
    exported, analysis = _dashboard_exports(dashboard)
    assert len(exported) == len(clicked) == 3 * n_pairs * len(CRITERIA)
    assert set(exported["role"]) == {"radiologist", "layperson"} and set(exported["language"]) == {"en"}
    radiologists = sorted(set(exported.loc[exported["role"] == "radiologist", "participant"]))
    assert len(radiologists) == 2
    items = _items(analysis)
    for criterion in CRITERIA:
        rows = exported[exported["item"] == criterion]
        item = items[criterion]
        assert item["n_answers"] == len(rows) == 3 * n_pairs
        # Means: overall, per system, per rater (mean ± SD, seed 002's Table 4).
        assert item["mean"]["mean"] == pytest.approx(rows["score"].mean())
        by_system = rows.groupby("systems")["score"].mean()
        assert {s: item["by_system"][s]["mean"] for s in by_system.index} == pytest.approx(
            by_system.to_dict()
        )
        by_rater = rows.groupby("participant")["score"].agg(["mean", "std"])
        assert {r["participant"]: (r["mean"], r["sd"]) for r in item["by_participant"]} == {
            p: pytest.approx((m, sd)) for p, (m, sd) in by_rater.iterrows()
        }
        # Krippendorff's α ordinal over the three raters, and over the two radiologists.
        grid = rows.pivot(index="participant", columns="text_id", values="score")
        alpha = krippendorff_alpha(grid.to_numpy(float), level_of_measurement="ordinal", value_domain=CODES)
        alpha_radiologists = krippendorff_alpha(
            grid.loc[radiologists].to_numpy(float), level_of_measurement="ordinal", value_domain=CODES
        )
        assert np.isfinite([alpha, alpha_radiologists]).all()
        assert item["agreement"]["alpha_ordinal"] == pytest.approx(alpha)
        assert item["agreement_by_role"]["radiologist"]["alpha_ordinal"] == pytest.approx(alpha_radiologists)
        # Cohen's κ and quadratic-weighted κ between each pair of raters (sklearn); the radiologists'.
        kappas = {
            frozenset(pair): cohen_kappa_score(grid.loc[pair[0]], grid.loc[pair[1]], labels=CODES)
            for pair in itertools.combinations(grid.index, 2)
        }
        weighted = {
            frozenset(pair): cohen_kappa_score(
                grid.loc[pair[0]], grid.loc[pair[1]], labels=CODES, weights="quadratic"
            )
            for pair in itertools.combinations(grid.index, 2)
        }
        assert np.isfinite(list(kappas.values())).all() and np.isfinite(list(weighted.values())).all()
        assert _pairs(item["agreement"]["cohen_kappa_pairs"]) == pytest.approx(kappas)
        assert _pairs(item["agreement"]["kappa_quadratic_pairs"]) == pytest.approx(weighted)
        by_role = item["agreement_by_role"]["radiologist"]
        assert by_role["cohen_kappa"] == pytest.approx(kappas[frozenset(radiologists)])
        assert by_role["kappa_quadratic_mean"] == pytest.approx(weighted[frozenset(radiologists)])
        # What the dashboard shows, as it rounds.
        row = _row(dashboard, criterion)
        cells = row.locator("td.num")
        assert cells.nth(1).inner_text().startswith(fmt(rows["score"].mean()))
        for k, system in enumerate(s for s in analysis["systems"] if s in by_system.index):
            assert cells.nth(2 + k).inner_text().startswith(fmt(by_system[system]))
        agreement = row.locator("td").last.inner_text()
        assert f"α ordinal {fmt(alpha)}" in agreement
        assert f"κ quadratic {fmt(np.mean(list(weighted.values())))}" in agreement
        assert f"Cohen's κ {fmt(np.mean(list(kappas.values())))}" in agreement
        raters_cell = row.locator("td").nth(-2).inner_text()
        for participant, (mean, sd) in by_rater.iterrows():
            assert f"{participant} {fmt(mean, digits=2)}±{fmt(sd, digits=2)}" in raters_cell
    context.close()


def _no_serious_violation(page) -> None:
    """axe-core's serious and critical violations (tests/e2e/test_accessibility.py), at the width
    the page is shown at; none is allowed."""
    from tests.e2e.test_accessibility import blocking_violations

    assert not blocking_violations(page), blocking_violations(page)


def _tick(page, selector: str, *, by_keyboard: bool) -> None:
    """Tick a grid box by mouse, or by keyboard (focus, then Space) as a keyboard user does."""
    box = page.locator(selector)
    if by_keyboard:
        box.focus()
        page.keyboard.press("Space")
        assert box.is_checked()
    else:
        box.check()


# Seed 000's reports: per source a reference and four generated reports that keep less and less of
# its wording, so that BLEU and ROUGE differ between systems and reports.
REPORTS = {
    "s1": {
        "reference": "The lungs are clear. The heart is normal in size. There is no fluid.",
        "gen_a": "The lungs are clear. The heart is normal in size. There is no fluid around the lungs.",
        "gen_b": "Your lungs are clear. Your heart is a normal size.",
        "gen_c": "The heart looks normal. There is a small spot on the left lung. No fluid is seen.",
        "gen_d": "Nothing urgent was found. Please see your doctor.",
    },
    "s2": {
        "reference": (
            "There is a small nodule in the right lung. It is not urgent. A follow-up scan is advised."
        ),
        "gen_a": "There is a small nodule in the right lung. It is not urgent.",
        "gen_b": "A small spot is in the right lung. It is not urgent. Another scan later is a good idea.",
        "gen_c": "Your right lung has a tiny spot. Get a follow-up scan.",
        "gen_d": "The scan shows a nodule. The nodule is small. It is in the lung. It is not urgent.",
    },
}


@pytest.mark.django_db(transaction=True)
def _matches_ticked(page, field, pair, *, references, generated, truth, rng, by_keyboard) -> list[list[int]]:
    """Tick, per reference sentence, the generated sentences that truly match it (drawn once per
    pair into `truth`), now and then one more or one fewer; "none" where none is left. The rows
    ticked."""
    rows: list[list[int]] = []
    for r in range(len(references)):
        chosen = set(
            truth.setdefault(
                (pair.shown_text_id, r), [g for g in range(generated) if rng.random() < 1 / generated]
            )
        )
        if rng.random() < 0.25:
            chosen ^= {rng.randrange(generated)}
        chosen_rows = sorted(chosen)
        if chosen_rows:
            for g in chosen_rows:
                _tick(page, f'.item[data-field="{field}"] input[value="{r}-{g}"]', by_keyboard=by_keyboard)
        else:
            _tick(
                page,
                f'.item[data-field="{field}"] input[name="{field}.none"][value="{r}"]',
                by_keyboard=by_keyboard,
            )
        rows.append(chosen_rows)
    return rows


def test_seed_000_three_annotators_match_sentences(page, browser, live_server, artifacts_dir, settings):
    import sacrebleu
    from playwright.sync_api import expect
    from rouge_score import rouge_scorer
    from scipy import stats
    from sklearn.metrics import cohen_kappa_score

    from evaluation.pages.report import fmt

    settings.RADLAY_ANALYSIS_OPTIONS = {
        "embeddings": False,
        "n_resamples": 50,
        "correlation_resamples": 20,
        "metric_families": ["reference"],
    }
    generated_systems = ("gen_a", "gen_b", "gen_c", "gen_d")
    study = build_study(slug="layman", n_sources=len(REPORTS), systems=("reference", *generated_systems))
    source_services.system_upsert(study=study, key="reference", is_reference=True)
    texts: dict[int, str] = {}  # shown text id -> its words
    for source, reports in zip(study.sources.order_by("position"), REPORTS.values(), strict=True):
        for system, text in reports.items():
            shown = source_services.simplification_upsert(
                source=source, system=study.systems.get(key=system), text=text
            ).shown_text
            texts[shown.pk] = text
    study_instrument_attach(study=study, preset_name="layman_rrg_000_matching", actor="test")
    annotators = pairs_participants_invite(study=study, rater_group="annotator", role="layperson", count=3)
    field = "layman_rrg_000_matching.sentence_match"
    n_pairs = len(REPORTS) * len(generated_systems)
    # Per (report, reference sentence) the generated sentences that truly match; each annotator
    # misses or adds one now and then.
    rng = random.Random(0)
    truth: dict[tuple[int, int], list[int]] = {}
    ticked: dict[tuple[int, int], list[list[int]]] = {}
    for n, annotator in enumerate(annotators):
        _agree(page, annotator.token)
        order = design.participant_pairs(participant=annotator)
        assert len(order) == n_pairs
        for index, pair in enumerate(order):
            page.wait_for_selector("#pairs-form[data-ready]", state="attached")
            generated = page.locator(".generated-sentences li").count()
            assert generated == len(split_sentences(texts[pair.shown_text_id]))
            references = split_sentences(texts[pair.reference_text_id])
            rows = _matches_ticked(
                page,
                field,
                pair,
                references=references,
                generated=generated,
                truth=truth,
                rng=rng,
                by_keyboard=n == 1,
            )
            _wait_saved(page, field)
            ticked[(annotator.pk, pair.shown_text_id)] = rows
            if n == 0 and index == 0:
                _no_serious_violation(page)
                page.set_viewport_size(PHONE)
                page.screenshot(path=str(artifacts_dir / "pairs_matching_phone.png"), full_page=True)
                assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
                _no_serious_violation(page)
                page.set_viewport_size({"width": 1024, "height": 768})
            page.click("#next-page")
        expect(page.locator("#done")).to_contain_text("you have finished")
    answers = typed_answers.item_answers().filter(participant__study=study)
    assert answers.count() == 3 * n_pairs
    for answer in answers:
        rows = ticked[(answer.participant_id, answer.shown_text_id)]
        generated = len(split_sentences(answer.shown_text.text))
        expected = sentence_matching_proportion(
            SentenceMatches(generated_count=generated, matches=tuple(frozenset(row) for row in rows)),
            ProportionOf.GENERATED,
        )
        assert answer.score == pytest.approx(expected)
        assert answer.value == {"generated_count": generated, "matches": rows}
        source = answer.shown_text.source
        assert answer.reference_text_id == source.simplifications.get(system__key="reference").shown_text_id

    context, dashboard = researcher_page(browser, live_server, study)
    exported, analysis = _dashboard_exports(dashboard)
    assert len(exported) == 3 * n_pairs and set(exported["item"]) == {"sentence_match"}
    item = _items(analysis)["sentence_match"]
    # Each answer's matched proportion from its exported matches: the generated sentences that
    # match some reference sentence, over the generated sentences.
    values = [json.loads(v) for v in exported["value"]]
    exported["proportion"] = [
        len(set().union(*map(set, v["matches"]))) / v["generated_count"] for v in values
    ]
    assert exported["proportion"].tolist() == pytest.approx(exported["score"].astype(float).tolist())
    # The report's score: its annotators' mean (seed 000 section 4.4).
    reports = exported.groupby(["text_id", "reference_text_id", "systems"])["proportion"].mean()
    assert {(t["text_id"], t["reference_id"]): t["mean"] for t in item["by_target"]} == pytest.approx(
        {(int(t), int(r)): m for (t, r, _), m in reports.items()}
    )
    assert all(t["n"] == 3 for t in item["by_target"])
    assert item["mean"]["mean"] == pytest.approx(exported["proportion"].mean())
    by_system = exported.groupby("systems")["proportion"].mean()
    assert {s: item["by_system"][s]["mean"] for s in by_system.index} == pytest.approx(by_system.to_dict())
    # Cohen's κ between each pair of annotators on the sentence-level decisions (sklearn).
    decisions: dict[str, dict[tuple[int, int], int]] = {}
    for participant, text, value in zip(exported["participant"], exported["text_id"], values, strict=True):
        matched = set().union(*map(set, value["matches"]))
        for j in range(value["generated_count"]):
            decisions.setdefault(participant, {})[(int(text), j)] = int(j in matched)
    sentences = sorted(next(iter(decisions.values())))
    kappas = {
        frozenset((a, b)): cohen_kappa_score(
            [decisions[a][k] for k in sentences], [decisions[b][k] for k in sentences]
        )
        for a, b in itertools.combinations(sorted(decisions), 2)
    }
    assert len(kappas) == 3 and np.isfinite(list(kappas.values())).all()
    assert min(kappas.values()) < 1  # the annotators do not agree perfectly
    assert _pairs(item["agreement"]["sentence_cohen_kappa_pairs"]) == pytest.approx(kappas)
    assert item["agreement"]["sentence_cohen_kappa"] == pytest.approx(np.mean(list(kappas.values())))
    # The report scores against BLEU and ROUGE-L per report, and the systems' means against corpus
    # BLEU and corpus ROUGE-L (the mean F-measure over the system's reports).
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    per_report = pd.DataFrame(
        [
            {
                "system": system,
                "human": human,
                "bleu": sacrebleu.sentence_bleu(texts[int(t)], [texts[int(r)]]).score,
                "rouge_l": scorer.score(texts[int(r)], texts[int(t)])["rougeL"].fmeasure,
                "candidate": texts[int(t)],
                "reference": texts[int(r)],
            }
            for (t, r, system), human in reports.items()
        ]
    )
    per_system = per_report.groupby("system").agg(
        human=("human", "mean"),
        rouge_l=("rouge_l", "mean"),
        candidates=("candidate", list),
        refs=("reference", list),
    )
    per_system["corpus_bleu"] = [
        sacrebleu.corpus_bleu(row.candidates, [row.refs]).score for row in per_system.itertuples()
    ]
    correlations = {
        (c["level"], c["metric"], c["method"]): c for c in analysis["instrument_items"]["correlations"]
    }
    methods = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}
    for level, table, metric in (
        ("item", per_report, "bleu"),
        ("item", per_report, "rouge_l"),
        ("system", per_system, "corpus_bleu"),
        ("system", per_system, "rouge_l"),
    ):
        for method, reference in methods.items():
            record = correlations[(level, metric, method)]
            assert record["n"] == len(table)
            assert record["r"] == pytest.approx(reference(table[metric], table["human"]).statistic)
    # What the dashboard shows, as it rounds.
    row = _row(dashboard, "sentence_match")
    assert row.locator("td.num").nth(1).inner_text().startswith(fmt(exported["proportion"].mean()))
    assert (
        f"Cohen's κ (sentences) {fmt(np.mean(list(kappas.values())))}" in row.locator("td").last.inner_text()
    )
    table = dashboard.locator("details:has-text('Item–metric correlations') tbody tr")
    rendered = {
        tuple(table.nth(i).locator("td").nth(k).text_content() for k in range(5))
        for i in range(table.count())
    }
    for metric in ("corpus_bleu", "rouge_l"):
        r = stats.pearsonr(per_system[metric], per_system["human"]).statistic
        assert ("system", "sentence_match", metric, "pearson", fmt(r)) in rendered
    context.close()


@pytest.mark.django_db(transaction=True)
def test_a_spanish_study_runs_the_pairs_flow_in_spanish(page, live_server):
    """The interface in the study's language, the scripts' own messages too (static/radlay/rate_each_pair.js
    reads them from the page); the English-only preset's questions stay in English and the answer
    records that, the participant records Spanish."""
    from playwright.sync_api import expect

    study = build_study(slug="emparejar", n_sources=1, systems=("reference", "gen_a"))
    study.language = "es"
    study.save(update_fields=["language"])
    source_services.system_upsert(study=study, key="reference", is_reference=True)
    source = study.sources.get()
    source_services.simplification_upsert(
        source=source,
        system=study.systems.get(key="reference"),
        text="The lungs are clear. The heart is normal in size. There is no fluid.",
    )
    source_services.simplification_upsert(
        source=source,
        system=study.systems.get(key="gen_a"),
        text="Your lungs look clear. Your heart is fine.",
    )
    study_instrument_attach(study=study, preset_name="layman_rrg_000_matching", actor="test")
    annotator = pairs_participants_invite(study=study, rater_group="annotator", role="layperson", count=1)[0]
    field = "layman_rrg_000_matching.sentence_match"
    page.goto(f"/s/{annotator.token}/")
    expect(page.locator("html")).to_have_attribute("lang", "es")
    expect(page.locator("h2", has_text="Información y consentimiento")).to_be_visible()
    page.click("#agree")
    page.wait_for_selector("#pairs-form[data-ready]", state="attached")
    expect(page.locator("#pair-heading")).to_have_text("Par 1 de 1")
    expect(page.locator(".match-grid thead th").first).to_have_text("Frase de referencia")
    status = page.locator(f'.item[data-field="{field}"] .row-status')
    page.locator(f'.item[data-field="{field}"] input[value="0-0"]').check()
    expect(status).to_have_text("Faltan responder 2 frases de referencia antes de guardar esto")
    page.locator(f'.item[data-field="{field}"] input[value="1-1"]').check()
    expect(status).to_have_text("Falta responder 1 frase de referencia antes de guardar esto")
    page.locator(f'.item[data-field="{field}"] input[name="{field}.none"][value="2"]').check()
    expect(status.locator(".saved")).to_have_text("Guardado")
    expect(page.locator("#progress-label")).to_have_text("1 de 1 par hecho")
    page.click("#next-page")
    expect(page.locator("#done h1")).to_have_text("Gracias, ha terminado")
    annotator.refresh_from_db()
    assert annotator.language == "es"
    answer = typed_answers.item_answers().get(participant=annotator)
    assert answer.language == "en" and answer.value["matches"] == [[0], [1], []]
