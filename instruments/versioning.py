"""Which version of an instrument answers were given under, and which edits a study may make once
answers exist. Django-free.

The rule (docs/architecture/instruments.md, "Versions"): before any answer, an instrument is edited
in place. Once answers exist every change, a typo fix included, is saved as a new version (a higher
`version`, the old one kept), so each answer names exactly the wording its participant saw. A new
version is *comparable* with the old when only texts changed (wording, help, titles, labels,
definitions, citation, languages offered and their translation status): its answers pool with the
old ones in the analysis. Any change to item keys, kinds, applies_to, roles, phases, required,
scale codes, option keys or the other kind-specific parts makes it not comparable: an analysis
keeps the two versions' answers apart."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from instruments.schema import Instrument
from instruments.validation import instrument_to_data

# The texts of an item: everything else of it is structure.
_ITEM_TEXTS = ("wording", "help", "title", "short_wording", "note")


def _digest(data: object) -> str:
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def instrument_fingerprint(instrument: Instrument) -> str:
    """SHA-256 of the whole instrument's canonical JSON: equal exactly when two instruments are
    equal, whatever file format or field order they were read from. A study records it with its
    answers."""
    return _digest(instrument_to_data(instrument))


def _item_structure(item: dict[str, Any]) -> dict[str, Any]:
    structure = {name: value for name, value in item.items() if name not in _ITEM_TEXTS}
    if "scale" in structure:
        structure["scale"] = [point["code"] for point in structure["scale"]["points"]] + [
            "not_applicable" in structure["scale"]
        ]
    if "options" in structure:
        structure["options"] = [option["key"] for option in structure["options"]]
    return structure


def instrument_structure(instrument: Instrument) -> dict[str, dict[str, Any]]:
    """Each item's structure by key: what an answer's meaning depends on, with every text removed."""
    items = instrument_to_data(instrument)["items"]
    return {item["key"]: _item_structure(item) for item in items}


def instrument_structure_fingerprint(instrument: Instrument) -> str:
    """Equal for two versions whose answers are comparable (only texts differ)."""
    return _digest(
        {
            "key": instrument.key,
            "phases": [p.key for p in instrument.phases],
            "items": instrument_structure(instrument),
        }
    )


@dataclass(frozen=True)
class InstrumentChange:
    """What differs between two versions: `structural` (answers not comparable) and `texts`."""

    structural: tuple[str, ...]
    texts: tuple[str, ...]

    @property
    def comparable(self) -> bool:
        return not self.structural

    @property
    def unchanged(self) -> bool:
        return not self.structural and not self.texts


def instrument_change(old: Instrument, new: Instrument) -> InstrumentChange:
    structural: list[str] = []
    if old.key != new.key:
        structural.append(f"key {old.key!r} → {new.key!r}")
    if [p.key for p in old.phases] != [p.key for p in new.phases]:
        structural.append("phases")
    before, after = instrument_structure(old), instrument_structure(new)
    structural += [f"item {key!r} removed" for key in before if key not in after]
    structural += [f"item {key!r} added" for key in after if key not in before]
    if [k for k in before if k in after] != [k for k in after if k in before]:
        structural.append("item order")
    for key in before.keys() & after.keys():
        for name in sorted(before[key].keys() | after[key].keys()):
            if before[key].get(name) != after[key].get(name):
                structural.append(f"item {key!r}: {name}")
    old_data, new_data = instrument_to_data(old), instrument_to_data(new)
    # Everything at the top but the key, the version and the structure is text (title, citation,
    # languages, translation status, description).
    texts = [
        name
        for name in sorted(old_data.keys() | new_data.keys())
        if name not in ("key", "version", "phases", "items") and old_data.get(name) != new_data.get(name)
    ]
    if [p.intro for p in old.phases] != [p.intro for p in new.phases]:
        texts.append("phase intros")
    old_items = {item["key"]: item for item in old_data["items"]}
    for item in new_data["items"]:
        previous = old_items.get(item["key"])
        if previous is None:
            continue
        texts += [
            f"item {item['key']!r}: {name}" for name in _ITEM_TEXTS if previous.get(name) != item.get(name)
        ]
        if _labels(previous) != _labels(item):
            texts.append(f"item {item['key']!r}: labels")
    return InstrumentChange(structural=tuple(sorted(structural)), texts=tuple(texts))


def _labels(item: dict[str, Any]) -> object:
    scale = item.get("scale", {})
    points = [(point["label"], point.get("definition")) for point in scale.get("points", [])]
    options = [option["label"] for option in item.get("options", [])]
    return (points, scale.get("not_applicable"), scale.get("note"), options)


def instrument_change_allowed(old: Instrument, new: Instrument, *, has_answers: bool) -> tuple[bool, str]:
    """May a study's instrument `old` be replaced by `new`? Returns (allowed, reason); the reason
    says, for an allowed new version, whether its answers stay comparable with the old ones."""
    change = instrument_change(old, new)
    if change.unchanged:
        return True, "unchanged"
    if old.key != new.key:
        return False, f"a different instrument ({old.key!r} → {new.key!r}), not a version of it"
    if not has_answers:
        return True, "no answers yet: the instrument may be edited in place"
    if new.version <= old.version:
        return False, (
            f"answers exist under version {old.version}: save the change as a new version "
            f"(version {old.version + 1} or later); changed: {', '.join(change.structural + change.texts)}"
        )
    if change.comparable:
        return True, (
            f"new version {new.version}: only texts changed ({', '.join(change.texts)}); "
            f"answers of version {old.version} stay comparable"
        )
    return True, (
        f"new version {new.version}: not comparable with version {old.version} "
        f"({', '.join(change.structural)}); the analysis keeps their answers apart"
    )
