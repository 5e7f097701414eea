"""The README stays a README, and the configuration reference keeps up with the settings."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# env.str("NAME", ...), env.bool(\n "NAME", ...), env("NAME"), env_spec(specs.X, "NAME"),
# env_renamed(env, "int", "NAME", ...) in the settings modules
ENV_READ = re.compile(
    r"(?:\benv(?:\.\w+)?\(|env_spec\(specs\.\w+,|env_renamed\(env, \"\w+\",)\s*\"([A-Z][A-Z0-9_]+)\""
)


def test_every_setting_from_the_environment_is_in_the_configuration_reference():
    names = set()
    for module in (ROOT / "config" / "settings").glob("*.py"):
        names |= set(ENV_READ.findall(module.read_text(encoding="utf-8")))
    assert len(names) > 40  # the pattern finds the settings (a broken pattern would pass vacuously)
    reference = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    missing = sorted(name for name in names if f"`{name}`" not in reference)
    assert not missing, f"docs/configuration.md does not document {missing}"


def test_the_readme_is_short_and_gives_the_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    assert "make demo" in readme and "make test" in readme
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    # CI runs the README's test command.
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_readme_links_only_to_files_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if "://" not in t]
    assert local, "the README links into docs/"
    assert [t for t in local if not (ROOT / t).exists()] == []
