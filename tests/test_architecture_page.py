"""docs/architecture/index.md against the code: its tree names every app with its sub-packages and
every top-level directory, and nothing that does not exist; its table of which app imports which
holds exactly the imports the source makes (read with ast, at module level or inside a function).

Everything is read from the filesystem and the page: a new app, a moved package or a new import is
found without editing this test, and each failure names the page's line to change."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.work.test_structure import APPS, imported, modules

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "architecture" / "index.md"
PAGE_NAME = "docs/architecture/index.md"
# Django's conventional packages: every app may have them, and the tree leaves them out.
CONVENTIONAL = {"migrations", "management", "templatetags"}
# tests/ mirrors the apps package by package; the tree gives it one line.
MIRRORS = {"tests"}
# A tree line: an entry (a name at 0, 2, 4… spaces, then its description after two spaces) or a
# continuation of the description above (indented to the description column).
ENTRY = re.compile(r"^(?P<indent>(?:  )*)(?P<name>[\w.-]+/?)(?:\s{2,}(?P<about>\S.*))?$")
DEEPEST_ENTRY = 8  # spaces; a line indented further continues a description


def packages() -> list[str]:
    """The top-level packages (a directory with __init__.py), read from the filesystem."""
    return sorted(path.parent.name for path in REPO.glob("*/__init__.py"))


def apps() -> list[str]:
    return [name for name in packages() if name not in MIRRORS]


def sub_packages(package: Path) -> list[Path]:
    """Every package below `package` (recursively), the conventional ones and theirs left out."""
    found = []
    for init in sorted(package.rglob("__init__.py")):
        relative = init.parent.relative_to(package)
        if relative.parts and not CONVENTIONAL & set(relative.parts):
            found.append(init.parent)
    return found


def ignored_at_the_top() -> set[str]:
    """The top-level names .gitignore keeps out of the repository (`/site/`, `/var/`, …)."""
    names = set()
    for line in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("/") and not line.startswith("#"):
            names.add(line.strip("/"))
        elif line and "/" not in line.rstrip("/") and "*" not in line:
            names.add(line.rstrip("/"))
    return names


def page_lines() -> list[str]:
    return PAGE.read_text(encoding="utf-8").splitlines()


def code_block(after: str) -> tuple[int, list[str]]:
    """The first ``` block after the line containing `after`: (number of its first line, lines)."""
    lines = page_lines()
    start = next(number for number, line in enumerate(lines) if after in line)
    opening = next(number for number in range(start, len(lines)) if lines[number].startswith("```"))
    closing = next(number for number in range(opening + 1, len(lines)) if lines[number].startswith("```"))
    return opening + 2, lines[opening + 1 : closing]


# --- The tree -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    path: str  # "surveys/lay/", "manage.py"
    line: int


def tree_entries() -> list[Entry]:
    first, block = code_block("# Architecture")
    entries: list[Entry] = []
    parents: list[str] = []  # the path of the last entry at each depth
    for number, line in enumerate(block, start=first):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent > DEEPEST_ENTRY:
            assert entries, f"{PAGE_NAME} line {number}: a continuation line before any entry"
            continue
        found = ENTRY.match(line)
        assert found and len(found["indent"]) == indent, (
            f"{PAGE_NAME} line {number}: {line.strip()!r} is neither an entry (one name at 0, 2, 4… "
            f"spaces, then two spaces and its description) nor a continuation (indented past "
            f"{DEEPEST_ENTRY} spaces)"
        )
        depth = indent // 2
        assert depth <= len(parents), (
            f"{PAGE_NAME} line {number}: {found['name']!r} is indented {indent} spaces, deeper than "
            "one step below the entry above it"
        )
        name = found["name"]
        assert depth == 0 or name.endswith("/"), (
            f"{PAGE_NAME} line {number}: only directories are listed below an app ({name!r})"
        )
        path = (parents[depth - 1] if depth else "") + name
        parents[depth:] = [path]
        entries.append(Entry(path, number))
    return entries


def test_the_tree_lists_nothing_that_does_not_exist():
    entries = tree_entries()
    assert len(entries) > 10, "the tree was not found or not read"
    wrong = [
        f"{PAGE_NAME} line {entry.line}: `{entry.path}` is listed, but there is no "
        f"{'directory' if entry.path.endswith('/') else 'file'} {entry.path}"
        for entry in entries
        if not ((REPO / entry.path).is_dir() if entry.path.endswith("/") else (REPO / entry.path).is_file())
    ]
    repeated = [
        f"{PAGE_NAME} line {entry.line}: `{entry.path}` is listed twice"
        for index, entry in enumerate(entries)
        if entry.path in {earlier.path for earlier in entries[:index]}
    ]
    listed_packages = [
        f"{PAGE_NAME} line {entry.line}: `{entry.path}` is a conventional Django package ("
        f"{', '.join(sorted(CONVENTIONAL))}), which the tree leaves out"
        for entry in entries
        if CONVENTIONAL & set(entry.path.rstrip("/").split("/")[1:])
    ]
    assert not wrong + repeated + listed_packages, "\n".join(wrong + repeated + listed_packages)


def test_the_tree_lists_every_app_with_its_sub_packages():
    listed = {entry.path: entry.line for entry in tree_entries()}
    missing = []
    for app in apps():
        if f"{app}/" not in listed:
            missing.append(f"{app}/ is an app (a package at the top), but {PAGE_NAME}'s tree has no `{app}/`")
            continue
        for package in sub_packages(REPO / app):
            path = f"{package.relative_to(REPO).as_posix()}/"
            if path not in listed:
                parent = path.rstrip("/").rsplit("/", 1)[0] + "/"
                where = f"under `{parent}`" + (f" (line {listed[parent]})" if parent in listed else "")
                missing.append(
                    f"{path} is a package, but {PAGE_NAME}'s tree lists no "
                    f"`{package.name}/` {where}, indented two spaces more"
                )
    assert not missing, "\n".join(missing)


def test_the_tree_lists_every_top_level_directory():
    listed = {entry.path for entry in tree_entries()}
    skipped = ignored_at_the_top()
    directories = sorted(
        path.name
        for path in REPO.iterdir()
        if path.is_dir() and not path.name.startswith(".") and path.name not in skipped
    )
    assert "docs" in directories
    missing = [f"{name}/ is not in {PAGE_NAME}'s tree" for name in directories if f"{name}/" not in listed]
    assert not missing, "\n".join(missing)


def test_the_tree_reader_refuses_what_is_not_a_tree(tmp_path, monkeypatch):
    def read(block: str) -> list[Entry]:
        page = tmp_path / "index.md"
        page.write_text(f"# Architecture\n\n```\n{block}```\n", encoding="utf-8")
        monkeypatch.setattr(f"{__name__}.PAGE", page)
        return tree_entries()

    entries = read("work/      the job layer\n                 continued\n  sub/     below\nmanage.py\n")
    assert [(entry.path, entry.line) for entry in entries] == [
        ("work/", 4),
        ("work/sub/", 6),
        ("manage.py", 7),
    ]
    for bad in ("work/  x\n   odd/  three spaces\n", "work/  x\n    deep/  two steps down\n"):
        try:
            read(bad)
        except AssertionError as error:
            assert "line 5" in str(error)
        else:
            raise AssertionError(f"read {bad!r}")


# --- The table of which app imports which ---------------------------------------------------------


@dataclass(frozen=True)
class Row:
    app: str
    imports: frozenset[str]
    line: int


def table_rows() -> list[Row]:
    first, block = code_block("Which app imports which")
    rows: list[tuple[str, set[str], int]] = []
    for number, line in enumerate(block, start=first):
        left, arrow, right = line.partition("→")
        if arrow:
            rows.append((left.strip(), set(), number))
        elif not line.strip():
            continue
        else:
            assert rows, f"{PAGE_NAME} line {number}: a continuation before the first arrow"
            right = line
        targets = re.sub(r"\([^)]*\)", "", right)
        rows[-1][1].update(
            name.strip() for name in targets.split(",") if name.strip() and name.strip() != "nothing"
        )
    return [Row(app, frozenset(names), number) for app, names, number in rows]


def imports_between_apps() -> dict[str, dict[str, str]]:
    """{app: {app it imports: one "file: module" where it does}}, from every module of every app."""
    known = set(apps())
    found: dict[str, dict[str, str]] = {app: {} for app in known}
    for app in known:
        for path, tree in modules(app):
            for name in sorted(imported(tree)):
                there = name.split(".")[0]
                if there in known and there != app:
                    found[app].setdefault(there, f"{path.relative_to(REPO)}: {name}")
    return found


def test_the_table_has_one_row_per_app():
    rows = table_rows()
    names = [row.app for row in rows]
    problems = [
        f"{PAGE_NAME} line {row.line}: `{row.app}` is not an app (no package {row.app}/ at the top)"
        for row in rows
        if row.app not in apps()
    ]
    problems += [
        f"{PAGE_NAME} line {row.line}: a second row for `{row.app}`"
        for index, row in enumerate(rows)
        if row.app in names[:index]
    ]
    problems += [f"{PAGE_NAME}'s table has no row `{app} → …`" for app in apps() if app not in names]
    assert not problems, "\n".join(problems)


def test_the_table_holds_exactly_the_imports_the_code_makes():
    actual = imports_between_apps()
    problems = []
    for row in table_rows():
        if row.app not in actual:
            continue  # the test above names it
        for there in sorted(row.imports - set(actual[row.app])):
            problems.append(
                f"{PAGE_NAME} line {row.line}: `{row.app} → {there}`, but {row.app} imports nothing "
                f"of {there}" + ("" if there in actual else f" ({there} is not an app)")
            )
        for there, where in sorted(actual[row.app].items()):
            if there not in row.imports:
                problems.append(
                    f"{PAGE_NAME} line {row.line}: {row.app} imports {there} ({where}), but its row "
                    f"does not name `{there}`"
                )
    assert not problems, "\n".join(problems)


def test_the_structure_tests_cover_every_app():
    # tests/work/test_structure.py holds the arrows to its ALLOWED table over its APPS: an app
    # missing there would escape its circle and layering checks.
    missing = sorted(set(apps()) - set(APPS))
    assert not missing, f"add {missing} to APPS and ALLOWED in tests/work/test_structure.py"
