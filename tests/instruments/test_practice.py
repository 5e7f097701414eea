"""An instrument's practice section: every item kind with a gold answer, a tolerance and an
explanation; a gold outside its item's scale and every other broken field refused with its path;
answers scored within tolerance (spans with the analysis's own span measures); the pass rule."""

from __future__ import annotations

import copy
import json

import pytest

from instruments.answers import ErrorSpan, item_value_validate
from instruments.presets import preset_load
from instruments.validation import (
    InstrumentError,
    instrument_from_data,
    instrument_from_json,
    instrument_to_data,
    instrument_to_json,
)
from measures.stats.span_agreement import Span, character_f1
from qualification.practice_scoring import (
    PassRule,
    attempt_outcome,
    pass_rule_errors,
    practice_score,
)

EN_ES = {"en": "x", "es": "x"}


def _w(en: str, es: str = "") -> dict[str, str]:
    return {"en": en, "es": es or en}


def document() -> dict:
    """An instrument with one item of each kind a practice item may ask, and a practice item each."""
    options = [{"key": k, "label": _w(k.title())} for k in ("left", "right", "tie")]
    return {
        "key": "team",
        "version": 1,
        "title": _w("Team"),
        "citation": {"title": "T", "authors": "A", "venue": "V", "year": 2026, "section": "S"},
        "languages": ["en", "es"],
        "default_language": "en",
        "translation_status": {"en": "source", "es": "unvalidated translation"},
        "items": [
            {
                "key": "likert",
                "kind": "ordinal",
                "applies_to": "simplification",
                "roles": ["radiologist"],
                "wording": _w("Correct?"),
                "scale": {"points": [{"code": c, "label": _w(str(c))} for c in range(1, 6)]},
            },
            {
                "key": "pick",
                "kind": "single_choice",
                "applies_to": "source",
                "roles": ["radiologist"],
                "wording": _w("Pick"),
                "options": options,
            },
            {
                "key": "many",
                "kind": "multiple_choice",
                "applies_to": "source",
                "roles": ["layperson"],
                "wording": _w("Many"),
                "options": options,
            },
            {
                "key": "howmany",
                "kind": "count",
                "applies_to": "source",
                "roles": ["radiologist"],
                "wording": _w("How many findings?"),
            },
            {
                "key": "why",
                "kind": "free_text",
                "applies_to": "source",
                "roles": ["radiologist"],
                "wording": _w("Why?"),
                "max_length": 200,
            },
            {
                "key": "spans",
                "kind": "error_spans",
                "applies_to": "simplification",
                "roles": ["radiologist"],
                "required": False,
                "wording": _w("Mark errors"),
                "options": [{"key": "wrong", "label": _w("Wrong")}, {"key": "jargon", "label": _w("Jargon")}],
                "severities": [{"key": "minor", "label": _w("Minor")}, {"key": "harm", "label": _w("Harm")}],
            },
            {
                "key": "better",
                "kind": "pairwise",
                "applies_to": "pair",
                "roles": ["radiologist"],
                "wording": _w("Which is better?"),
                "options": options,
            },
        ],
        "practice": [
            {
                "key": "p_likert",
                "item": "likert",
                "source": _w("Left lung mass."),
                "text": _w("A lump in the right lung."),
                "gold": 1,
                "within": 1,
                "explanation": _w("Wrong side."),
            },
            {
                "key": "p_pick",
                "item": "pick",
                "source": _w("S"),
                "gold": "left",
                "also_accept": ["tie"],
                "explanation": _w("E"),
            },
            {
                "key": "p_many",
                "item": "many",
                "source": _w("S"),
                "gold": ["left", "right"],
                "min_overlap": 0.5,
                "explanation": _w("E"),
            },
            {"key": "p_count", "item": "howmany", "source": _w("S"), "gold": 3, "explanation": _w("E")},
            {
                "key": "p_why",
                "item": "why",
                "source": _w("S"),
                "gold": "The side is wrong.",
                "keywords": {"en": ["side", "left"], "es": ["lado"]},
                "explanation": _w("E"),
            },
            {
                "key": "p_spans",
                "item": "spans",
                "source": _w("Left lung mass."),
                "text": {"en": "A lump in the right lung.", "es": "Un bulto en el pulmón derecho."},
                "gold": {
                    "en": [{"start": 14, "end": 19, "category": "wrong", "severity": "harm"}],
                    "es": [{"start": 23, "end": 30, "category": "wrong", "severity": "harm"}],
                },
                "min_overlap": 0.5,
                "explanation": _w("The side."),
            },
            {
                "key": "p_better",
                "item": "better",
                "source": _w("S"),
                "text": _w("A"),
                "other": _w("B"),
                "gold": "right",
                "explanation": _w("E"),
            },
        ],
    }


def errors_of(data: dict) -> tuple[str, ...]:
    with pytest.raises(InstrumentError) as refused:
        instrument_from_data(data)
    return refused.value.errors


def test_every_kind_reads_and_round_trips():
    instrument = instrument_from_data(document())
    assert [p.key for p in instrument.practice] == [
        "p_likert", "p_pick", "p_many", "p_count", "p_why", "p_spans", "p_better",
    ]  # fmt: skip
    assert instrument.practice[2].gold == frozenset({"left", "right"})
    assert instrument.practice[5].gold["en"] == (ErrorSpan(14, 19, "wrong", "harm"),)
    assert instrument_from_json(instrument_to_json(instrument)) == instrument
    data = instrument_to_data(instrument)
    assert instrument_to_data(instrument_from_data(json.loads(json.dumps(data)))) == data


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["practice"][0].update(gold=7), "practice[0].gold: 7 is not a point of the scale"),
        (
            lambda d: d["practice"][1].update(gold="up"),
            "practice[1].gold: 'up' is not one of left, right, tie (item 'pick')",
        ),
        (
            lambda d: d["practice"][3].update(gold=-1),
            "practice[3].gold: a count cannot be negative (item 'howmany')",
        ),
        (
            lambda d: d["practice"][0].update(item="nope"),
            "practice[0].item: 'nope' is not an item of this instrument",
        ),
        (
            lambda d: d["practice"][0].pop("text"),
            "practice[0].text: missing: item 'likert' is asked about it",
        ),
        (
            lambda d: d["practice"][1].update(text=_w("t")),
            "practice[1].text: not used: item 'pick' applies to the source",
        ),
        (
            lambda d: d["practice"][6].pop("other"),
            "practice[6].other: missing: item 'better' is asked about it",
        ),
        (
            lambda d: d["practice"][0].update(min_overlap=0.5),
            "practice[0].min_overlap: not used by kind ordinal (its tolerance is within)",
        ),
        (lambda d: d["practice"][0].update(within=-1), "practice[0].within: must be at least 0"),
        (
            lambda d: d["practice"][2].update(min_overlap=1.5),
            "practice[2].min_overlap: 1.5 must be a share above 0 and at most 1",
        ),
        (
            lambda d: d["practice"][1].update(also_accept=["up"]),
            "practice[1].also_accept[0]: 'up' is not one of left, right, tie",
        ),
        (lambda d: d["practice"][4].pop("keywords"), "practice[4].keywords: missing"),
        (lambda d: d["practice"][0].pop("explanation"), "practice[0].explanation: missing"),
        (
            lambda d: d["practice"][0].update(explanation={"en": "only English"}),
            "practice[0].explanation.es: missing",
        ),
        (
            lambda d: d["practice"][1].update(key="p_likert"),
            "practice[1].key: duplicate practice key 'p_likert'",
        ),
        (
            lambda d: d["practice"][5]["gold"]["en"][0].update(end=40),
            "practice[5].gold.en: spans[0] ends at 40, after the text's 25 characters (item 'spans')",
        ),
        (lambda d: d["practice"][5]["gold"].pop("es"), "practice[5].gold.es: missing"),
    ],
)
def test_a_broken_practice_item_is_refused_on_its_field(change, expected):
    data = copy.deepcopy(document())
    change(data)
    assert any(error.startswith(expected) for error in errors_of(data)), errors_of(data)


def test_an_item_without_a_gold_answer_cannot_be_practised():
    data = document()
    data["items"].append(
        {
            "key": "liked",
            "kind": "single_choice",
            "applies_to": "source",
            "roles": ["layperson"],
            "wording": _w("Which did you like?"),
            "options_from": "texts",
        }
    )
    data["practice"].append(
        {"key": "p_liked", "item": "liked", "source": _w("S"), "gold": "a", "explanation": _w("E")}
    )
    assert "practice[7].item: 'liked' takes its options from a page's texts" in errors_of(data)[0]


def test_the_radiologist_preset_carries_a_practice_set_marked_as_radlays_wording():
    instrument = preset_load("protocol_003_radiologist")
    assert len(instrument.practice) >= 4
    for entry in instrument.practice:
        item = instrument.item(entry.item)
        assert "radlay" in entry.note
        # Every gold is an answer the item itself accepts.
        assert item_value_validate(item, entry.gold) == entry.gold
        assert entry.explanation["en"] and entry.explanation["es"]
    assert {instrument.item(e.item).key for e in instrument.practice} >= {"correctness", "hallucination"}


def _scored(key: str, answer, language: str = "en"):
    instrument = instrument_from_data(document())
    entry = next(p for p in instrument.practice if p.key == key)
    return practice_score(instrument.item(entry.item), entry, answer, language=language)


def test_ordinal_and_count_within_their_points():
    assert _scored("p_likert", 1).correct and _scored("p_likert", 2).correct
    assert not _scored("p_likert", 3).correct
    assert _scored("p_likert", 3).measure == 2.0
    assert _scored("p_count", 3).correct and not _scored("p_count", 4).correct


def test_choices_pairwise_and_free_text():
    assert _scored("p_pick", "left").correct and _scored("p_pick", "tie").correct
    assert not _scored("p_pick", "right").correct
    assert _scored("p_better", "right").correct and not _scored("p_better", "tie").correct
    # Jaccard: {left} against {left, right} is 1/2, the tolerance.
    assert _scored("p_many", frozenset({"left"})).correct
    assert not _scored("p_many", frozenset({"left", "tie"})).correct  # 1/3
    assert _scored("p_why", "Wrong SIDE").correct and not _scored("p_why", "fine").correct
    assert _scored("p_why", "el lado", language="es").correct


def test_spans_use_the_analysis_character_overlap():
    gold = ErrorSpan(14, 19, "wrong", "harm")
    # Half the word: character F1 against the gold, computed here by hand: 3 shared of 3 and 5.
    partial = ErrorSpan(14, 17, "wrong", "minor")
    f1 = 2 * (3 / 3) * (3 / 5) / (3 / 3 + 3 / 5)
    assert _scored("p_spans", (partial,)).measure == pytest.approx(f1)
    assert character_f1({"t": [Span(14, 17, "wrong")]}, {"t": [Span(gold.start, gold.end, gold.category)]})[
        "all"
    ]["f1"] == pytest.approx(f1)
    assert _scored("p_spans", (partial,)).correct  # 0.75 >= 0.5
    assert not _scored("p_spans", (ErrorSpan(14, 19, "jargon", "harm"),)).correct  # wrong category
    assert not _scored("p_spans", (ErrorSpan(0, 25, "wrong", "harm"),)).correct  # far too wide
    assert not _scored("p_spans", ()).correct
    assert _scored("p_spans", (ErrorSpan(23, 30, "wrong", "harm"),), language="es").correct


def test_a_pass_rule_that_cannot_be_met_is_refused_on_its_field():
    assert pass_rule_errors(PassRule(share_percent=80), items=5) == {}
    assert (
        "needs more correct answers than the round's 5 practice items"
        in pass_rule_errors(PassRule(share_percent=120), items=5)["share_percent"]
    )
    assert "no practice items" in pass_rule_errors(PassRule(share_percent=80), items=0)["share_percent"]
    assert set(pass_rule_errors(PassRule(share_percent=0, retries=-1, min_seconds=-5), items=3)) == {
        "share_percent",
        "retries",
        "min_seconds",
    }


def test_an_attempt_passes_with_the_share_and_not_too_fast():
    rule = PassRule(share_percent=80, retries=1, min_seconds=30)
    assert rule.needed(5) == 4 and rule.needed(4) == 4 and rule.needed(10) == 8
    assert attempt_outcome(rule, correct=4, total=5, seconds=60).passed
    assert not attempt_outcome(rule, correct=3, total=5, seconds=60).passed
    fast = attempt_outcome(rule, correct=5, total=5, seconds=10)
    assert not fast.passed and fast.too_fast
    assert rule.attempts == 2


def test_a_change_to_practice_items_alone_keeps_answers_comparable():
    from instruments.versioning import instrument_change, instrument_structure_fingerprint

    old = instrument_from_data(document())
    data = document()
    data["practice"][0]["gold"] = 2
    data["version"] = 2
    new = instrument_from_data(data)
    change = instrument_change(old, new)
    assert change.comparable and "practice" in change.texts
    assert instrument_structure_fingerprint(old) == instrument_structure_fingerprint(new)
