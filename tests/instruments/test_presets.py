"""The shipped presets load, pass validation, round-trip through YAML and JSON, cite their paper, and
have stable fingerprints; the package imports no Django."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from instruments.presets import PRESETS_DIR, preset_load, preset_names
from instruments.schema import AppliesTo, ItemKind, ProportionOf
from instruments.validation import (
    InstrumentError,
    instrument_from_data,
    instrument_from_json,
    instrument_from_yaml,
    instrument_to_data,
    instrument_to_json,
    instrument_to_yaml,
)
from instruments.versioning import instrument_fingerprint

REPO = Path(__file__).resolve().parents[2]
PRESETS = (
    "clinical_error_spans",
    "layman_rrg_000_expert",
    "layman_rrg_000_matching",
    "medlaybench_002",
    "pairwise_clinical",
    "protocol_003_layperson",
    "protocol_003_radiologist",
)


def test_the_shipped_presets_are_these():
    assert preset_names() == PRESETS


@pytest.mark.parametrize("name", PRESETS)
def test_a_preset_round_trips_through_yaml_and_json(name):
    instrument = preset_load(name)
    assert instrument_from_yaml(instrument_to_yaml(instrument)) == instrument
    assert instrument_from_json(instrument_to_json(instrument)) == instrument
    # The written form is a fixed point and carries the same fingerprint.
    data = instrument_to_data(instrument)
    again = instrument_from_data(json.loads(json.dumps(data)))
    assert instrument_to_data(again) == data
    assert instrument_fingerprint(again) == instrument_fingerprint(instrument)
    # The file as written by hand (anchors, flow style, comments) reads to the same document.
    by_hand = yaml.safe_load((PRESETS_DIR / f"{name}.yaml").read_text(encoding="utf-8"))
    assert instrument_from_data(by_hand) == instrument


@pytest.mark.parametrize("name", PRESETS)
def test_a_preset_cites_its_paper_and_section(name):
    citation = preset_load(name).citation
    assert citation.title and citation.authors and citation.section
    seed = {"protocol": "003", "medlaybench": "002", "layman": "000"}.get(name.split("_")[0])
    if seed is None:
        return  # radlay's own instrument (pairwise_clinical): its citation names no seed paper
    seed_text = next((REPO.parent / "shared" / "seeds").glob(f"{seed}_*.txt"), None)
    if seed_text is None:
        pytest.skip("the seed papers are not available in ../shared/seeds")
    # The title is the paper's own (the seed's text wraps nothing in a title line).
    assert citation.title in seed_text.read_text(encoding="utf-8")


def test_pairwise_clinical_asks_the_arena_outcomes_with_an_optional_reason():
    from measures.stats.pairwise import OUTCOMES

    instrument = preset_load("pairwise_clinical")
    preference, reason = instrument.item("preference"), instrument.item("reason")
    assert preference.kind is ItemKind.PAIRWISE and preference.applies_to is AppliesTo.PAIR
    # The option keys are the outcomes the ranking reads, in the order the page shows them.
    assert tuple(option.key for option in preference.options) == OUTCOMES
    assert preference.required
    assert reason.kind is ItemKind.FREE_TEXT and not reason.required and reason.max_length
    assert set(preference.roles) == set(reason.roles) == {"radiologist", "layperson"}


def test_medlaybench_has_the_papers_four_criteria_for_both_rater_groups_on_pairs():
    instrument = preset_load("medlaybench_002")
    assert [item.title["en"] for item in instrument.items] == [
        "Factual Correctness",
        "Completeness",
        "Simplicity",
        "Fluency",
    ]
    for item in instrument.items:
        assert item.kind is ItemKind.ORDINAL and item.applies_to is AppliesTo.PAIR
        assert item.roles == ("radiologist", "layperson")
        assert item.scale is not None and item.scale.codes == (1, 2, 3, 4, 5)
        # The paper gives no statement or point wording: both are marked as radlay's.
        assert "radlay" in item.note and "radlay" in item.scale.note


def test_layman_rrg_expert_counts_two_error_types_and_rates_quality_on_five_points():
    instrument = preset_load("layman_rrg_000_expert")
    kinds = {item.key: item.kind for item in instrument.items}
    assert kinds == {
        "information_loss": ItemKind.COUNT,
        "misinterpretation": ItemKind.COUNT,
        "overall_quality": ItemKind.ORDINAL,
    }
    quality = instrument.item("overall_quality").scale
    assert quality is not None and quality.codes == (1, 2, 3, 4, 5) and "radlay" in quality.note


def test_layman_rrg_matching_uses_the_papers_protocol_sentence(tmp_path):
    item = preset_load("layman_rrg_000_matching").item("sentence_match")
    assert item.kind is ItemKind.SENTENCE_MATCHING and item.applies_to is AppliesTo.PAIR
    assert item.proportion_of is ProportionOf.GENERATED
    assert item.wording["en"] == (
        "Given the generated text and the reference, calculate the proportion of sentences in the "
        "generated text that semantically match each sentence in the reference."
    )


def test_fingerprints_are_stable_distinct_and_change_with_any_edit():
    prints = {name: instrument_fingerprint(preset_load(name)) for name in PRESETS}
    assert len(set(prints.values())) == len(PRESETS)
    assert all(len(value) == 64 for value in prints.values())
    # Independent of key order in the document.
    data = instrument_to_data(preset_load("medlaybench_002"))
    shuffled = {key: data[key] for key in reversed(list(data))}
    assert instrument_fingerprint(instrument_from_data(shuffled)) == prints["medlaybench_002"]
    data["items"][0]["wording"]["en"] += " "
    assert instrument_fingerprint(instrument_from_data(data)) != prints["medlaybench_002"]


def test_fingerprint_matches_a_hash_computed_here():
    import hashlib

    instrument = preset_load("layman_rrg_000_matching")
    canonical = json.dumps(
        instrument_to_data(instrument), sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    assert instrument_fingerprint(instrument) == hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def test_an_unknown_preset_and_a_renamed_file_are_errors(tmp_path, monkeypatch):
    with pytest.raises(KeyError, match="no preset 'nope'"):
        preset_load("nope")
    from instruments import presets

    text = (PRESETS_DIR / "medlaybench_002.yaml").read_text(encoding="utf-8")
    (tmp_path / "renamed.yaml").write_text(text, encoding="utf-8")
    monkeypatch.setattr(presets, "PRESETS_DIR", tmp_path)
    with pytest.raises(InstrumentError, match="key 'medlaybench_002' differs from the file name"):
        preset_load("renamed")


def test_the_package_imports_no_django():
    code = (
        "import sys, json\n"
        "import instruments.schema, instruments.validation, instruments.versioning, instruments.answers\n"
        "from instruments.presets import preset_load, preset_names\n"
        "[preset_load(name) for name in preset_names()]\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('django', 'rest_framework', 'annotation', 'evaluation', 'config'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(done.stdout) == []
