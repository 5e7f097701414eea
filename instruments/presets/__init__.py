"""The instruments radlay ships, one YAML file each, named by the instrument's key. Django-free."""

from __future__ import annotations

from pathlib import Path

from instruments.schema import Instrument
from instruments.validation import InstrumentError, instrument_read

PRESETS_DIR = Path(__file__).resolve().parent


def preset_names() -> tuple[str, ...]:
    return tuple(sorted(path.stem for path in PRESETS_DIR.glob("*.yaml")))


def preset_path(name: str) -> Path:
    if name not in preset_names():
        raise KeyError(f"no preset {name!r} (presets: {', '.join(preset_names())})")
    return PRESETS_DIR / f"{name}.yaml"


def preset_load(name: str) -> Instrument:
    """A shipped instrument; its file name and key must agree (a renamed file is a bug, not a preset)."""
    instrument = instrument_read(preset_path(name))
    if instrument.key != name:
        raise InstrumentError([f"{name}.yaml: key {instrument.key!r} differs from the file name"])
    return instrument
