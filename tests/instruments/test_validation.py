"""Instrument documents are checked field by field: every error names its path, all are reported
at once, and a valid document reads back to an equal instrument through YAML and JSON."""

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from instruments.schema import AppliesTo, ItemKind, ProportionOf, TranslationStatus
from instruments.validation import (
    InstrumentError,
    instrument_from_data,
    instrument_from_json,
    instrument_from_yaml,
    instrument_read,
    instrument_to_data,
    instrument_to_json,
    instrument_to_yaml,
)


def small() -> dict:
    """A complete small instrument in two languages: one of each kind that a flow shows."""
    return {
        "key": "team_rubric",
        "version": 1,
        "title": {"en": "Team rubric", "es": "Rúbrica del equipo"},
        "citation": {
            "title": "Our study",
            "authors": "A. Team",
            "venue": "Preprint",
            "year": 2026,
            "section": "Methods",
        },
        "languages": ["en", "es"],
        "default_language": "en",
        "translation_status": {"en": "source", "es": "unvalidated translation"},
        "items": [
            {
                "key": "actionability",
                "kind": "ordinal",
                "applies_to": "simplification",
                "roles": ["radiologist", "nurse"],
                "wording": {"en": "It says what to do next.", "es": "Dice qué hacer a continuación."},
                "scale": {
                    "points": [
                        {"code": 1, "label": {"en": "No", "es": "No"}},
                        {"code": 2, "label": {"en": "Partly", "es": "En parte"}},
                        {"code": 3, "label": {"en": "Yes", "es": "Sí"}},
                    ],
                    "not_applicable": {"en": "Not applicable", "es": "No procede"},
                },
            },
            {
                "key": "best",
                "kind": "multiple_choice",
                "applies_to": "source",
                "roles": ["layperson"],
                "wording": {"en": "Best?", "es": "¿La mejor?"},
                "options_from": "texts",
                "exclusive_with": "worst",
            },
            {
                "key": "worst",
                "kind": "multiple_choice",
                "applies_to": "source",
                "roles": ["layperson"],
                "wording": {"en": "Worst?", "es": "¿La peor?"},
                "options_from": "texts",
                "exclusive_with": "best",
            },
            {
                "key": "tone",
                "kind": "single_choice",
                "applies_to": "simplification",
                "roles": ["layperson"],
                "wording": {"en": "Tone?", "es": "¿Tono?"},
                "options": [
                    {"key": "warm", "label": {"en": "Warm", "es": "Cálido"}},
                    {"key": "cold", "label": {"en": "Cold", "es": "Frío"}},
                ],
            },
            {
                "key": "omissions",
                "kind": "count",
                "applies_to": "pair",
                "roles": ["radiologist"],
                "wording": {"en": "Omissions?", "es": "¿Omisiones?"},
                "max_count": 20,
            },
            {
                "key": "why",
                "kind": "free_text",
                "applies_to": "source",
                "roles": ["layperson"],
                "required": False,
                "wording": {"en": "Why?", "es": "¿Por qué?"},
                "help": {"en": "A sentence is enough.", "es": "Basta una frase."},
                "max_length": 500,
            },
            {
                "key": "matching",
                "kind": "sentence_matching",
                "applies_to": "pair",
                "roles": ["annotator"],
                "wording": {"en": "Match the sentences.", "es": "Empareje las frases."},
            },
        ],
    }


def errors_of(data: object) -> tuple[str, ...]:
    with pytest.raises(InstrumentError) as caught:
        instrument_from_data(data)
    return caught.value.errors


def test_the_small_instrument_reads_with_every_part_in_place():
    instrument = instrument_from_data(small())
    assert instrument.translation_status == {
        "en": TranslationStatus.SOURCE,
        "es": TranslationStatus.UNVALIDATED,
    }
    actionability = instrument.item("actionability")
    assert actionability.kind is ItemKind.ORDINAL
    assert actionability.roles == ("radiologist", "nurse")
    assert actionability.scale is not None and actionability.scale.codes == (1, 2, 3)
    assert actionability.scale.not_applicable["es"] == "No procede"
    assert instrument.item("omissions").applies_to is AppliesTo.PAIR
    # Sentence matching defaults to seed 000's denominator, the generated sentences.
    assert instrument.item("matching").proportion_of is ProportionOf.GENERATED
    assert instrument.item("why").required is False


def test_yaml_and_json_round_trip_to_an_equal_instrument():
    instrument = instrument_from_data(small())
    assert instrument_from_yaml(instrument_to_yaml(instrument)) == instrument
    assert instrument_from_json(instrument_to_json(instrument)) == instrument
    # The written document is the input with its defaults made explicit only where needed.
    data = instrument_to_data(instrument)
    assert instrument_to_data(instrument_from_data(data)) == data
    assert data["items"][-1]["proportion_of"] == "generated"


def test_a_scale_code_that_is_not_an_integer_is_named_by_its_path():
    data = small()
    data["items"][0]["scale"]["points"][2]["code"] = "three"
    assert errors_of(data) == ("items[0].scale.points[2].code: must be an integer",)


def test_a_boolean_is_not_a_code():
    data = small()
    data["items"][0]["scale"]["points"][0]["code"] = True
    assert errors_of(data) == ("items[0].scale.points[0].code: must be an integer",)


def test_every_error_of_a_document_is_reported_at_once():
    data = small()
    data["items"][0]["scale"]["points"][1]["code"] = 1  # duplicate code
    data["items"][0]["scale"]["points"][2]["label"]["es"] = "No"  # duplicate label in Spanish
    del data["items"][3]["wording"]["es"]  # wording missing in an offered language
    data["items"][4]["max_count"] = -1
    data["items"][5]["kind"] = "essay"
    data["items"][6]["key"] = "best"  # duplicate item key
    data["version"] = 0
    errors = errors_of(data)
    assert set(errors) == {
        "version: must be at least 1",
        "items[0].scale.points[1].code: duplicate code 1",
        "items[0].scale.points[2].label.es: duplicate label 'No'",
        "items[3].wording.es: missing: every offered language needs this text",
        "items[4].max_count: must be at least 1",
        "items[5].kind: 'essay' is not one of: ordinal, single_choice, multiple_choice, count, "
        "free_text, sentence_matching, error_spans, pairwise",
        "items[6].key: duplicate item key 'best'",
    }
    assert len(errors) == 7
    # The exception's message lists them all, one per line.
    with pytest.raises(InstrumentError, match=r"(?s)version: must be at least 1.*items\[6\]\.key"):
        instrument_from_data(data)


def test_an_ordinal_scale_needs_two_points():
    data = small()
    data["items"][0]["scale"]["points"] = data["items"][0]["scale"]["points"][:1]
    assert errors_of(data) == ("items[0].scale.points: must have at least 2 entries",)


def test_wording_in_a_language_not_offered_and_a_missing_language_are_both_named():
    data = small()
    data["items"][1]["wording"] = {"en": "Best?", "de": "Beste?"}
    assert set(errors_of(data)) == {
        "items[1].wording.de: is not an offered language",
        "items[1].wording.es: missing: every offered language needs this text",
    }


def test_an_optional_text_given_in_one_language_must_be_given_in_all():
    data = small()
    data["items"][5]["help"] = {"en": "A sentence is enough."}
    assert errors_of(data) == ("items[5].help.es: missing: every offered language needs this text",)


def test_exclusive_with_must_point_at_another_multiple_choice_item_that_points_back():
    data = small()
    data["items"][1]["exclusive_with"] = "nothing"
    assert errors_of(data) == (
        "items[1].exclusive_with: 'nothing' is not another item of this instrument",
        "items[2].exclusive_with: 'best' must name 'worst' in its exclusive_with too",
    )
    data = small()
    data["items"][1]["exclusive_with"] = "tone"
    assert "items[1].exclusive_with: 'tone' is single_choice, not multiple_choice" in errors_of(data)
    data = small()
    del data["items"][2]["exclusive_with"]
    assert errors_of(data) == ("items[1].exclusive_with: 'worst' must name 'best' in its exclusive_with too",)
    data = small()
    data["items"][3]["exclusive_with"] = "best"
    assert errors_of(data) == ("items[3].exclusive_with: not used by kind single_choice",)


def test_fields_of_another_kind_and_unknown_fields_are_refused():
    data = small()
    data["items"][4]["max_length"] = 10
    data["items"][4]["colour"] = "red"
    assert set(errors_of(data)) == {
        "items[4].max_length: not used by kind count",
        "items[4].colour: unknown field (allowed: key, kind, applies_to, roles, wording, help, required, "
        "title, short_wording, number, phases, note, scale, options, options_from, exclusive_with, "
        "max_count, max_length, proportion_of, severities)",
    }


def test_languages_and_translation_status_rules():
    data = small()
    data["default_language"] = "fr"
    data["translation_status"] = {"en": "source", "es": "source"}
    assert set(errors_of(data)) == {
        "default_language: 'fr' is not one of the languages",
        "translation_status: exactly one language must be the source (found 2)",
    }
    data = small()
    data["translation_status"] = {"en": "source", "es": "machine"}
    assert errors_of(data) == (
        "translation_status.es: 'machine' is not one of: source, unvalidated translation, validated",
    )


def test_choice_options_need_two_distinct_keys_and_a_source():
    data = small()
    data["items"][3]["options"] = [{"key": "warm", "label": {"en": "Warm", "es": "Cálido"}}]
    assert errors_of(data) == ("items[3].options: must have at least 2 entries",)
    data = small()
    data["items"][3]["options"][1]["key"] = "warm"
    assert errors_of(data) == ("items[3].options[1].key: duplicate key 'warm'",)
    data = small()
    data["items"][1]["options_from"] = "systems"
    assert errors_of(data) == ("items[1].options_from: must be 'texts' (the texts shown)",)


def test_kind_specific_placement_rules():
    data = small()
    data["items"][6]["applies_to"] = "source"
    data["items"][5]["max_length"] = None
    assert set(errors_of(data)) == {
        "items[6].applies_to: sentence matching compares a generated text with its reference: pair",
        "items[5].max_length: must be an integer",
    }


def test_phases_of_items_must_be_declared():
    data = small()
    data["phases"] = [{"key": "original"}, {"key": "original"}]
    data["items"][0]["phases"] = ["assisted"]
    assert set(errors_of(data)) == {
        "phases[1].key: duplicate phase key 'original'",
        "items[0].phases[0]: 'assisted' is not a phase of the instrument",
    }


def test_error_spans_and_pairwise_have_a_validated_structure():
    data = small()
    data["items"].append(
        {
            "key": "errors",
            "kind": "error_spans",
            "applies_to": "simplification",
            "roles": ["radiologist"],
            "wording": {"en": "Mark errors.", "es": "Marque los errores."},
            "options": [{"key": "omission", "label": {"en": "Omission", "es": "Omisión"}}],
            "severities": [{"key": "minor", "label": {"en": "Minor", "es": "Leve"}}],
        }
    )
    data["items"].append(
        {
            "key": "better",
            "kind": "pairwise",
            "applies_to": "source",
            "roles": ["layperson"],
            "wording": {"en": "Which is better?", "es": "¿Cuál es mejor?"},
            "options": [{"key": "first", "label": {"en": "First", "es": "Primera"}}],
        }
    )
    assert set(errors_of(data)) == {
        "items[8].applies_to: a pairwise item compares two texts: simplification or pair",
        "items[8].options: must have at least 2 entries",
    }


def test_documents_that_are_not_mappings_or_miss_the_essentials():
    assert errors_of(["not", "a", "mapping"]) == ("must be a mapping",)
    assert set(errors_of({"key": "Bad Key"})) == {
        "version: missing",
        "title: missing",
        "citation: missing",
        "languages: missing",
        "default_language: missing",
        "items: missing",
        "key: 'Bad Key' must match ^[a-z][a-z0-9_]*$",
        "translation_status: missing: give each language's status "
        "(source, unvalidated translation, validated)",
    }


def test_yaml_booleans_as_field_names_and_bad_syntax_are_explained():
    # YAML 1.1 reads an unquoted `no` as false: the error says to quote it.
    text = yaml.safe_dump(small(), allow_unicode=True).replace(
        "title: Our study", "title: Our study\n  no: x"
    )
    with pytest.raises(InstrumentError) as caught:
        instrument_from_yaml(text)
    assert caught.value.errors == ("citation.False: field names must be strings (quote it)",)
    with pytest.raises(InstrumentError, match="not valid YAML"):
        instrument_from_yaml("key: [unclosed")
    with pytest.raises(InstrumentError, match="not valid JSON"):
        instrument_from_json("{")


def test_a_written_instrument_is_read_back_from_files_by_suffix(tmp_path):
    instrument = instrument_from_data(small())
    (tmp_path / "a.yaml").write_text(instrument_to_yaml(instrument), encoding="utf-8")
    (tmp_path / "a.json").write_text(instrument_to_json(instrument), encoding="utf-8")
    assert instrument_read(tmp_path / "a.yaml") == instrument
    assert instrument_read(tmp_path / "a.json") == instrument
    assert (
        json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))["title"]["es"] == "Rúbrica del equipo"
    )
    with pytest.raises(InstrumentError, match=r"\.yaml, \.yml or \.json"):
        instrument_read(tmp_path / "a.txt")


def test_an_instruments_texts_are_read_only():
    instrument = instrument_from_data(small())
    with pytest.raises(TypeError):
        instrument.title["en"] = "Changed behind the fingerprint"  # type: ignore[index]
    with pytest.raises(TypeError):
        instrument.items[0].wording["es"] = "Cambiado"  # type: ignore[index]


def test_the_input_document_is_not_modified():
    data = small()
    before = copy.deepcopy(data)
    instrument_from_data(data)
    assert data == before


def test_the_documented_example_is_a_valid_instrument():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "architecture" / "instruments.md").read_text(
        encoding="utf-8"
    )
    example = re.search(r"```yaml\n(.*?)```", doc, re.S)
    assert example is not None
    instrument = instrument_from_yaml(example.group(1))
    assert [item.kind.value for item in instrument.items] == [
        "ordinal",
        "multiple_choice",
        "multiple_choice",
        "count",
        "free_text",
        "sentence_matching",
    ]
    assert instrument.item("actionability").scale.points[2].label == {"en": "Yes", "es": "Sí"}


def test_fingerprints_of_a_fixed_document_never_change():
    """A study stores these hashes beside its answers: a change to the canonical form (a renamed
    field, a default now written out) would orphan every stored fingerprint. Change these values
    only together with a data migration that rewrites the stored ones."""
    from instruments.versioning import instrument_fingerprint, instrument_structure_fingerprint

    instrument = instrument_from_data(small())
    assert (
        instrument_fingerprint(instrument)
        == "684ba08bfda8efcc51feb7102e1252e70f650939325427d5249dce2c4b8d2cb4"
    )
    assert (
        instrument_structure_fingerprint(instrument)
        == "97d5be4c2c1fa26c285e3aea91f295a081397991404c235e3f45bc52ef16276d"
    )
