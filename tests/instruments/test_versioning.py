"""Which edits a study may make to its instrument: in place before answers, only as a new version
after, and whether that version's answers stay comparable with the old."""

from instruments.presets import preset_load
from instruments.validation import instrument_from_data, instrument_to_data
from instruments.versioning import (
    instrument_change,
    instrument_change_allowed,
    instrument_structure_fingerprint,
)


def edited(name: str, edit) -> tuple:
    old = preset_load(name)
    data = instrument_to_data(old)
    edit(data)
    return old, instrument_from_data(data)


def bump(data: dict) -> None:
    data["version"] += 1


def test_an_unchanged_instrument_is_always_allowed():
    old = preset_load("protocol_003_layperson")
    assert instrument_change_allowed(old, old, has_answers=True) == (True, "unchanged")


def test_before_answers_any_edit_is_made_in_place():
    def retype(data):
        data["items"][0]["scale"]["points"][0]["code"] = 0

    old, new = edited("protocol_003_layperson", retype)
    assert instrument_change_allowed(old, new, has_answers=False) == (
        True,
        "no answers yet: the instrument may be edited in place",
    )


def test_after_answers_a_typo_fix_needs_a_new_version_and_stays_comparable():
    def typo(data):
        data["items"][0]["wording"]["es"] = "Usted comprende el significado de la frase."

    old, same_version = edited("protocol_003_layperson", typo)
    allowed, reason = instrument_change_allowed(old, same_version, has_answers=True)
    assert not allowed
    assert "save the change as a new version (version 2 or later)" in reason
    assert "'understanding': wording" in reason

    old, new = edited("protocol_003_layperson", lambda d: (typo(d), bump(d)))
    change = instrument_change(old, new)
    assert change.comparable and change.texts == ("item 'understanding': wording",)
    assert instrument_structure_fingerprint(old) == instrument_structure_fingerprint(new)
    allowed, reason = instrument_change_allowed(old, new, has_answers=True)
    assert allowed and "answers of version 1 stay comparable" in reason


def test_after_answers_a_changed_code_kind_key_or_placement_is_a_new_version_not_comparable():
    def recode(data):
        data["items"][4]["scale"]["points"][0]["code"] = -2  # helpfulness −1 → −2
        data["items"][3]["applies_to"] = "simplification"  # severity_guess
        data["items"][0]["key"] = "understood"
        bump(data)

    old, new = edited("protocol_003_layperson", recode)
    change = instrument_change(old, new)
    assert not change.comparable
    assert change.structural == (
        "item 'helpfulness': scale",
        "item 'severity_guess': applies_to",
        "item 'understanding' removed",
        "item 'understood' added",
    )
    assert instrument_structure_fingerprint(old) != instrument_structure_fingerprint(new)
    allowed, reason = instrument_change_allowed(old, new, has_answers=True)
    assert allowed and "not comparable with version 1" in reason


def test_relabelling_a_point_is_a_text_change_and_adding_a_language_too():
    def relabel(data):
        data["items"][0]["scale"]["points"][0]["label"]["en"] = "Not at all."
        bump(data)

    old, new = edited("medlaybench_002", relabel)
    assert instrument_change(old, new).texts == ("item 'factual_correctness': labels",)
    assert instrument_change(old, new).comparable

    def add_german(data):
        data["languages"].append("de")
        data["translation_status"]["de"] = "unvalidated translation"
        for text in (data["title"], data["description"]):
            text["de"] = text["en"] + " (de)"
        for item in data["items"]:
            for name in ("title", "wording"):
                item[name]["de"] = item[name]["en"] + " (de)"
            for point in item["scale"]["points"]:
                point["label"]["de"] = point["label"]["en"] + " (de)"
        bump(data)

    old, new = edited("medlaybench_002", add_german)
    change = instrument_change(old, new)
    assert change.comparable
    assert change.texts[:4] == ("description", "languages", "title", "translation_status")


def test_another_instrument_is_not_a_version_and_a_lower_version_is_refused():
    def rename(data):
        data["key"] = "other"

    old, new = edited("medlaybench_002", rename)
    assert instrument_change_allowed(old, new, has_answers=False)[0] is False

    def lower_with_edit(data):
        data["items"][0]["required"] = False

    old, new = edited("medlaybench_002", lower_with_edit)
    allowed, reason = instrument_change_allowed(old, new, has_answers=True)
    assert not allowed and "item 'factual_correctness': required" in reason
