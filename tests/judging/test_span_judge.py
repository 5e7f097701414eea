"""LLM judges and the glossary judge on the error-span item: the prompt and schema from
the item, quotes aligned to offsets, refusals with their reason, the glossary judge's rules on the
authors' release, and the judge–radiologist span agreement on the run page."""

from __future__ import annotations

import json

import krippendorff
import pandas as pd
import pytest

from instruments.answers import item_value_validate
from instruments.schema import AppliesTo
from judging.heuristic import error_spans
from judging.instrument import AnswerError
from judging.instrument_items import answer_schema, item_prompt, judge_items, parse_item_answer
from judging.models import JudgeAnswer
from measures.stats.span_agreement import Span, count_alpha, overlap_f1
from tests.annotation import answers
from tests.evaluation.span_studies import SPAN_ITEM, span_instrument, span_study

CATEGORIES = [o.key for o in SPAN_ITEM.options]
SEVERITIES = [o.key for o in SPAN_ITEM.severities]
TEXT = "There are 2 hyperenhancing liver lesions. The lesions are small."


def test_the_prompt_and_schema_come_from_the_span_item():
    items = [i for i in judge_items(span_instrument(), AppliesTo.SIMPLIFICATION) if i.key == "error_spans"]
    prompt = item_prompt(span_instrument(), items, role="radiologist", sentence="S.", text=TEXT)
    for option in (*SPAN_ITEM.options, *SPAN_ITEM.severities):
        assert f'"{option.key}" - {option.label["en"]}' in prompt
    assert '"quote"' in prompt and SPAN_ITEM.wording["en"] in prompt
    schema = answer_schema(items)["properties"]["error_spans"]["items"]
    assert schema["properties"]["category"]["enum"] == CATEGORIES
    assert schema["properties"]["severity"]["enum"] == SEVERITIES


def _parse(errors):
    return parse_item_answer([SPAN_ITEM], json.dumps({"error_spans": errors}), shown=TEXT)


def test_quotes_and_offsets_become_validated_offsets():
    answer = _parse(
        [
            {"quote": "hyperenhancing", "category": "unexplained_jargon", "severity": "minor"},
            # the second "lesions", told apart by its offsets
            {
                "quote": "lesions",
                "start": 46,
                "end": 53,
                "category": "unexplained_jargon",
                "severity": "minor",
            },
            {"quote": "LIVER  lesions", "category": "wrong_finding_or_location", "severity": "could_harm"},
            {"start": 0, "end": 5, "category": "hallucinated_content", "severity": "could_mislead"},
        ]
    )["error_spans"]
    assert TEXT[46:53] == "lesions" and TEXT.index("lesions") == 33
    assert answer == [
        {"start": 0, "end": 5, "category": "hallucinated_content", "severity": "could_mislead"},
        {"start": 12, "end": 26, "category": "unexplained_jargon", "severity": "minor"},
        {"start": 27, "end": 40, "category": "wrong_finding_or_location", "severity": "could_harm"},
        {"start": 46, "end": 53, "category": "unexplained_jargon", "severity": "minor"},
    ]
    assert _parse([])["error_spans"] is None  # a text without errors: an empty (optional) answer


@pytest.mark.parametrize(
    ("errors", "kind", "named"),
    [
        ([{"quote": "kidney stones", "category": "omitted_finding", "severity": "minor"}], "unaligned",
         "'kidney stones'"),
        ([{"start": 10, "end": 500, "category": "omitted_finding", "severity": "minor"}], "schema", "500"),
        ([{"quote": "liver", "category": "typo", "severity": "minor"}], "out_of_range", "typo"),
        ([{"category": "omitted_finding", "severity": "minor"}], "schema", "error_spans"),
    ],
)  # fmt: skip
def test_an_invalid_span_refuses_the_answer_with_its_reason(errors, kind, named):
    with pytest.raises(AnswerError) as refused:
        _parse(errors)
    assert refused.value.kind == kind and named in str(refused.value)


def test_the_glossary_judge_marks_jargon_and_changed_facts():
    spans = error_spans(
        "A 5 mm nodule in the right lower lobe.",
        "A 5 mm nodule in the left lower lobe.",
        categories=CATEGORIES,
        severities=SEVERITIES,
    )
    text = "A 5 mm nodule in the left lower lobe."
    found = {(text[s["start"] : s["end"]], s["category"], s["severity"]) for s in spans}
    assert ("left", "wrong_finding_or_location", "could_harm") in found  # a flipped side
    assert ("nodule", "unexplained_jargon", "minor") in found
    reassured = error_spans(
        "Small pneumothorax.", "There is no collapsed lung.", categories=CATEGORIES, severities=SEVERITIES
    )
    assert ("no", "wrong_severity_or_false_reassurance", "could_harm") in {
        ("There is no collapsed lung."[s["start"] : s["end"]], s["category"], s["severity"])
        for s in reassured
    }
    # A typology without the jargon category gets no jargon span; severities map by rank.
    two = error_spans(
        "A 5 mm nodule in the right lower lobe.",
        text,
        categories=["wrong_finding_or_location"],
        severities=["low", "high"],
    )
    assert [(s["category"], s["severity"]) for s in two] == [("wrong_finding_or_location", "high")]
    # An explained term is no error.
    assert not [
        s
        for s in error_spans(
            "Cholelithiasis.", "Gallstones (cholelithiasis).", categories=CATEGORIES, severities=SEVERITIES
        )
        if s["category"] == "unexplained_jargon"
    ]


@pytest.mark.release
def test_the_glossary_judge_marks_spans_on_the_release(release_dir):
    release = pd.read_csv(
        release_dir / "Original_setences_with_generated_simplifications.csv", encoding="utf-8-sig"
    )
    systems = ["Plain_BS", "Plain_SC", "CoT_BS", "CoT_SC"]
    jargon = dict.fromkeys(systems, 0)
    marked = texts = 0
    for _, row in release.iterrows():
        for system in systems:
            text = str(row[system]).strip()
            spans = error_spans(row["Original Sentence"], text, categories=CATEGORIES, severities=SEVERITIES)
            # every span is a valid answer to the item on that text
            stored = [{k: s[k] for k in ("start", "end", "category", "severity")} for s in spans]
            if stored:
                assert len(item_value_validate(SPAN_ITEM, stored, text_length=len(text))) == len(stored)
            for s in spans:
                assert text[s["start"] : s["end"]] == s["quote"]
            jargon[system] += sum(s["category"] == "unexplained_jargon" for s in spans)
            marked += bool(spans)
            texts += 1
    assert texts == 4 * len(release) and 0.5 < marked / texts < 1.0
    # Plain_BS keeps the report's words (the paper's most jargon-laden system); CoT explains them.
    assert jargon["Plain_BS"] > 2 * max(jargon["CoT_BS"], jargon["CoT_SC"])
    # A known case: Plain_BS of "Few stable less than 5 mm hypodensities, ..." keeps "hypodensities".
    row = release[
        release["Original Sentence"].str.startswith("Few stable less than 5 mm hypodensities")
    ].iloc[0]
    text = row["Plain_BS"].strip()
    spans = error_spans(row["Original Sentence"], text, categories=CATEGORIES, severities=SEVERITIES)
    start = text.index("hypodensities")
    assert {"start": start, "end": start + len("hypodensities"), "quote": "hypodensities",
            "category": "unexplained_jargon", "severity": "minor"} in spans  # fmt: skip


def _spans(value) -> list[Span]:
    return [Span(s["start"], s["end"], s["category"], s["severity"]) for s in value or []]


@pytest.mark.django_db
def test_the_run_page_shows_judge_radiologist_span_agreement(launch, client):
    from django.contrib.auth import get_user_model

    study, version, people = span_study(slug="spanjudge")
    run = launch(study=study, backend="glossary", instruments=[version.key])
    assert run.items.exclude(status="succeeded").count() == 0
    on_texts = JudgeAnswer.objects.filter(item__run=run, item__shown_text__isnull=False)
    judged = {a.item.shown_text_id: a for a in on_texts}
    assert len(judged) == 12  # 6 sources × 2 systems (the protocol's source items are asked apart)
    judge = {}
    for text_id, answer in judged.items():
        value = answer.item_values["error_spans"]
        shown = answer.item.shown_text.text
        if value:
            assert item_value_validate(SPAN_ITEM, value, text_length=len(shown)) is not None
        judge[text_id] = _spans(value)
    assert sum(map(len, judge.values())) > 0
    raters = {}
    for answer in answers.item_answers().filter(participant__study=study, item_key="error_spans"):
        raters.setdefault(answer.participant.pseudonym, {})[answer.shown_text_id] = _spans(answer.value)
    (record,) = run.agreement["error_spans"]
    rows = {row["rater"]: row for row in record["rows"]}
    assert set(rows) == {"E1", "E2", "E3", "pooled raters"}
    columns = record["columns"]
    for name, spans in raters.items():
        f1 = overlap_f1(judge, spans)
        assert rows[name]["f1"][columns.index("all")] == pytest.approx(f1["all"]["f1"])
        jargon = f1.get("unexplained_jargon", {}).get("f1")
        assert rows[name]["f1"][columns.index("unexplained_jargon")] == (
            pytest.approx(jargon) if jargon is not None else None
        )
        alpha = count_alpha({"judge": judge, name: spans})
        assert rows[name]["alpha"][columns.index("all")] == pytest.approx(alpha)
    texts = sorted(judge)
    mean = [sum(len(raters[n][t]) for n in raters) / len(raters) for t in texts]
    pooled_alpha = krippendorff.alpha(
        reliability_data=[[len(judge[t]) for t in texts], mean], level_of_measurement="interval"
    )
    assert rows["pooled raters"]["alpha"][columns.index("all")] == pytest.approx(pooled_alpha)

    user = get_user_model().objects.create_user("ada", password="pw-ada-123")
    study.researchers.add(user)
    client.force_login(user)
    page = client.get(f"/judging/{study.slug}/runs/{run.pk}/").content.decode()
    assert "Error spans: the judge and the raters" in page
    for name in ("E1", "E2", "E3", "pooled raters"):
        row = rows[name]
        assert f'data-rater="{name}"' in page
        shown = f"{row['f1'][columns.index('all')]:.3f}"
        assert shown in page
