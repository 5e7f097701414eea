"""radlay's settings in one home: at most 30 RADLAY_* settings, each with one default (the scalar
ones in config/settings/base.py, the structured ones' keys in config/settings/specs.py), read as
`settings.RADLAY_X` with no default repeated anywhere, and the configuration reference checked
against the settings module both ways."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from config.settings import specs
from config.settings.renamed import RENAMED

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
SETTINGS_DIR = ROOT / "config" / "settings"
# A RADLAY_* environment variable read by a settings module: env.<cast>("NAME", ...),
# env_spec(specs.X, "NAME"), env_renamed(env, "cast", "NAME", ...).
ENV_READ = re.compile(
    r"(?:\benv(?:\.\w+)?\(|env_spec\(specs\.\w+,|env_renamed\(env, \"\w+\",)\s*\"(RADLAY_\w+)\""
)

# Each RADLAY_* setting of config.settings.base with no RADLAY_* variable set, as the reference
# writes it: a structured one as its class and {key: value}, a path relative to the repository,
# empty for "", None and {}.
DUMP = """
import dataclasses, json, os
import config.settings.base as s
from config.settings.specs import value_text

def shown(value):
    if dataclasses.is_dataclass(value):
        return {"spec": type(value).__name__,
                "keys": {f.name: shown(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, os.PathLike):
        return os.path.relpath(value, s.BASE_DIR)
    if value in ("", None, {}):
        return "empty"
    return value_text(value)

print(json.dumps({name: shown(getattr(s, name)) for name in dir(s) if name.startswith("RADLAY_")}))
"""


@pytest.fixture(scope="module")
def defaults() -> dict:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RADLAY_", "DJANGO_", "REDIS_URL", "DATABASE_URL"))
    }
    done = subprocess.run(
        [sys.executable, "-c", DUMP], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def variables_read() -> set[str]:
    names: set[str] = set()
    for module in SETTINGS_DIR.glob("*.py"):
        names |= set(ENV_READ.findall(module.read_text(encoding="utf-8")))
    return {name for name in names if not name.startswith("RADLAY_TEST_")}


def reference_default(name: str, key: str | None = None) -> str | None:
    """The default column of the reference's row for `name` (or for `key` of its section)."""
    text = REFERENCE
    if key is not None:
        section = re.search(rf"^#### `{name}`\n(.*?)(?=^#|\Z)", REFERENCE, re.M | re.S)
        if section is None:
            return None
        text, name = section.group(1), key
    row = re.search(rf"^\| `{name}` \| ([^|]+) \|", text, re.M)
    return row.group(1).strip() if row else None


def written(value: str) -> str:
    return value if value == "empty" else f"`{value}`"


def test_there_are_at_most_30_radlay_settings_and_every_variable_is_one(defaults):
    assert 20 < len(defaults) <= 30, sorted(defaults)
    # Every RADLAY_* variable a settings module reads is the setting of the same name.
    assert variables_read() <= set(defaults), sorted(variables_read() - set(defaults))


def test_every_setting_is_in_the_reference_with_its_default(defaults):
    for name, value in defaults.items():
        if isinstance(value, dict):
            assert f"#### `{name}`" in REFERENCE, name
            documented = re.search(rf"^#### `{name}`\n(.*?)(?=^#|\Z)", REFERENCE, re.M | re.S).group(1)
            keys = re.findall(r"^\| `(\w+)` \|", documented, re.M)
            assert keys == list(value["keys"]), (name, keys)  # every key, in the class's order
            for key, default in value["keys"].items():
                assert reference_default(name, key) == written(default), (name, key, default)
        else:
            assert reference_default(name) == written(value), (name, value)


def test_everything_the_reference_names_as_a_setting_exists(defaults):
    rows = set(re.findall(r"^\| `(RADLAY_\w+)` \| (?!`RADLAY_)", REFERENCE, re.M))
    sections = set(re.findall(r"^#### `(RADLAY_\w+)`", REFERENCE, re.M))
    test_only = {name for name in rows if name.startswith(("RADLAY_TEST_", "RADLAY_FLOOR_"))}
    assert rows - test_only | sections <= set(defaults), sorted(rows - test_only | sections - set(defaults))
    # RADLAY_X.key anywhere in the docs names a key that exists.
    documented_keys = set()
    for page in (ROOT / "docs").rglob("*.md"):
        documented_keys |= set(
            re.findall(r"\b(RADLAY_[A-Z]{2}[A-Z_]*)\.([a-z_]+)", page.read_text(encoding="utf-8"))
        )
    for name, key in documented_keys:
        assert key in defaults[name]["keys"], (name, key)


def test_the_renamed_table_is_the_reference_s():
    table = re.search(r"^## Renamed\n(.*?)(?=^#|\Z)", REFERENCE, re.M | re.S).group(1)
    rows = re.findall(r"^\| `(RADLAY_\w+)` \| `(RADLAY_\w+)(?:\.(\w+))?` \|$", table, re.M)
    assert [(old, new, key or None) for old, new, key in rows] == [
        (old, new, key) for old, (new, key) in RENAMED.items()
    ]
    for old, (new, key) in RENAMED.items():
        if key is not None:
            spec = next(cls for cls in specs.SPECS if f'env_spec(specs.{cls.__name__}, "{new}")' in BASE)
            assert key in {field.name for field in dataclasses.fields(spec)}, (old, new, key)
        assert old not in variables_read(), old  # only renamed.py reads an old name


BASE = (SETTINGS_DIR / "base.py").read_text(encoding="utf-8")
CODE = [
    path
    for path in ROOT.rglob("*.py")
    if not any(part in {".venv", "node_modules", "migrations"} for part in path.relative_to(ROOT).parts)
]
READ = re.compile(r"\bsettings\.(RADLAY_[A-Z]{2}[A-Z_]*)(?:\.([a-z_]+))?")


def test_no_setting_is_read_with_a_default_of_its_own():
    # The pattern is assembled so that this file does not match it.
    pattern = re.compile(r"getattr\(\s*(?:django_)?settings\s*,\s*[\"']" + "RADLAY_")
    offenders = [str(p.relative_to(ROOT)) for p in CODE if pattern.search(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_the_code_reads_only_settings_and_keys_that_exist(defaults):
    read = set()
    for path in CODE:
        read |= {
            (name, key, str(path.relative_to(ROOT))) for name, key in READ.findall(path.read_text("utf-8"))
        }
    assert len(read) > 50  # the pattern finds the reads (a broken one would pass vacuously)
    for name, key, where in read:
        assert name in defaults, (name, where)
        if key and isinstance(defaults[name], dict):
            assert key in defaults[name]["keys"], (name, key, where)
